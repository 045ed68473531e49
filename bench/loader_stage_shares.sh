#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Where the serial reader's CPU time goes, by `perf record` samples (CPU time, so usable on a
# loaded machine, unlike wall-clock img/s): libjpeg-turbo (decode), OpenCV imgproc (resize),
# Stoker's collate kernels, libxxhash (the sample hash), everything else (kernel, libc,
# start-up; the dynamic loader left out). decode_share = decode / (decode + resize + collate
# + hash): the serial reader's approach to the crop-window decode-only limit. Not a
# throughput benchmark. Usage: bench/loader_stage_shares.sh STOKER DATASET [bench options]
set -euo pipefail
bin=$1 data=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -q -F 4000 -o "$tmp/p.data" "$bin" bench "$data" --reader serial --epochs 6 "$@" \
  >/dev/null 2>&1
perf report -i "$tmp/p.data" --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep '%' |
  python3 -c '
import re, sys
cat = dict(decode=0.0, resize=0.0, collate=0.0, hash=0.0, other=0.0)
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    p, dso, sym = float(m.group(1)), m.group(2), m.group(4)
    if "ld-linux" in dso:
        continue
    if "libjpeg" in dso:
        cat["decode"] += p
    elif "imgproc" in dso:
        cat["resize"] += p
    elif "xxhash" in dso:
        cat["hash"] += p
    elif any(k in sym for k in ("collate", "planar", "interleave", "mirror")):
        cat["collate"] += p
    else:
        cat["other"] += p
total = sum(cat.values())
work = cat["decode"] + cat["resize"] + cat["collate"] + cat["hash"]
share = 100 * cat["decode"] / work
print(" ".join(f"{k}={100 * v / total:.1f}%" for k, v in cat.items()), f"decode_share={share:.1f}%")
'
