#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The raw storage path: Stoker's uring reader with --no-decode --direct against fio doing
# the same work: random reads of the dataset's file sizes (fio's bssplit built from the
# dataset's size distribution, rounded up to 4 KiB), O_DIRECT, io_uring, the same queue
# depth, the same total bytes. fio reads one file holding the dataset's bytes back to back
# (it cannot read each of thousands of small files whole); Stoker opens and reads the files
# themselves, so the ratio includes its per-file open/close. Repeats interleaved, medians.
# Usage: bench/uring_vs_fio.sh [--build DIR] [--data DIR] [--qd N] [--repeats N] [--out DIR]
set -euo pipefail
build=build data=data/bench/1024px qd=32 repeats=3 out=out/bench-fio
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --qd) qd=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--data DIR] [--qd N] [--repeats N] [--out DIR]" >&2; exit 2 ;;
  esac
done
stoker=$build/tools/stoker
[ -x "$stoker" ] || { echo "no $stoker: build first" >&2; exit 1; }
command -v fio > /dev/null || { echo "fio is missing: scripts/deps.sh --bench" >&2; exit 1; }
mkdir -p "$out"
blob=$out/dataset.blob
# bssplit (at most 64 sizes, weights in percent) and the total, from the file sizes.
read -r bssplit total files < <(python3 - "$data" "$blob" <<'PY'
import os, sys
root, blob = sys.argv[1], sys.argv[2]
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".jpg"))
sizes = [os.path.getsize(p) for p in paths]
if not os.path.exists(blob) or os.path.getsize(blob) < sum(sizes):
    with open(blob, "wb") as out:
        for p in paths:
            out.write(open(p, "rb").read())
rounded = sorted((s + 4095) // 4096 * 4096 for s in sizes)
bins = {}
for i in range(50):  # 50 quantiles, 2% each
    q = rounded[min(len(rounded) - 1, (2 * i + 1) * len(rounded) // 100)]
    bins[q] = bins.get(q, 0) + 2
print(":".join(f"{b}/{w}" for b, w in sorted(bins.items())), sum(rounded), len(sizes))
PY
)
echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus; $(fio --version)"
echo "# $data: $files files, $((total / 1000000)) MB rounded to 4 KiB; QD $qd; O_DIRECT; io_uring"
for i in $(seq "$repeats"); do
  "$stoker" bench "$data" --reader "uring:$qd:1" --no-decode --direct --cold \
    --json "$out/stoker-r$i.json" > /dev/null 2>&1
  fio --name=files --filename="$blob" --rw=randread --bssplit="$bssplit" --ioengine=io_uring \
    --iodepth="$qd" --direct=1 --io_size="$total" --output-format=json > "$out/fio-r$i.json"
done
python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
st = [json.load(open(f"{out}/stoker-r{i}.json"))["results"][0]["mb_per_s"] for i in range(1, n + 1)]
fi = [json.load(open(f"{out}/fio-r{i}.json"))["jobs"][0]["read"]["bw_bytes"] / 1e6 for i in range(1, n + 1)]
s, f = statistics.median(st), statistics.median(fi)
print(f"stoker uring --no-decode --direct: {s:.0f} MB/s (runs {', '.join(f'{x:.0f}' for x in st)})")
print(f"fio io_uring randread bssplit:     {f:.0f} MB/s (runs {', '.join(f'{x:.0f}' for x in fi)})")
print(f"ratio stoker / fio: {s / f:.2f}")
PY
