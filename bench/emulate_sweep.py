#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The highest emulated accelerator rate each reader sustains at AU >= target: bisection on
# `stoker bench --emulate RATE` (log scale), starting from the reader's plain throughput.
# Also AU at the resnet50-h100 preset. Warm page cache, RandomResizedCrop 224, batch 64.
# Prefetching readers run whole epochs: a short run would start with `prefetch` batches
# already made and overstate the rate. serial cannot prefetch (AU = compute / (compute +
# load), 90% near a ninth of its own rate), so a few batches around that point suffice.
# Usage: bench/emulate_sweep.py [--build DIR] [--data DIR ...] [--readers R,R] [--steps N]
import argparse
import json
import math
import os
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--data", nargs="+", default=[f"data/bench/{s}px" for s in (256, 512, 1024)])
ap.add_argument("--readers", default="serial,threads:2,processes:2,uring:32:2")
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--serial-batches", type=int, default=6, help="batches per serial probe")
ap.add_argument("--target", type=float, default=0.9)
args = ap.parse_args()
stoker = os.path.join(args.build, "tools", "stoker")
tmp = tempfile.mkdtemp()


def bench(data, reader, emulate=None):
    out = os.path.join(tmp, "r.json")
    cmd = [stoker, "bench", data, "--reader", reader, "--json", out]
    if reader == "serial":
        cmd += ["--max-batches", str(args.serial_batches)]
    if emulate:
        cmd += ["--emulate", str(emulate), "--au-target", str(args.target)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(out))["results"][0]


print(f"# highest emulated rate with AU >= {args.target:.0%} ({args.steps} bisection steps; "
      f"whole epochs, serial {args.serial_batches} batches of 64); AU at resnet50-h100 "
      f"(1786 img/s)")
print("| dataset | reader | loader alone img/s | highest rate at AU >= 90% | AU at resnet50-h100 |")
print("|---|---|---|---|---|")
for data in args.data:
    for reader in args.readers.split(","):
        alone = bench(data, reader)["images_per_s"]
        if reader == "serial":
            lo, hi = math.log(alone / 15), math.log(alone / 5)
        else:
            lo, hi = math.log(alone / 3), math.log(alone * 1.3)  # AU >= target at lo, not hi
        for _ in range(args.steps):
            mid = (lo + hi) / 2
            au = bench(data, reader, f"{math.exp(mid):.1f}")["emulation"]["accelerator_utilisation"]
            lo, hi = (mid, hi) if au >= args.target else (lo, mid)
        h100 = bench(data, reader, "resnet50-h100")["emulation"]["accelerator_utilisation"]
        print(f"| {os.path.basename(data.rstrip('/'))} | {reader} | {alone:.0f} | "
              f"{math.exp(lo):.0f} img/s | {h100:.0%} |", flush=True)
