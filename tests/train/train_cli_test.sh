#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stoker train / eval end to end on the CPU backend: a tiny ResNet learns a generated dataset
# (>= 90% training accuracy by `stoker eval`), a run split by --save/--resume equals the
# uninterrupted one byte for byte, --json holds the promised fields, and bad options, paths
# and checkpoints are clear errors (exit 1 or 2), never a crash.
set -euo pipefail
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=2

if ! "$stoker" train --synthetic --arch resnet18 --classes 4 --batch 2 --size 32 --steps 1 \
    > "$tmp/probe.txt" 2>&1; then
  if grep -q "not built in" "$tmp/probe.txt"; then
    echo "SKIP: this build has no CPU backend (oneDNN not found)"; exit 77
  fi
  cat "$tmp/probe.txt"; fail "synthetic smoke run"
fi

"$stoker" gen "$tmp/d" --sizes 64 --classes 4 --per-class 32 --seed 3 2>/dev/null

# Learning: ResNet-18 at 48 px, 8 epochs of 128 images, then top-1 on the same images.
"$stoker" train "$tmp/d" --arch resnet18 --size 48 --batch 16 --epochs 8 --lr 0.05 \
  --reader threads:2 --save "$tmp/learned.safetensors" --json "$tmp/learn.json" \
  > "$tmp/learn.txt" 2> "$tmp/learn.err" || { cat "$tmp/learn.err"; fail "train"; }
"$stoker" eval "$tmp/d" --checkpoint "$tmp/learned.safetensors" --size 48 --batch 16 \
  --json "$tmp/eval.json" > "$tmp/eval.txt" 2>/dev/null || fail "eval"
cat "$tmp/learn.txt" "$tmp/eval.txt"
python3 - "$tmp/learn.json" "$tmp/eval.json" <<'PY'
import json, math, sys
t = json.load(open(sys.argv[1]))
e = json.load(open(sys.argv[2]))
assert t["steps"] == 64 and len(t["loss"]) == 64 and len(t["per_step"]) == 64, t["steps"]
assert all(math.isfinite(x) for x in t["loss"])
for k in ("images_per_s", "data_wait_fraction", "flop_per_image", "achieved_gflop_per_s"):
    assert t[k] >= 0, k
for k in ("step_ms", "data_wait_ms", "forward_ms", "backward_ms", "update_ms"):
    assert set(t[k]) == {"median", "p10", "p90", "mean"}, k
assert t["end_state"] == {"step": 64, "epoch": 7, "sampler_position": 128}, t["end_state"]
assert e["images"] == 128, e
assert e["top1"] >= 0.90, f"training accuracy {e['top1']:.3f} < 0.90 after 8 epochs"
print(f"learned: top-1 {e['top1']:.3f}, loss {t['loss'][0]:.3f} -> {t['loss'][-1]:.3f}")
PY

# Resume: 6 steps in one run = 3 steps, --save, then --resume for 3 more (an epoch is 8
# batches of 16, so the split is mid-epoch; shuffled, RandomResizedCrop and flips on).
common=(--arch resnet18 --size 32 --batch 16 --lr 0.1 --lr-warmup 2 --reader threads:2 --seed 9)
"$stoker" train "$tmp/d" "${common[@]}" --steps 6 --total-steps 6 --save "$tmp/whole.safetensors" \
  --json "$tmp/whole.json" > /dev/null 2>&1 || fail "uninterrupted run"
"$stoker" train "$tmp/d" "${common[@]}" --steps 3 --total-steps 6 --save "$tmp/half.safetensors" \
  > /dev/null 2>&1 || fail "first half"
"$stoker" train "$tmp/d" --resume "$tmp/half.safetensors" --steps 3 --reader threads:2 \
  --save "$tmp/resumed.safetensors" --json "$tmp/resumed.json" > /dev/null 2>&1 || fail "resume"
python3 - "$tmp/whole.json" "$tmp/resumed.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
assert r["first_step"] == 3 and w["loss"][3:] == r["loss"], (w["loss"], r["loss"])
assert w["lr"][3:] == r["lr"], (w["lr"], r["lr"])
PY
cmp -s "$tmp/whole.safetensors" "$tmp/resumed.safetensors" || fail "resumed checkpoint differs"

# --init from a checkpoint: a fresh run (step 0) starting from those weights.
"$stoker" train --synthetic --arch resnet18 --classes 4 --batch 4 --size 32 --steps 1 \
  --init "$tmp/learned.safetensors" > "$tmp/init.txt" 2>&1 || fail "--init"
grep -q 'from .*learned.safetensors' "$tmp/init.txt" || fail "--init not reported"

# Errors: exit 1 with the reason (2 for usage), no crash.
expect() {  # expect CODE PATTERN -- command...
  local code=$1 pattern=$2; shift 3
  set +e; "$@" > "$tmp/err.txt" 2>&1; local got=$?; set -e
  [ "$got" = "$code" ] || { cat "$tmp/err.txt"; fail "exit $got, expected $code: $*"; }
  grep -q -- "$pattern" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "no '$pattern': $*"; }
}
expect 1 "neither" -- "$stoker" train --arch resnet18
expect 1 "both" -- "$stoker" train "$tmp/d" --synthetic
expect 1 "contradicts" -- "$stoker" train "$tmp/d" --resume "$tmp/half.safetensors" --lr 0.5
expect 1 "missing.safetensors" -- "$stoker" train --synthetic --init "$tmp/missing.safetensors"
expect 1 "fc.weight" -- "$stoker" train --synthetic --arch resnet18 --classes 10 --batch 2 \
  --size 32 --steps 1 --init "$tmp/learned.safetensors"
expect 1 "no/such/dir" -- "$stoker" train --synthetic --arch resnet18 --classes 4 --batch 2 \
  --size 32 --steps 1 --save "$tmp/no/such/dir/x.safetensors"
expect 1 "unknown precision" -- "$stoker" train --synthetic --precision fp8
expect 1 "expected cpu or gpu" -- "$stoker" train --synthetic --backend tpu
if ! grep -q avx512_bf16 /proc/cpuinfo; then
  expect 1 "native bf16" -- "$stoker" train --synthetic --arch resnet18 --size 32 --batch 2 \
    --precision bf16
fi
expect 1 "value per channel" -- "$stoker" train --synthetic --arch resnet18 --batch 1 --size 32
expect 2 "label-smoothing" -- "$stoker" train --synthetic --label-smoothing 2
echo "PASS"
