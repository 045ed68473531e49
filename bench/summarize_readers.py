#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Medians over repeats of bench/readers.sh results: one markdown table per cache state,
# images/s (and MB/s) per reader and resolution, plus processes:2 / threads:2.
import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]
runs = {}  # (cache, size, reader) -> [(img/s, MB/s)]
context = None
for path in sorted(glob.glob(os.path.join(out, "readers-*-*-r*.json"))):
    m = re.search(r"readers-(\d+)-(warm|cold)-r\d+\.json$", path)
    doc = json.load(open(path))
    context = context or doc["context"]
    for r in doc["results"]:
        runs.setdefault((m.group(2), int(m.group(1)), r["reader"]), []).append(
            (r["images_per_s"], r["mb_per_s"]))
if not runs:
    sys.exit(f"no results in {out}")
readers = list(dict.fromkeys(k[2] for k in runs))
sizes = sorted({k[1] for k in runs})
print(f"# {context['date']} {context['cpu']}, {context['online_cpus']} cpus; "
      f"{context['transform']} {context['size']}, batch {context['batch']}, "
      f"prefetch {context['prefetch']}; median of {len(next(iter(runs.values())))} runs")
for cache in ("warm", "cold"):
    print(f"\n{cache} page cache: images/s (MB/s)\n")
    print("| reader | " + " | ".join(f"{s}px" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for rd in readers:
        cells = []
        for s in sizes:
            v = runs.get((cache, s, rd))
            cells.append(f"{statistics.median(x[0] for x in v):.0f} ({statistics.median(x[1] for x in v):.0f})" if v else "-")
        print(f"| {rd} | " + " | ".join(cells) + " |")
    ratio = []
    for s in sizes:
        p, t = runs.get((cache, s, "processes:2")), runs.get((cache, s, "threads:2"))
        ratio.append(f"{statistics.median(x[0] for x in p) / statistics.median(x[0] for x in t):.2f}" if p and t else "-")
    print("| processes:2 / threads:2 | " + " | ".join(ratio) + " |")
