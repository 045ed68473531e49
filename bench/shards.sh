#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Files against packed shards on one machine: `stoker pack` time and throughput, then
# `stoker bench` images/s over the file tree, shards in global order and shards in
# sequential order (same reader), repeats interleaved, medians printed as a table.
# Usage: bench/shards.sh [--build DIR] [--data DIR] [--repeats N] [--out DIR]
#   env: SIZES (256 512), READER (threads:2), SHARD_SIZE (16MB), BUFFER (1000),
#        BENCH_FLAGS (extra bench options, e.g. "--cold --no-decode")
set -euo pipefail
build=build data=data/bench-shards repeats=3 out=out/bench-shards
sizes=${SIZES:-256 512} reader=${READER:-threads:2} shard_size=${SHARD_SIZE:-16MB}
buffer=${BUFFER:-1000} flags=${BENCH_FLAGS:-}
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
[ -x "$stoker" ] || { echo "no $stoker: build first" >&2; exit 1; }
mkdir -p "$out"
# Drops a tree from the page cache, so packing reads storage (clean pages only: gen's are
# written back by the sync).
evict() { sync; python3 -c '
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)' "$1"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0][sys.argv[2]])" "$@"; }

echo "# $("$stoker" --version), $(nproc) CPUs, $(date -u +%FT%TZ), reader $reader, shard size $shard_size, buffer $buffer, flags '${flags}'"
for s in $sizes; do
  tree=$data/${s}px
  [ -d "$tree" ] || "$stoker" gen "$data" --sizes "$s" --classes 20 --per-class 100 --seed 1 > /dev/null 2>&1
  [ -d "$tree" ] || mv "$data/class_000" "$tree" 2>/dev/null || true
  pack_s=()
  for i in $(seq "$repeats"); do
    evict "$tree"
    line=$("$stoker" pack "$tree" --out "$data/${s}px-shards" --shard-size "$shard_size" --force --no-progress)
    pack_s+=("$(sed -E 's/.* in ([0-9.]+) s .*/\1/' <<< "$line")")
  done
  p=$(printf '%s\n' "${pack_s[@]}" | median)
  mb=$(sed -E 's/.*, ([0-9.]+) MB read.*/\1/' <<< "$line")
  n=$(sed -E 's/.*: ([0-9]+) samples into ([0-9]+) shards.*/\1/' <<< "$line")
  nsh=$(sed -E 's/.*: ([0-9]+) samples into ([0-9]+) shards.*/\2/' <<< "$line")
  printf 'pack %spx: %s images, %s MB into %s shards: median %.2f s of %s (%.0f img/s, %.1f MB/s)\n' \
    "$s" "$n" "$mb" "$nsh" "$p" "${pack_s[*]}" "$(echo "$n / $p" | bc -l)" "$(echo "$mb / $p" | bc -l)"
done
printf '%-6s %-18s %10s %10s  %s\n' size dataset img/s MB/s "epoch checksum (all runs)"
for s in $sizes; do
  declare -A ips=() mbs=() sums=()
  for i in $(seq "$repeats"); do
    for kind in files global sequential; do
      case $kind in
        files) d=$data/${s}px; extra=() ;;
        global) d=$data/${s}px-shards; extra=(--shard-order global) ;;
        sequential) d=$data/${s}px-shards; extra=(--shard-order sequential --shuffle-buffer "$buffer") ;;
      esac
      j=$out/shards-$s-$kind-r$i.json
      # shellcheck disable=SC2086
      "$stoker" bench "$d" --reader "$reader" "${extra[@]}" $flags --json "$j" > /dev/null 2>&1
      ips[$kind]+="$(json "$j" images_per_s) "
      mbs[$kind]+="$(json "$j" mb_per_s) "
      sums[$kind]+="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['epoch_checksums'][0])" "$j") "
    done
  done
  for kind in files global sequential; do
    printf '%-6s %-18s %10.1f %10.1f  %s\n' "${s}px" "$kind" \
      "$(tr ' ' '\n' <<< "${ips[$kind]}" | grep . | median)" \
      "$(tr ' ' '\n' <<< "${mbs[$kind]}" | grep . | median)" "$(tr ' ' '\n' <<< "${sums[$kind]}" | grep . | sort -u | tr '\n' ' ')"
  done
  unset ips mbs sums
done
