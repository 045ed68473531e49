#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Where the serial reader's CPU time goes, by `perf record` samples (CPU time, so usable on a
# loaded machine, unlike wall-clock img/s): libjpeg-turbo (decode), OpenCV imgproc (resize),
# Stoker's collate kernels, the one-pass resize + collate (fused: augment/resize_collate.cc),
# libxxhash (the sample hash), everything else (kernel, libc, reads, start-up; the dynamic
# loader left out). decode_share = decode / (decode + resize + collate + fused + hash): the
# serial reader's approach to the crop-window decode-only limit. ms/img: each share of the
# run's process CPU time per image (`stoker bench --json` cpu_seconds / images). Not a
# throughput benchmark. Usage: bench/loader_stage_shares.sh STOKER DATASET [bench options]
# ($EPOCHS epochs, default 6).
set -euo pipefail
bin=$1 data=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf record -q -F 4000 -o "$tmp/p.data" "$bin" bench "$data" --reader serial \
  --epochs "${EPOCHS:-6}" --json "$tmp/b.json" "$@" >/dev/null 2>&1
perf report -i "$tmp/p.data" --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep '%' |
  python3 -c '
import json, re, sys
cat = dict(decode=0.0, resize=0.0, collate=0.0, fused=0.0, hash=0.0, other=0.0)
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
    elif "fused_" in sym or "resize_collate" in sym or "resize_into_sample" in sym:
        cat["fused"] += p
    elif any(k in sym for k in ("collate", "planar", "interleave", "mirror")):
        cat["collate"] += p
    else:
        cat["other"] += p
total = sum(cat.values())
work = sum(cat[k] for k in ("decode", "resize", "collate", "fused", "hash"))
share = 100 * cat["decode"] / work
r = json.load(open(sys.argv[1]))["results"][0]
ms = 1e3 * r["cpu_seconds"] / r["images"]  # process CPU ms per image
print(" ".join(f"{k}={100 * v / total:.1f}%" for k, v in cat.items()), f"decode_share={share:.1f}%")
print("ms/img:", " ".join(f"{k}={ms * v / total:.3f}" for k, v in cat.items()), f"cpu={ms:.3f}")
' "$tmp/b.json"
