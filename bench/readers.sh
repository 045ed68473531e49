#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every reader on the same datasets, warm and cold page cache, repeats interleaved:
# serial, processes:1/2/4/8, threads:2, uring:32:2 (RandomResizedCrop 224, batch 64).
# Results: $OUT/readers-<size>-<cache>-r<i>.json and $OUT/readers-summary.md (medians).
# Usage: bench/readers.sh [--build DIR] [--data DIR] [--repeats N] [--out DIR]
#        (datasets as made by bench/loader_vs_torchvision.sh: DIR/256px, 512px, 1024px)
set -euo pipefail
build=build data=data/bench repeats=3 out=out/bench-readers
readers=${READERS:-serial,processes:1,processes:2,processes:4,processes:8,threads:2,uring:32:2}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--data DIR] [--repeats N] [--out DIR]" >&2; exit 2 ;;
  esac
done
stoker=$build/tools/stoker
[ -x "$stoker" ] || { echo "no $stoker: build first (cmake -S . -B build -G Ninja && ninja -C build)" >&2; exit 1; }
for s in 256 512 1024; do
  [ -d "$data/${s}px" ] || { echo "no $data/${s}px: run bench/loader_vs_torchvision.sh first, or $stoker gen $data --sizes 256,512,1024 --classes 10 --per-class 250" >&2; exit 1; }
done
mkdir -p "$out"
for i in $(seq "$repeats"); do
  for s in 256 512 1024; do
    for cache in warm cold; do
      flag=""; [ "$cache" = cold ] && flag=--cold
      echo "== repeat $i, ${s}px, $cache" >&2
      "$stoker" bench "$data/${s}px" --reader "$readers" $flag --json "$out/readers-$s-$cache-r$i.json" 2>/dev/null | grep -v '^#'
    done
  done
done
python3 "$(dirname "$0")/summarize_readers.py" "$out" | tee "$out/readers-summary.md"
