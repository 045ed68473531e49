#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Worker-process memory over epochs with an ImageNet-sized index: `stoker bench --reader
# processes:N --no-decode` over the 1.28 M-entry tree of bench/index_scale.sh, sampling each
# stoker-worker's RssAnon (private) and RssShmem (the shared index and batch pool) from
# /proc every second. Flat RssAnon across epochs = the index is shared, never copied.
# Usage: bench/worker_rss.sh [--build DIR] [--tree DIR] [--epochs N] [--workers N]
set -euo pipefail
build=build tree=data/index-1.28M epochs=3 workers=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --tree) tree=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--tree DIR] [--epochs N] [--workers N]" >&2; exit 2 ;;
  esac
done
[ -f "$tree/.complete" ] || { echo "no $tree: run bench/index_scale.sh --tree $tree first" >&2; exit 1; }
"$build/tools/stoker" bench "$tree" --reader "processes:$workers" --no-decode --epochs "$epochs" \
  --batch 256 2>/dev/null | grep -v '^#' &
bench=$!
echo "# $(date -u +%FT%TZ) $tree, processes:$workers, $epochs epochs, --no-decode"
echo "seconds  pid  RssAnon_kB  RssShmem_kB  VmRSS_kB"
t=0
while kill -0 "$bench" 2>/dev/null; do
  for pid in $(pgrep -f stoker-worker || true); do
    awk -v t=$t -v pid="$pid" '/^RssAnon/{a=$2} /^RssShmem/{s=$2} /^VmRSS/{r=$2}
      END{if (r) printf "%7d %5d %11d %12d %9d\n", t, pid, a, s, r}' "/proc/$pid/status" 2>/dev/null || true
  done
  sleep 1
  t=$((t + 1))
done
wait "$bench"
