# SPDX-License-Identifier: Apache-2.0
"""Turns bench/peers.sh's results into its markdown table: OUT/summary.md.

Reads OUT/results.jsonl (one line per peer run, decode-limit run or failure) and
OUT/stoker-*.json (`stoker bench --json` documents). Per dataset: every tool, path, output
type and core count with its median images/s over the repeats, its share of the T-core
decode-only limit (crop-window decode, one core, x T) and how many times faster Stoker is
with the same cores and output type; then the issue's targets, the environment, and every
peer that failed with its error. Does not run anything.
"""
import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
from collections import defaultdict

ORDER = ["256px", "512px", "1024px", "real"]


def load(out):
    rows, fails, stoker_ctx = [], [], None
    path = os.path.join(out, "results.jsonl")
    if os.path.exists(path):
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                (fails if "error" in r else rows).append(r)
    for f in sorted(glob.glob(os.path.join(out, "stoker-*.json"))):
        doc = json.load(open(f))
        stoker_ctx = doc["context"]
        label = os.path.basename(f)[len("stoker-"):].rsplit("-", 2)[0]
        for res in doc["results"]:
            reader = res["reader"]
            rows.append({
                "tool": "stoker", "variant": reader, "dataset": label,
                "dtype": stoker_ctx["dtype"],
                "threads": 1 if reader == "serial" else int(reader.split(":")[-1]),
                # Steady state, as the peers are timed; a document without it (an older
                # stoker) gives the whole run's rate, start-up included.
                "images_per_s": res.get("steady", {}).get("images_per_s", res["images_per_s"]),
                "images_per_s_total": res["images_per_s"], "dataset_images": res["dataset_images"],
                "dataset_bytes": res["dataset_bytes"]})
    return rows, fails, stoker_ctx


def cores_of(r):
    return r.get("threads", 1)


def fmt(x, nd=0):
    return f"{x:,.{nd}f}"


