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
# Every --json is {context, results}: train and eval measure one run each.
td, ed = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert set(td) == set(ed) == {"context", "results"}, (list(td), list(ed))
assert len(td["results"]) == len(ed["results"]) == 1
assert td["context"]["tool"] == "stoker train" and td["context"]["image_size"] == 48, td["context"]
assert ed["context"]["tool"] == "stoker eval" and ed["context"]["image_size"] == 48, ed["context"]
t, e = td["results"][0], ed["results"][0]
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
w, r = (json.load(open(p))["results"][0] for p in sys.argv[1:])
assert r["first_step"] == 3 and w["loss"][3:] == r["loss"], (w["loss"], r["loss"])
assert w["lr"][3:] == r["lr"], (w["lr"], r["lr"])
PY
cmp -s "$tmp/whole.safetensors" "$tmp/resumed.safetensors" || fail "resumed checkpoint differs"

# u8 input normalised by the backend = f32 input normalised by the loader: the same table,
# so the same bits (NHWC here, NCHW above).
for dtype in u8 f32; do
  "$stoker" train "$tmp/d" --arch resnet18 --size 32 --batch 8 --steps 3 --lr 0.1 --seed 5 \
    --reader threads:2 --dtype $dtype --layout nhwc --json "$tmp/in_$dtype.json" \
    > /dev/null 2>&1 || fail "--dtype $dtype"
done
python3 - "$tmp/in_u8.json" "$tmp/in_f32.json" <<'PY'
import json, sys
ud, fd = (json.load(open(p)) for p in sys.argv[1:])
assert ud["context"]["input"] == "u8" and fd["context"]["input"] == "f32"
u, f = ud["results"][0], fd["results"][0]
assert all(abs(a - b) <= 1e-6 * max(1, abs(b)) for a, b in zip(u["loss"], f["loss"])), \
    (u["loss"], f["loss"])
PY

# Gaps and trace: per step, wait + stage + engine busy + gaps is the step's wall time; the
# trace is Chrome trace-event JSON with a loader, loop and compute-stream track.
"$stoker" train "$tmp/d" --arch resnet18 --size 32 --batch 8 --steps 4 --timing-warmup 1 \
  --reader threads:2 --json "$tmp/gaps.json" --trace "$tmp/trace.json" --trace-steps 1:3 \
  > /dev/null 2>&1 || fail "--trace"
python3 - "$tmp/gaps.json" "$tmp/trace.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["results"][0]
for s in g["per_step"]:
    parts = s["busy_s"] + s["gap_s"]
    assert abs(parts - s["total_s"]) <= 0.02 * s["total_s"], s
    assert s["gap_s"] >= 0 and s["gap_during_wait_s"] <= s["gap_s"] + 1e-12, s
    assert s["gap_during_wait_s"] >= 0.9 * s["wait_s"] - 1e-4, s  # nothing runs while it waits
gaps = g["gaps"]
assert gaps["count"] > 0 and 0 < gaps["share"] < 1 and gaps["busy_s"] > 0, gaps
assert len(g["conv_algorithms"]) == 3 * 20 - 1, len(g["conv_algorithms"])
t = json.load(open(sys.argv[2]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in t if e.get("name") == "thread_name"}
assert "training loop" in names.values(), names
assert any(n.startswith("loader worker") for n in names.values()), names
assert any(n.startswith("cpu stream") for n in names.values()), names
last = {}
for e in t:
    if e["ph"] != "X":
        continue
    key = (e["pid"], e["tid"])
    assert key in names, e
    assert e["ts"] >= last.get(key, -1), e
    last[key] = e["ts"]
loop = [e["name"] for e in t if e["ph"] == "X" and names[(e["pid"], e["tid"])] == "training loop"]
assert loop[:4] == ["wait 1", "stage 1", "forward+backward 1", "update 1"], loop[:4]
assert len(loop) == 8, loop
PY

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
expect 2 "neither" -- "$stoker" train --arch resnet18
expect 2 "both" -- "$stoker" train "$tmp/d" --synthetic
expect 1 "contradicts" -- "$stoker" train "$tmp/d" --resume "$tmp/half.safetensors" --lr 0.5
expect 1 "missing.safetensors" -- "$stoker" train --synthetic --init "$tmp/missing.safetensors"
expect 1 "fc.weight" -- "$stoker" train --synthetic --arch resnet18 --classes 10 --batch 2 \
  --size 32 --steps 1 --init "$tmp/learned.safetensors"
expect 1 "no/such/dir" -- "$stoker" train --synthetic --arch resnet18 --classes 4 --batch 2 \
  --size 32 --steps 1 --save "$tmp/no/such/dir/x.safetensors"
expect 2 "unknown precision" -- "$stoker" train --synthetic --precision fp8
expect 2 "expected cpu or cuda" -- "$stoker" train --synthetic --backend tpu
expect 1 "exhaustive" -- "$stoker" train --synthetic --arch resnet18 --size 32 --batch 2 \
  --conv-algo exhaustive
expect 1 "not offered by the CPU" -- "$stoker" train --synthetic --arch resnet18 --size 32 \
  --batch 2 --precision f16
expect 2 "trace-steps" -- "$stoker" train --synthetic --arch resnet18 --size 32 --batch 2 \
  --trace "$tmp/t.json" --trace-steps 5
if ! grep -q avx512_bf16 /proc/cpuinfo; then
  expect 1 "native bf16" -- "$stoker" train --synthetic --arch resnet18 --size 32 --batch 2 \
    --precision bf16
fi
expect 1 "value per channel" -- "$stoker" train --synthetic --arch resnet18 --batch 1 --size 32
expect 2 "label-smoothing" -- "$stoker" train --synthetic --label-smoothing 2
echo "PASS"
