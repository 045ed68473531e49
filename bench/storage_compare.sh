#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Storage side by side on this machine: the same generated photo-like datasets (256 and
# 512 px) read and decoded by the same reader (uring:QD:T, T = online CPUs) from local
# files and over NFS (NFS-Ganesha on 127.0.0.1 through scripts/nfs_serve.sh, libnfs client)
# with 1 and with 32 requests in flight; packed shards (local, NFS random and sequential)
# when this build has `stoker pack`. Per row: images/s, MB/s, read latency p50/p99, CPU
# used by stoker and by the NFS server, and the epoch checksum (equal across rows of a size:
# the same pixels whatever the storage). Page cache warm everywhere (the files fit in RAM):
# the NFS rows measure the protocol, loopback TCP and the server, not a disk. Repeats
# interleaved, medians. --json writes one {context, results[]} document.
# Usage: bench/storage_compare.sh [--build DIR] [--data DIR] [--per-class N] [--repeats N]
#                                 [--out DIR] [--json FILE]
set -euo pipefail
build=build data=data/storage per_class=200 repeats=3 out=out/bench-storage json=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --per-class) per_class=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    *) sed -n '12,13p' "$0" | sed 's/^# //' >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
stoker=$build/tools/stoker
[ -x "$stoker" ] || { echo "no $stoker: build first (cmake -S . -B build -G Ninja && ninja -C build)" >&2; exit 1; }
cpus=$(nproc)
mkdir -p "$out"
"$stoker" gen "$data" --sizes 256,512 --classes 10 --per-class "$per_class" > /dev/null 2>&1

shards=no
if "$stoker" --help 2>/dev/null | grep -qE "^ +pack( |$)"; then
  shards=yes
  for s in 256 512; do
    [ -d "$data/${s}px-shards" ] || "$stoker" pack "$data/${s}px" --out "$data/${s}px-shards" --shard-size 16MB > /dev/null
  done
fi

