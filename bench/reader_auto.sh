#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `--reader auto` against every fixed reader it could have chosen and the default (issue 43),
# side by side, interleaved, medians of --repeats: `bench --emulate` at two rates (one the
# loader can feed on this machine, one it cannot), and `train` with the CPU trainer (ResNet-18).
# Auto's rate counts its search: it is the whole run's. Prints one table per case and writes
# every run's JSON under --out.
#   bench/reader_auto.sh DATA [--out DIR] [--repeats N] [--rates A,B] [--steps N] [--build DIR]
set -euo pipefail
data=${1:?usage: bench/reader_auto.sh DATA [--out DIR] [--repeats N] [--rates A,B] [--steps N]}
shift
out=out/bench-reader-auto repeats=3 rates=800,2500 steps=240 build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
stoker=$build/tools/stoker
cpus=$(nproc)
readers="auto serial threads:1 threads:$cpus processes:$cpus uring:16:$cpus"
mkdir -p "$out"
images=$(find "$data" -type f | wc -l)
# Enough epochs for `steps` batches of 32 (auto searches within them).
epochs=$(( (steps * 32 + images - 1) / images ))
for r in $(seq "$repeats"); do
  for rate in ${rates//,/ }; do
    for reader in $readers; do
      f="$out/bench-$rate-${reader//:/_}-$r.json"
      "$stoker" bench "$data" --reader "$reader" --emulate "$rate" --epochs "$epochs" --batch 32 \
        --json "$f" > /dev/null
    done
  done
  for reader in $readers; do
    f="$out/train-${reader//:/_}-$r.json"
    "$stoker" train "$data" --arch resnet18 --size 64 --batch 32 --steps "$steps" --reader "$reader" \
      --no-save --json "$f" > /dev/null 2>&1
  done
  echo "# round $r of $repeats done" >&2
done
python3 - "$out" "$repeats" "$rates" "$readers" << 'PY'
import json, statistics, sys
out, repeats, rates, readers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split()
def rate_of(path, key):
    d = json.load(open(path))
    r = d["results"][0]
    return r[key]
for rate in rates:
    print(f"\nbench --emulate {rate}: img/s over the whole run (median of {repeats}; runs)")
    for reader in readers:
        v = [rate_of(f"{out}/bench-{rate}-{reader.replace(':', '_')}-{k}.json", "images_per_s") for k in range(1, repeats + 1)]
        print(f"  {reader:<14} {statistics.median(v):8.0f}   {' '.join(f'{x:.0f}' for x in v)}")
print(f"\ntrain resnet18 64 px: img/s, steady state (median of {repeats}; runs)")
for reader in readers:
    v = [rate_of(f"{out}/train-{reader.replace(':', '_')}-{k}.json", "images_per_s") for k in range(1, repeats + 1)]
    print(f"  {reader:<14} {statistics.median(v):8.1f}   {' '.join(f'{x:.1f}' for x in v)}")
PY
