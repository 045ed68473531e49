#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Summarise bench/loader_vs_torchvision.sh results: median over repeats.

Reads, from OUT_DIR (names are what the shell script writes):
  stoker-<S>-r<i>.json     Stoker `bench` output, one result per reader
  tv-nw<W>-<S>-r<i>.json   bench/torchvision_loader.py output
  tjbench-<S>.txt          raw tjbench output for one JPEG of resolution S
Writes OUT_DIR/summary.md and OUT_DIR/summary.json and prints the markdown.
Standard library only, so any python3 can run it.
"""
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

FILE_RE = re.compile(r"^(stoker|tv-nw(\d+))-(\d+)-r(\d+)\.json$")
COLS = ["stoker serial", "stoker threads:2", "tv nw=0", "tv nw=2"]


def load_runs(out):
    """-> runs[res][loader] = list of result dicts (one per repeat), context."""
    runs, ctx = {}, {}
    for name in sorted(os.listdir(out)):
        m = FILE_RE.match(name)
        if not m:
            continue
        res = int(m.group(3))
        try:
            with open(os.path.join(out, name)) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"summarize_loader.py: cannot read {name}: {e}")
        if m.group(1) == "stoker":
            ctx.setdefault("stoker", doc.get("context", {}))
            items = [("stoker " + r.get("reader", "?"), r) for r in doc.get("results", [])]
        else:
            for k in ("torch", "torchvision", "pillow"):
                ctx.setdefault(k, doc.get(k))
            items = [(f"tv nw={m.group(2)}", doc)]
        for loader, r in items:
            runs.setdefault(res, {}).setdefault(loader, []).append(r)
    return runs, ctx


def mean_file_bytes(by_loader):
    """Mean on-disk size of one image: Stoker's dataset_bytes, else the bytes
    torchvision_loader.py summed (exact file sizes), else MB/s x seconds.
    Stoker's own "bytes" is skipped: with partial decode it may read less."""
    rs = [r for v in by_loader.values() for r in v]
    for r in rs:
        if r.get("dataset_images") and r.get("dataset_bytes"):
            return r["dataset_bytes"] / r["dataset_images"]
    for r in rs:
        if r.get("loader") == "torchvision" and r.get("images") and r.get("bytes"):
            return r["bytes"] / r["images"]
    for r in rs:
        if r.get("images") and r.get("mb_per_s") and r.get("seconds"):
            return r["mb_per_s"] * 1e6 * r["seconds"] / r["images"]
    return None


def parse_tjbench(path):
    """Decode rate of tjbench's verbose output, as images/s of that file."""
    try:
        text = open(path).read()
    except OSError:
        return None
    size = re.search(r"Image size:\s*(\d+)\s*x\s*(\d+)", text)
    mpix = re.search(r"Decompress\s*-->.*?Throughput:\s*([\d.]+)\s*Megapixels/sec", text, re.S)
    src = re.search(r"^# file: (.*)$", text, re.M)
    if not (size and mpix):
        return {"file": src and src.group(1), "error": "could not parse tjbench output"}
    w, h, mp = int(size.group(1)), int(size.group(2)), float(mpix.group(1))
    return {"file": src and src.group(1), "width": w, "height": h,
            "mpixels_per_s": mp, "images_per_s": mp * 1e6 / (w * h)}


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def dpkg_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                              capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def fmt(x, nd=1):
    return "n/a" if x is None else f"{x:.{nd}f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: summarize_loader.py OUT_DIR (the --out of loader_vs_torchvision.sh)")
    out = sys.argv[1]
    runs, ctx = load_runs(out)
    if not runs:
        sys.exit(f"summarize_loader.py: no stoker-*.json or tv-nw*.json files in {out}")

    rows = []
    for res in sorted(runs):
        med = {}
        for loader in COLS:
            vals = [r["images_per_s"] for r in runs[res].get(loader, []) if "images_per_s" in r]
            med[loader] = statistics.median(vals) if vals else None
        fb = mean_file_bytes(runs[res])
        tj = parse_tjbench(os.path.join(out, f"tjbench-{res}.txt"))
        rows.append({
            "resolution": res,
            "mean_file_kb": fb / 1e3 if fb else None,
            "repeats": {k: len(runs[res].get(k, [])) for k in COLS},
            "median_images_per_s": med,
            "ratio_serial_tv0": ratio(med["stoker serial"], med["tv nw=0"]),
            "ratio_threads2_tv2": ratio(med["stoker threads:2"], med["tv nw=2"]),
            "tjbench": tj,
            "threads2_scaling": ratio(med["stoker threads:2"],
                                      2 * med["stoker serial"] if med["stoker serial"] else None),
            "runs": runs[res],
        })

    context = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "torch": ctx.get("torch"), "torchvision": ctx.get("torchvision"),
        "pillow": ctx.get("pillow"),
        "libjpeg-turbo-progs": dpkg_version("libjpeg-turbo-progs"),
        "stoker": ctx.get("stoker"),
    }
    # cpu/date are on their own lines already; nested dicts (libraries) flattened.
    flat = {}
    for k, v in (context["stoker"] or {}).items():
        for k2, v2 in (v.items() if isinstance(v, dict) else [(None, v)]):
            if k not in ("cpu", "date") and isinstance(v2, (str, int, float, bool)):
                flat[f"{k}.{k2}" if k2 else k] = v2
    stoker_ctx = " ".join(f"{k}={v}" for k, v in flat.items())
    reps = max((n for r in rows for n in r["repeats"].values()), default=0)
    lines = [
        f"# date: {context['date']}",
        f"# cpu: {context['cpu']}, nproc {context['nproc']}",
        f"# versions: torch {context['torch']}, torchvision {context['torchvision']}, "
        f"pillow {context['pillow']}, libjpeg-turbo-progs {context['libjpeg-turbo-progs']}",
        f"# stoker: {stoker_ctx or 'n/a'}",
        f"# img/s are medians over up to {reps} repeats; tjbench = full-size decode only, one file, one core",
        "",
        "| resolution | mean file KB | stoker serial img/s | stoker threads:2 img/s "
        "| torchvision nw=0 img/s | torchvision nw=2 img/s | ratio serial/tv0 "
        "| ratio threads2/tv2 | tjbench 1-core decode img/s | threads:2 / (2 x serial) |",
        "|---:" * 10 + "|",
    ]
    for r in rows:
        m = r["median_images_per_s"]
        tj = (r["tjbench"] or {}).get("images_per_s")
        lines.append("| " + " | ".join([
            f"{r['resolution']}px", fmt(r["mean_file_kb"]),
            fmt(m["stoker serial"]), fmt(m["stoker threads:2"]),
            fmt(m["tv nw=0"]), fmt(m["tv nw=2"]),
            fmt(r["ratio_serial_tv0"], 2), fmt(r["ratio_threads2_tv2"], 2),
            fmt(tj), fmt(r["threads2_scaling"], 2)]) + " |")
    md = "\n".join(lines) + "\n"

    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"context": context, "rows": rows}, f, indent=1)
        f.write("\n")
    print(md, end="")


if __name__ == "__main__":
    main()