state=$out/nfs-state
"$here/scripts/nfs_serve.sh" stop --state "$state" > /dev/null 2>&1 || true
url=$("$here/scripts/nfs_serve.sh" start "$data" --port auto --mount-port auto --state "$state")
trap '"$here/scripts/nfs_serve.sh" stop --state "$state" > /dev/null 2>&1 || true' EXIT
server_pid=$(cat "$state/ganesha.pid")
base=${url%%\?*} args=${url#*\?}
nfs() { echo "$base/$1?$args"; }
ticks=$(getconf CLK_TCK)
server_cpu() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$server_pid/stat"; }

# row name | dataset | reader | extra options
rows=()
for s in 256 512; do
  rows+=("$s|local files|$data/${s}px|uring:32:$cpus|")
  [ $shards = yes ] && rows+=("$s|local shards|$data/${s}px-shards|uring:32:$cpus|")
  rows+=("$s|nfs files qd1|$(nfs "${s}px")|uring:1:$cpus|")
  rows+=("$s|nfs files qd32|$(nfs "${s}px")|uring:32:$cpus|")
  if [ $shards = yes ]; then
    rows+=("$s|nfs shards random|$(nfs "${s}px-shards")|uring:32:$cpus|--shard-order global")
    rows+=("$s|nfs shards sequential|$(nfs "${s}px-shards")|uring:32:$cpus|--shard-order sequential")
  fi
done

{
  echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $cpus cpus, $(free -g | awk '/Mem:/{print $2}') GiB RAM"
  echo "# $("$stoker" --version 2>/dev/null | head -1 || true); $(ganesha.nfsd -v 2>&1 | grep -o 'Release.*' | head -1 || echo NFS-Ganesha); libnfs $(pkg-config --modversion libnfs 2>/dev/null || echo '?')"
  echo "# data: $data (stoker gen --sizes 256,512 --classes 10 --per-class $per_class), page cache warm; NFS: $url"
  echo "# bench: RandomResizedCrop 224, batch 64, 1 epoch; median of $repeats runs; shards: $shards (stoker pack --shard-size 16MB)"
} | tee "$out/context.txt"
for i in $(seq "$repeats"); do
  for k in "${!rows[@]}"; do
    IFS='|' read -r size name dataset reader extra <<< "${rows[$k]}"
    echo "== repeat $i: ${size}px $name ($reader)" >&2
    c0=$(server_cpu)
    # shellcheck disable=SC2086
    "$stoker" bench "$dataset" --reader "$reader" $extra --json "$out/row$k-r$i.json" > /dev/null 2>&1 ||
      { echo "storage_compare: ${size}px $name failed: $stoker bench $dataset --reader $reader $extra" >&2; exit 1; }
    awk -v a="$(server_cpu)" -v b="$c0" 'BEGIN { print a - b }' > "$out/row$k-r$i.server"
  done
done
printf '%s\n' "${rows[@]}" > "$out/rows.txt"
python3 - "$out" "$repeats" "$json" <<'PY'
import json, statistics, sys
out, n, json_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [r.split("|") for r in open(f"{out}/rows.txt").read().splitlines()]
context = open(f"{out}/context.txt").read().splitlines()
med = statistics.median
results = []
print(f"{'size':>5} {'storage':<22} {'reader':<11} {'img/s':>8} {'MB/s':>7} {'read50':>7} {'read99':>7} "
      f"{'cores':>6} {'server':>6} {'vs local':>8} checksum")
print(f"{'':>5} {'':<22} {'':<11} {'':>8} {'':>7} {'ms':>7} {'ms':>7} {'':>6} {'cores':>6} {'files':>8} (epoch 0)")
local = {}
for k, (size, name, dataset, reader, extra) in enumerate(rows):
    docs = [json.load(open(f"{out}/row{k}-r{i}.json")) for i in range(1, n + 1)]
    rs = [d["results"][0] for d in docs]
    server = [float(open(f"{out}/row{k}-r{i}.server").read()) for i in range(1, n + 1)]
    secs = [r["seconds"] for r in rs]
    row = {
        "size": int(size), "storage": name, "dataset": dataset, "reader": reader,
        "options": extra, "runs": n,
        "images_per_s": med(r["images_per_s"] for r in rs),
        "mb_per_s": med(r["mb_per_s"] for r in rs),
        "read_p50_ms": med(r["stage_ms"]["read"]["p50"] for r in rs),
        "read_p99_ms": med(r["stage_ms"]["read"]["p99"] for r in rs),
        "cpu_cores_used": med(r["cpu_cores_used"] for r in rs),
        "server_cores_used": med(c / s for c, s in zip(server, secs)),
        "errors": max(r["errors"]["files"] for r in rs),
        "checksum": rs[0]["epoch_checksums"][0] if rs[0]["epoch_checksums"] else "",
        "checksums_agree": len({r["epoch_checksums"][0] for r in rs}) == 1,
        "images_per_s_runs": [r["images_per_s"] for r in rs],
    }
    if name == "local files":
        local[size] = row["images_per_s"]
    row["vs_local_files"] = row["images_per_s"] / local[size] if size in local else None
    results.append(row)
    vs = f"{row['vs_local_files']:.2f}" if row["vs_local_files"] else "-"
    print(f"{size:>5} {name:<22} {reader:<11} {row['images_per_s']:>8.0f} {row['mb_per_s']:>7.1f} "
          f"{row['read_p50_ms']:>7.2f} {row['read_p99_ms']:>7.2f} {row['cpu_cores_used']:>6.2f} "
          f"{row['server_cores_used']:>6.2f} {vs:>8} {row['checksum']}"
          + ("" if row["checksums_agree"] and not row["errors"] else "  MISMATCH/ERRORS"))
if json_path:
    with open(json_path, "w") as f:
        json.dump({"context": {"tool": "bench/storage_compare.sh", "lines": context}, "results": results}, f, indent=2)
PY
