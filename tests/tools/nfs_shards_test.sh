#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packed shards over NFS read ahead (issue 42): `stoker bench` of a `stoker pack` dataset
# through a local NFS-Ganesha gives the same epoch checksum as the same shards read locally,
# in sequential shard order (forward runs: served from the NFS client's read-ahead windows;
# with and without a shuffle buffer) and in the global order (random: no windows), under a
# synchronous and an asynchronous reader. The windows' own bytes and bounds:
# tests/loader/nfs_ahead_test.cc. Needs root and NFS-Ganesha, else skips (skip policy).
set -euo pipefail
stoker=$1
here=$(cd "$(dirname "$0")" && pwd)
serve="$here/../../scripts/nfs_serve.sh"
. "$here/../skip_policy.sh"
tmp=$(mktemp -d)
trap '"$serve" stop --state "$tmp/nfs" > /dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 256 --classes 3 --per-class 140 --seed 5 > /dev/null 2>&1
# Shards of 10 MB and 2 MB: windows inside a shard and short ones at their ends.
"$stoker" pack "$tmp/d" --out "$tmp/p" --shard-size 10MB > /dev/null 2>&1 || fail "pack"
rc=0
url=$("$serve" start "$tmp/p" --port auto --mount-port auto --state "$tmp/nfs" 2> "$tmp/serve.txt") || rc=$?
[ $rc = 77 ] && skip "no NFS server here: $(cat "$tmp/serve.txt")"
[ $rc = 0 ] || fail "nfs_serve: $(cat "$tmp/serve.txt")"

for order in "--shard-order sequential --shuffle-buffer 0" "--shard-order sequential" \
  "--shard-order global"; do
  # The local pack and its URL, each under both readers: storage, reader, checksum.
  # shellcheck disable=SC2086
  "$stoker" bench "$tmp/p" "$url" --reader serial,uring:8:1 --batch 10 --size 32 --epochs 1 \
    $order > "$tmp/b.txt" 2>&1 || fail "bench $order: $(tail -5 "$tmp/b.txt")"
  rows=$(grep -E '^p +(local|nfs) ' "$tmp/b.txt" | awk '{print $2, $3, $NF}' || true)
  [ "$(echo "$rows" | wc -l)" = 4 ] || fail "$order: rows: $rows"
  [ "$(echo "$rows" | awk '{print $3}' | sort -u | wc -l)" = 1 ] ||
    fail "$order: checksums differ between local and NFS shards: $rows"
done
echo "ok: NFS shards read ahead give the local shards' checksums, sequential and global order"
