#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every output (and every dataset of a multi-dataset bench) is checked before the work
# starts (tools/output_check.h): an unwritable --json, --trace, --save, --out fails at once
# with exit 1 and a message naming the option and the path, before any measurement or step,
# and the check itself leaves an existing file untouched.
set -euo pipefail
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 64 --classes 2 --per-class 8 --seed 1 >/dev/null 2>&1
echo "not a directory" > "$tmp/file"

# expect_early PATTERN -- command...: exit 1 naming PATTERN, within 20 s (the commands below
# would otherwise run for hours), with no result row on stdout.
expect_early() {
  local pattern=$1; shift 2
  set +e; timeout 20 "$@" > "$tmp/out.txt" 2> "$tmp/err.txt"; local got=$?; set -e
  [ "$got" = 1 ] || { cat "$tmp/out.txt" "$tmp/err.txt"; fail "exit $got, expected 1: $*"; }
  grep -q -- "$pattern" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "no '$pattern': $*"; }
  if grep -q "^d  *\(local  *\)\?serial\|^ *steps  *img/s" "$tmp/out.txt"; then
    cat "$tmp/out.txt"; fail "work was done before the error: $*"
  fi
}
missing=$tmp/no/such/dir
long_bench=("$stoker" bench "$tmp/d" --reader serial --size 32 --epochs 1000000)
long_train=("$stoker" train --synthetic --arch resnet18 --classes 2 --batch 2 --size 32 --steps 1000000)

expect_early "\-\-json $missing/x.json: the directory $missing does not exist" -- \
  "${long_bench[@]}" --json "$missing/x.json"
expect_early "\-\-trace $tmp/file/t.json: $tmp/file is not a directory" -- \
  "${long_bench[@]}" --trace "$tmp/file/t.json"
expect_early "\-\-json $tmp/d: is a directory" -- "${long_bench[@]}" --json "$tmp/d"
expect_early "dataset '$tmp/missing'" -- "${long_bench[@]}" "$tmp/d" "$tmp/missing"
expect_early "\-\-save $missing/x.safetensors: the directory" -- \
  "${long_train[@]}" --save "$missing/x.safetensors"
expect_early "\-\-json $missing/x.json" -- "${long_train[@]}" --json "$missing/x.json"
expect_early "\-\-trace $missing/t.json" -- "${long_train[@]}" --trace "$missing/t.json"
expect_early "\-\-val $tmp/missing\|dataset '$tmp/missing'" -- "${long_train[@]}" --val "$tmp/missing"
# (eval checks --json before it reads the checkpoint: none is needed here)
expect_early "\-\-json $missing/e.json" -- "$stoker" eval "$tmp/d" --checkpoint "$tmp/ck.safetensors" \
  --size 32 --batch 2 --json "$missing/e.json"
expect_early "\-\-json $missing/p.json" -- "$stoker" probe "$tmp/d" --warm --json "$missing/p.json"
expect_early "\-\-out $missing/p.png" -- "$stoker" peek "$tmp/d" --size 32 --out "$missing/p.png"
expect_early "\-\-out $missing/i.list" -- "$stoker" index "$tmp/d" --out "$missing/i.list"
expect_early "\-\-out $tmp/file/shards" -- "$stoker" pack "$tmp/d" --out "$tmp/file/shards"
expect_early "out $missing/i.safetensors" -- "$stoker" checkpoint init resnet18 "$missing/i.safetensors"
expect_early "\-\-json $missing/m.json" -- "$stoker" model resnet18 --json "$missing/m.json"
expect_early "out $tmp/file/g" -- "$stoker" gen "$tmp/file/g" --sizes 32 --classes 1 --per-class 1

# An existing output is checked, not clobbered, when the run fails for another reason.
echo '{"kept": true}' > "$tmp/old.json"
expect_early "dataset '$tmp/missing'" -- "${long_bench[@]}" "$tmp/missing" --json "$tmp/old.json"
[ "$(cat "$tmp/old.json")" = '{"kept": true}' ] || fail "the check changed an existing --json"
[ -z "$(ls -A "$tmp" | grep stoker-probe)" ] || fail "a probe file was left behind"
echo "PASS"
