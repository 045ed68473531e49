#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `stoker model` end to end without torch: the table's shapes and totals, --params lines,
# --json as one document, and bad input mapped to exit 1 (usage errors to 2).
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$stoker" model resnet50 > "$tmp/t.txt"
grep -q '^# parameters: 25,557,032 trainable in 161 tensors' "$tmp/t.txt" || fail "param count"
grep -q '^# forward: 4,0[0-9,]* multiply-adds per image (4.0[89][0-9] GMAC' "$tmp/t.txt" \
  || fail "forward MACs: $(grep '^# forward' "$tmp/t.txt")"
grep -q '^# trained image: 24.5[0-9] GFLOP' "$tmp/t.txt" || fail "trained image FLOPs"
grep -Eq ' layer4\.2\.relu3 +relu .* 2048x7x7 ' "$tmp/t.txt" || fail "final 7x7"
grep -Eq ' fc +fc +2048->1000 +1000x1x1 +2049000 ' "$tmp/t.txt" || fail "fc row"
"$stoker" model resnet18 --input 64 --classes 10 | grep -Eq ' layer4\.1\.relu2 .* 512x2x2 ' \
  || fail "resnet18 at 64"
"$stoker" model resnet50 --input 224x160 | grep -Eq ' layer4\.2\.relu3 .* 2048x7x5 ' \
  || fail "non-square input"

"$stoker" model resnet50 --params > "$tmp/p.txt"
[ "$(wc -l < "$tmp/p.txt")" = 320 ] || fail "--params: $(wc -l < "$tmp/p.txt") lines, expected 320"
[ "$(head -1 "$tmp/p.txt")" = "conv1.weight 64,3,7,7" ] || fail "--params first line"
grep -qx 'bn1.num_batches_tracked' "$tmp/p.txt" || fail "--params scalar line"
[ "$(tail -1 "$tmp/p.txt")" = "fc.bias 1000" ] || fail "--params last line"

"$stoker" model resnet34 --classes 5 --input 97 --json "$tmp/m.json" > /dev/null
python3 - "$tmp/m.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
c, d = doc["context"], doc["results"][0]
assert c["tool"] == "stoker model" and len(doc["results"]) == 1, c
assert c["arch"] == "resnet34" and c["classes"] == 5 and c["input"] == [3, 97, 97], c["input"]
t = d["totals"]
assert t["parameters"] == 21_797_672 - 513 * 995, t
assert t["parameters"] == sum(math.prod(p["shape"]) for p in d["params"] if p["trainable"])
assert t["forward_macs"] == sum(l["macs"] for l in d["layers"]), t
assert t["trained_image_flops"] == 6 * t["forward_macs"], t
assert d["layers"][-1]["shape"] == [5, 1, 1] and d["layers"][0]["kernel"] == 7
adds = [l for l in d["layers"] if l["kind"] == "add"]
assert len(adds) == 16 and all(len(l["reads"]) == 2 for l in adds)
PY

expect 2 'arch: model .resnet51.: expected resnet18, resnet34' model resnet51
expect 2 "--input '0': expected a side" model resnet50 --input 0
expect 2 "--input '224x0': expected a side" model resnet50 --input 224x0
expect 2 "--input: --input '22a'" model resnet50 --input 22a
expect 2 "--classes: '0' is not an integer from 1" model resnet50 --classes 0
expect 2 'classes' model resnet50 --classes many
expect 2 'arch' model
echo "ok: stoker model table, --params, --json and errors"