def environment(rows, ctx, venv):
    env = []
    if ctx:
        env.append(f"- machine: {ctx['cpu']}, {ctx['online_cpus']} online CPUs, kernel {ctx['kernel']}")
        libs = ", ".join(f"{k} {v}" for k, v in sorted(ctx.get("libraries", {}).items()))
        env.append(f"- Stoker {ctx['version']} (`stoker bench`, {ctx['date']}): {libs}")
    else:
        env.append(f"- machine: {platform.processor() or platform.machine()}, "
                   f"{os.cpu_count()} CPUs, kernel {platform.release()}")
    versions = {}
    for r in rows:
        versions.update(r.get("versions", {}))
        if r["tool"] == "decode-limit":
            n = r["libjpeg_turbo"]
            versions["libjpeg-turbo (decode limit)"] = f"{n // 1000000}.{n // 1000 % 1000}.{n % 1000}"
    pys = sorted({r["python"] for r in rows if "python" in r})
    if not pys:
        return env  # no peer ran: no peer versions to give
    if venv:
        try:
            freeze = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "freeze"],
                                    capture_output=True, text=True, timeout=60).stdout
            for line in freeze.splitlines():
                name, _, ver = line.partition("==")
                if name.lower() in ("numba", "numpy", "opencv-python", "nvidia-nvimgcodec-cu13"):
                    versions[name.lower()] = ver
        except OSError:
            pass
    env.append("- peers (PyPI, Python " + ", ".join(pys) + "): " +
               ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, required=True, help="the T of the run")
    ap.add_argument("--venv", help="the peers' venv, for its package versions")
    a = ap.parse_args()
    rows, fails, ctx = load(a.out)
    if not rows and not fails:
        sys.exit(f"summarize_peers.py: no results in {a.out}")
    T = a.threads

    # (dataset, tool, variant, dtype, cores) -> [img/s per repeat]
    cells = defaultdict(list)
    limit = defaultdict(list)  # (dataset, crop|full) -> [img/s per core]
    info = {}
    for r in rows:
        if r["tool"] == "decode-limit":
            limit[(r["dataset"], r["variant"])].append(r["images_per_s_core"])
            continue
        cells[(r["dataset"], r["tool"], r["variant"], r["dtype"], cores_of(r))].append(
            r["images_per_s"])
        if "dataset_images" in r:
            info[r["dataset"]] = (r["dataset_images"], r["dataset_bytes"])
    med = {k: statistics.median(v) for k, v in cells.items()}
    datasets = sorted({k[0] for k in med} | {k[0] for k in limit},
                      key=lambda d: (ORDER.index(d) if d in ORDER else 99, d))
    counts = sorted({len(v) for v in cells.values()}) or [0]
    repeats = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"

    md = [f"Images/s: median of {repeats} repeat(s); batch 64, RandomResizedCrop(224) + flip, "
          f"NCHW; T = {T} cores. *limit share* = img/s / (T x the one-core crop-window decode "
          f"rate); *Stoker / this* = Stoker's img/s with the same cores and output over this "
          f"row's.", ""]
    targets = []
    for d in datasets:
        head = f"### {d}"
        if d in info:
            n, b = info[d]
            head += f": {n} images, {b / 1e6:.0f} MB ({b / n / 1e3:.0f} KB/image)"
        md += [head, ""]
        lim1 = statistics.median(limit[(d, "crop")]) if limit[(d, "crop")] else None
        full1 = statistics.median(limit[(d, "full")]) if limit[(d, "full")] else None
        if lim1:
            md.append(f"Decode-only limit: crop window {fmt(lim1)} img/s on one core, "
                      f"x{T} = **{fmt(lim1 * T)} img/s**" +
                      (f"; whole-image decode {fmt(full1)} img/s on one core (reference)"
                       if full1 else "") + ".")
            md.append("")
        md += ["| tool | path | output | cores | img/s | limit share | Stoker / this |",
               "|---|---|---|---:|---:|---:|---:|"]
        keys = sorted((k for k in med if k[0] == d),
                      key=lambda k: (k[1] != "stoker", k[1], k[3], k[4], k[2]))
        for k in keys:
            _, tool, variant, dtype, cores = k
            v = med[k]
            share = f"{100 * v / (lim1 * T):.0f}%" if lim1 else "-"
            st = med.get((d, "stoker", "serial" if cores == 1 else f"threads:{cores}", dtype, cores))
            ratio = "-" if tool == "stoker" or not st else f"{st / v:.2f}x"
            md.append(f"| {tool} | {variant} | {dtype} | {cores} | {fmt(v)} | {share} | {ratio} |")
        md.append("")
        # The targets, with T cores.
        for dtype, want in (("f32", 0.75), ("u8", 0.85)):
            st = med.get((d, "stoker", f"threads:{T}", dtype, T))
            if st is None:
                continue
            line = f"- {d} {dtype}: Stoker threads:{T} {fmt(st)} img/s"
            if lim1:
                share = st / (lim1 * T)
                line += (f", {100 * share:.0f}% of the limit (target {100 * want:.0f}%: "
                         f"{'met' if share >= want else 'not met'})")
            peers = [(v, k) for k, v in med.items()
                     if k[0] == d and k[1] != "stoker" and k[3] == dtype and k[4] == T]
            if peers:
                v, k = max(peers)
                line += (f", {st / v:.2f}x the fastest peer ({k[1]} {k[2]}, {fmt(v)} img/s; "
                         f"target 1.2x: {'met' if st >= 1.2 * v else 'not met'})")
            targets.append(line)

    md += ["### Targets (issue 10)", ""] + (targets or ["- no Stoker rows"]) + [""]
    md += ["### Environment", ""] + environment(rows, ctx, a.venv) + [""]
    if fails:
        md += ["### Peers that failed", ""]
        seen = set()
        for f in fails:
            key = (f["tool"], f["stage"], f["error"])
            where = [x["dataset"] for x in fails if (x["tool"], x["stage"], x["error"]) == key]
            if key in seen:
                continue
            seen.add(key)
            md += [f"- {f['tool']} {f['variant']} ({f['stage']}; {', '.join(sorted(set(where)))}):",
                   "", "```", f["error"], "```", ""]
    text = "\n".join(md)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
