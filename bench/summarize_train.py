#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise bench/train_vs_pytorch.sh: training images/s per config, median over repeats.

Reads OUT_DIR/<config>-b<B>-r<rep>.json (stoker-f32, stoker-bf16, stoker-before-*,
torch-{contig,cl}-{glibc,jemalloc}, torch-bf16-*); prints `#` context lines and one
fixed-column table (ratio to the best PyTorch config of the same precision at the same batch,
ratio of stoker to stoker-before, share of the CPU's fp32 peak), then the stoker f32 and bf16
loss curves side by side when both exist. Writes OUT_DIR/summary.txt and OUT_DIR/summary.json.
Standard library only: any python3 can run it, on the machine that ran the benchmark (the
peak is computed from this machine's CPU unless --ghz is given).
"""
import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys

FILE_RE = re.compile(r"^((?:stoker|torch)-[a-z0-9-]+?)-b(\d+)-r(\d+)\.json$")
ORDER = ["stoker-f32", "stoker-f32-direct", "stoker-bf16", "stoker-before-f32",
         "stoker-before-f32-direct", "stoker-before-bf16", "torch-contig-glibc", "torch-cl-glibc",
         "torch-contig-jemalloc", "torch-cl-jemalloc", "torch-bf16-contig-glibc",
         "torch-bf16-cl-glibc", "torch-bf16-contig-jemalloc", "torch-bf16-cl-jemalloc"]
# MACs of one forward pass (as `stoker model` and torchvision's FLOP counters count them:
# convolutions and the classifier). Training one image is ~3 passes (forward, backward-data,
# backward-weights), 2 FLOP per MAC.
FORWARD_MACS = {("resnet50", 224): 4_089_184_256}


def lscpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True,
                             env={**os.environ, "LC_ALL": "C"}).stdout
    except OSError:
        return {}
    return dict((k.strip(), v.strip()) for k, _, v in
                (line.partition(":") for line in out.splitlines()) if v)


def physical_cores():
    """Cores, not hardware threads: a second hyper-thread adds no FMA unit."""
    try:
        out = subprocess.run(["lscpu", "-p=core,socket"], capture_output=True, text=True).stdout
        n = len({line for line in out.splitlines() if line and not line.startswith("#")})
        if n:
            return n
    except OSError:
        pass
    return os.cpu_count() or 1


def cpu_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_ghz(info, override):
    """-> (GHz, where it came from). The nominal clock in the model name is what Intel
    states; /proc/cpuinfo's MHz is a snapshot, so it is only the fallback."""
    if override:
        return override, "--ghz"
    m = re.search(r"@\s*([\d.]+)\s*GHz", info.get("Model name", ""))
    if m:
        return float(m.group(1)), "lscpu model name"
    try:
        mhz = [float(line.split(":", 1)[1]) for line in open("/proc/cpuinfo")
               if line.startswith("cpu MHz")]
        if mhz:
            return max(mhz) / 1e3, "max cpu MHz in /proc/cpuinfo"
    except (OSError, ValueError):
        pass
    return None, "unknown (pass --ghz)"


def load_runs(out):
    """-> runs[(config, batch)] = {rep: doc}."""
    runs = {}
    for name in sorted(os.listdir(out)):
        m = FILE_RE.match(name)
        if not m:
            continue
        try:
            with open(os.path.join(out, name)) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"summarize_train.py: cannot read {name}: {e}")
        # stoker train writes {context, results: [one run]}; torch_train_bench.py one object.
        if isinstance(doc, dict) and "context" in doc and "results" in doc:
            doc = {**doc["context"], **doc["results"][0]}
        if not isinstance(doc.get("images_per_s"), (int, float)):
            print(f"summarize_train.py: {name} has no images_per_s; left out", file=sys.stderr)
            continue
        runs.setdefault((m.group(1), int(m.group(2))), {})[int(m.group(3))] = doc
    return runs


def values(runs, key):
    """The distinct values of `key` across all runs that have it, sorted."""
    return sorted({d[key] for reps in runs.values() for d in reps.values()
                   if isinstance(d.get(key), (str, int, float))}, key=str)


def one_value(runs, key):
    """The single value of `key` across all runs that have it, else None (absent or mixed)."""
    vals = values(runs, key)
    return vals[0] if len(vals) == 1 else None


def precision(config):
    """bf16 configs are compared with bf16 ones (PyTorch's autocast), the rest with f32."""
    return "bf16" if "-bf16" in config else "f32"


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the --out of train_vs_pytorch.sh")
    ap.add_argument("--arch", help="model name (default: from the JSONs)")
    ap.add_argument("--size", type=int, help="input size (default: from the JSONs)")
    ap.add_argument("--ghz", type=float, help="core clock for the peak (default: lscpu)")
    ap.add_argument("--flop-per-image", type=float,
                    help="FLOP to train one image (default: known for resnet50 at 224)")
    ap.add_argument("--flop-per-cycle", type=float,
                    help="fp32 FLOP per core per cycle (default 64 with AVX-512, else 32)")
    a = ap.parse_args()
    if not os.path.isdir(a.dir):
        ap.error(f"no such directory: {a.dir}")
    runs = load_runs(a.dir)
    if not runs:
        sys.exit(f"summarize_train.py: no stoker-*-b*-r*.json or torch-*-b*-r*.json in {a.dir}")

    # --- the peak and the cost of one image -------------------------------------------
    info, flags = lscpu(), cpu_flags()
    cores = physical_cores()
    ghz, ghz_src = cpu_ghz(info, a.ghz)
    if a.flop_per_cycle:
        fpc, fpc_why = a.flop_per_cycle, "--flop-per-cycle"
    elif "avx512f" in flags:
        fpc, fpc_why = 64, "assumes AVX-512: 2 FMA units x 16 fp32 lanes x 2 FLOP"
    else:
        fpc, fpc_why = 32, "no avx512f, assumes AVX2: 2 FMA units x 8 fp32 lanes x 2 FLOP"
    arch = a.arch or one_value(runs, "arch")
    size = a.size or one_value(runs, "size")
    if a.flop_per_image:
        fpi, fpi_why = a.flop_per_image, "--flop-per-image"
    elif (arch, size) in FORWARD_MACS:
        macs = FORWARD_MACS[(arch, size)]
        fpi, fpi_why = 3 * 2 * macs, f"{arch} {size}px: 3 passes x 2 FLOP x {macs:,} MAC"
    else:
        fpi, fpi_why = None, f"unknown for {arch or '?'} {size or '?'}px (pass --flop-per-image)"

    def peak(threads):
        return min(threads, cores) * ghz * 1e9 * fpc if ghz and threads else None

    # --- rows ---------------------------------------------------------------------------
    rows = []
    for (config, batch), reps in runs.items():
        docs = [reps[r] for r in sorted(reps)]
        ips = [d["images_per_s"] for d in docs]
        step_ms = [d["step_ms"]["median"] for d in docs
                   if isinstance(d.get("step_ms"), dict) and "median" in d["step_ms"]]
        losses = [v for d in docs for v in d.get("loss", [])]
        first_loss = docs[0].get("loss") or [None]
        threads = docs[0].get("threads")
        med = statistics.median(ips)
        p = peak(threads)
        rows.append({
            "config": config, "batch": batch, "reps": sorted(reps), "threads": threads,
            "images_per_s": ips, "median_images_per_s": med, "min": min(ips), "max": max(ips),
            "median_step_ms": statistics.median(step_ms) if step_ms else None,
            "peak_share": med * fpi / p if fpi and p else None,
            "loss_first": first_loss[0], "loss_last": first_loss[-1],
            # A benchmark of a run that diverged measures nothing worth comparing.
            "check": "no loss" if not losses else
                     "ok" if all(math.isfinite(v) for v in losses) else "NaN/inf loss",
        })
    rank = {c: i for i, c in enumerate(ORDER)}
    rows.sort(key=lambda r: (r["batch"], rank.get(r["config"], len(ORDER)), r["config"]))
    best = {}  # (batch, precision) -> best torch row
    for r in rows:
        k = (r["batch"], precision(r["config"]))
        if r["config"].startswith("torch-") and (
                k not in best or r["median_images_per_s"] > best[k]["median_images_per_s"]):
            best[k] = r
    by_config = {(r["config"], r["batch"]): r for r in rows}
    for r in rows:
        b = best.get((r["batch"], precision(r["config"])))
        r["vs_best_torch"] = r["median_images_per_s"] / b["median_images_per_s"] if b else None
        # The same config on the --before build, where there is one.
        before = by_config.get((r["config"].replace("stoker-", "stoker-before-", 1), r["batch"]))
        r["vs_before"] = (r["median_images_per_s"] / before["median_images_per_s"]
                          if before and before is not r and r["config"].startswith("stoker-")
                          and not r["config"].startswith("stoker-before-") else None)

    # --- print ----------------------------------------------------------------------------
    threads = sorted({r["threads"] for r in rows if r["threads"]})
    # f32 and bf16 runs may describe different primitives: keep every distinct line.
    stoker_backend = " | ".join(values(runs, "backend"))
    context = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": info.get("Model name"), "physical_cores": cores, "nproc": os.cpu_count(),
        "avx512": sorted(f for f in flags if f.startswith("avx512")),
        "ghz": ghz, "ghz_source": ghz_src, "flop_per_cycle": fpc, "flop_per_cycle_why": fpc_why,
        "peak_flop_per_s": {t: peak(t) for t in threads},
        "arch": arch, "size": size, "flop_per_image": fpi, "flop_per_image_why": fpi_why,
        "torch_version": one_value(runs, "torch_version"), "stoker_backend": stoker_backend,
        "best_torch": {f"{b}-{p}": r["config"] for (b, p), r in best.items()},
    }
    peaks = ", ".join(f"{fmt(peak(t) and peak(t) / 1e9, '.0f')} GFLOP/s at T={t}"
                      for t in threads) or "n/a"
    lines = [
        f"# cpu: {context['cpu']}, {cores} physical cores, nproc {context['nproc']}, "
        f"avx512: {' '.join(context['avx512']) or 'none'}",
        f"# pytorch {context['torch_version'] or 'n/a'}; stoker backend: {stoker_backend or 'n/a'}",
        f"# peak fp32 = min(threads, physical cores) x {fmt(ghz, '.2f')} GHz ({ghz_src}) x "
        f"{fpc:g} FLOP/cycle ({fpc_why}) = {peaks}",
        "#   the nominal clock may exceed the AVX-512 clock under load (the share is then "
        "understated); bf16 rows are measured against the fp32 peak too",
        f"# trained image = {fmt(fpi and fpi / 1e9, '.2f')} GFLOP ({fpi_why})",
        "# img/s: each run's rate over the steps after warm-up; median (min-max) over reps; "
        "vs torch: / best PyTorch config of that precision at that batch ("
        + ", ".join(f"b{b} {p}: {r['config']}" for (b, p), r in sorted(best.items())) + "); "
        "vs before: / the same config on the --before build",
        "# loss: rep 1's first -> last step; check: every loss of every rep finite",
        "",
        f"{'config':<26} {'batch':>5} {'reps':>4} {'img/s':>8} {'(min-max)':>15} "
        f"{'step ms':>8} {'vs torch':>8} {'vs before':>9} {'%peak':>6} {'loss first->last':>17}"
        "  check",
    ]
    for r in rows:
        rng = f"({r['min']:.2f}-{r['max']:.2f})"
        loss = f"{fmt(r['loss_first'], '.3f')} -> {fmt(r['loss_last'], '.3f')}"
        lines.append(
            f"{r['config']:<26} {r['batch']:>5} {len(r['reps']):>4} {r['median_images_per_s']:>8.2f} "
            f"{rng:>15} {fmt(r['median_step_ms'], '.0f'):>8} "
            f"{fmt(r['vs_best_torch'], '.2f') + ('x' if r['vs_best_torch'] else ''):>8} "
            f"{fmt(r['vs_before'], '.2f') + ('x' if r['vs_before'] else ''):>9} "
            f"{fmt(r['peak_share'] and 100 * r['peak_share'], '.1f'):>6} {loss:>17}  {r['check']}")

    # bf16 should track f32 step by step; one rep is enough to see it (same seed, same data).
    curves = []
    for batch in sorted({b for _, b in runs}):
        f32, bf16 = runs.get(("stoker-f32", batch)), runs.get(("stoker-bf16", batch))
        common = sorted(set(f32 or {}) & set(bf16 or {}))
        if not common:
            continue
        rep = common[0]
        lf, lb = f32[rep].get("loss", []), bf16[rep].get("loss", [])
        curves.append({"batch": batch, "rep": rep, "f32": lf, "bf16": lb})
        lines += ["", f"# stoker loss, batch {batch}, rep {rep}: bf16 against f32",
                  f"{'step':>4} {'f32':>9} {'bf16':>9} {'bf16-f32':>9}"]
        for i in range(max(len(lf), len(lb))):
            vf = lf[i] if i < len(lf) else None
            vb = lb[i] if i < len(lb) else None
            d = vb - vf if vf is not None and vb is not None else None
            lines.append(f"{i + 1:>4} {fmt(vf, '.4f'):>9} {fmt(vb, '.4f'):>9} {fmt(d, '+.4f'):>9}")

    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.dir, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(a.dir, "summary.json"), "w") as f:
        json.dump({"context": context, "rows": rows, "loss_curves": curves}, f, indent=1)
        f.write("\n")
    print(text, end="")


if __name__ == "__main__":
    main()
