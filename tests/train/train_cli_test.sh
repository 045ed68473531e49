#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stoker train / eval end to end on the CPU backend: a tiny ResNet learns a generated dataset
# with the default optimiser settings (>= 75% training accuracy by `stoker eval`, chance 25%,
# and the loss down 4x without a spike), a run split by --save/--resume equals the
# uninterrupted one byte for byte, --resume extends a schedule only when asked,
# --save-every/--keep and --val work between steps, a diverging run stops naming the step,
# --json holds the promised fields, and bad options, paths and checkpoints are clear errors
# (exit 1 or 2), never a crash.
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # a run without --save keeps its checkpoint under runs/ here
export OMP_NUM_THREADS=2

if ! "$stoker" train --synthetic --arch resnet18 --classes 4 --batch 2 --size 32 --steps 1 \
    > "$tmp/probe.txt" 2>&1; then
  if grep -q "not built in" "$tmp/probe.txt"; then
    . "$(dirname "$0")/../skip_policy.sh"
    skip "this build has no CPU backend (oneDNN 3 not found; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)"
  fi
  cat "$tmp/probe.txt"; fail "synthetic smoke run"
fi

"$stoker" gen "$tmp/d" --sizes 64 --classes 4 --per-class 32 --seed 3 2>/dev/null

# Learning with the defaults (lr 0.1 x batch / 256, 5% warm-up, cosine): ResNet-18 at 48 px,
# 8 epochs of 128 images, then top-1 on the same images.
"$stoker" train "$tmp/d" --arch resnet18 --size 48 --batch 16 --epochs 8 \
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
for k in ("images_per_s", "data_wait_share", "flop_per_image", "achieved_gflop_per_s"):
    assert t[k] >= 0, k
for k in ("step_ms", "data_wait_ms", "forward_ms", "backward_ms", "update_ms"):
    assert set(t[k]) == {"median", "p10", "p90", "mean"}, k
assert t["end_state"] == {"step": 64, "epoch": 7, "sampler_position": 128}, t["end_state"]
assert e["images"] == 128, e
# Learning, with margins that hold on any CPU: oneDNN's kernels (AVX2, AVX-512, AMX) sum in
# different orders, so the trajectory and the last few percent of accuracy differ between
# machines. Chance is 0.25; a broken gradient, label or augmentation stays near it and near
# the first loss.
first, last = sum(t["loss"][:8]) / 8, sum(t["loss"][-8:]) / 8
assert e["top1"] >= 0.75, f"training accuracy {e['top1']:.3f} < 0.75 after 8 epochs"
assert last <= 0.25 * first, f"epoch-mean loss {first:.3f} -> {last:.3f}: not learning"
# No divergence spike on the way (the old defaults, lr 0.1 from step 0, reached 18 here): the
# loss stays below twice that of a uniform guess, 2 ln 4.
assert max(t["loss"]) < 2 * math.log(4), f"the loss spiked to {max(t['loss']):.2f}"
opts = td["context"]["options"]
assert opts["lr"] == 0.1 and opts["scale_lr"] is True, opts
assert opts["lr_warmup"] == 3 and abs(max(t["lr"]) - 0.1 * 16 / 256) < 1e-9, t["lr"]
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

# Extending a finished run: refused unless asked; --total-steps (or --epochs) sets the new
# schedule, says so, and the added steps run at a rate above 0.
"$stoker" train "$tmp/d" --resume "$tmp/whole.safetensors" --reader threads:2 > "$tmp/x.txt" 2>&1 &&
  fail "resuming a complete run without extending it"
grep -q "complete (6 of 6 steps)" "$tmp/x.txt" || { cat "$tmp/x.txt"; fail "no 'complete'"; }
"$stoker" train "$tmp/d" --resume "$tmp/whole.safetensors" --steps 2 --reader threads:2 \
  > "$tmp/x.txt" 2>&1 && fail "--steps past the schedule's end"
grep -q "past the end" "$tmp/x.txt" || { cat "$tmp/x.txt"; fail "no 'past the end'"; }
"$stoker" train "$tmp/d" --resume "$tmp/whole.safetensors" --total-steps 10 --reader threads:2 --no-save \
  --json "$tmp/ext.json" > "$tmp/ext.txt" 2>/dev/null || fail "--total-steps on --resume"
grep -q "^# resume: the schedule is now 10 steps, not 6" "$tmp/ext.txt" ||
  { cat "$tmp/ext.txt"; fail "the change is not stated"; }
"$stoker" train "$tmp/d" --resume "$tmp/whole.safetensors" --epochs 2 --reader threads:2 --no-save \
  --json "$tmp/ext_epochs.json" > /dev/null 2>&1 || fail "--epochs on --resume"
python3 - "$tmp/ext.json" "$tmp/ext_epochs.json" <<'PY'
import json, sys
def run(path):  # the one run of a {context, results} document, with its context
    d = json.load(open(path))
    return {**d["context"], **d["results"][0]}
x = run(sys.argv[1])
assert x["first_step"] == 6 and x["steps"] == 4 and x["options"]["total_steps"] == 10, x["options"]
assert all(lr > 1e-4 for lr in x["lr"][:3]), x["lr"]
e = run(sys.argv[2])  # 2 epochs of 8 batches: 16 steps in all
assert e["first_step"] == 6 and e["steps"] == 10 and e["options"]["total_steps"] == 16, e["steps"]
PY

# --save-every 2 --keep 2 on a 6-step run: the checkpoints of steps 4 and 6 stay (2 is pruned),
# each resumable exactly; --val every 3 steps and at the end.
"$stoker" train "$tmp/d" "${common[@]}" --steps 6 --save "$tmp/p.safetensors" --save-every 2 \
  --keep 2 --val "$tmp/d" --val-every 3 --json "$tmp/p.json" > "$tmp/p.txt" 2>/dev/null ||
  fail "--save-every / --val"
ls "$tmp" | grep -- '-step' > "$tmp/periodic.txt" || true
[ "$(cat "$tmp/periodic.txt" | tr '\n' ' ')" = "p-step00000004.safetensors p-step00000006.safetensors " ] ||
  { cat "$tmp/periodic.txt"; fail "--keep 2 should leave the checkpoints of steps 4 and 6"; }
cmp -s "$tmp/p.safetensors" "$tmp/p-step00000006.safetensors" || fail "step 6 differs from --save"
cmp -s "$tmp/p.safetensors" "$tmp/whole.safetensors" || fail "hooks changed the run's numbers"
"$stoker" train "$tmp/d" --resume "$tmp/p-step00000004.safetensors" --reader threads:2 \
  --save "$tmp/p_resumed.safetensors" > /dev/null 2>&1 || fail "resume a periodic checkpoint"
cmp -s "$tmp/p.safetensors" "$tmp/p_resumed.safetensors" || fail "periodic checkpoint resume differs"
grep -q "^# val: step 3: top-1" "$tmp/p.txt" || { cat "$tmp/p.txt"; fail "no validation at step 3"; }
python3 - "$tmp/p.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["results"][0]["validation"]
assert [x["step"] for x in v] == [3, 6], v
assert all(x["images"] == 128 and 0 <= x["top1"] <= x["top5"] <= 1 for x in v), v
PY

# A diverging run stops at the first non-finite loss, naming the step, and saves nothing.
set +e
"$stoker" train "$tmp/d" --arch resnet18 --size 32 --batch 16 --steps 30 --lr 1e6 \
  --lr-warmup 0 --reader threads:2 --save "$tmp/nan.safetensors" > "$tmp/nan.txt" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || { cat "$tmp/nan.txt"; fail "a diverging run exited $rc, expected 1"; }
grep -q "the loss is -\?\(nan\|inf\) at step [0-9]*: the run diverged" "$tmp/nan.txt" ||
  { cat "$tmp/nan.txt"; fail "no diverged error naming the step"; }
[ ! -e "$tmp/nan.safetensors" ] || fail "a diverged run wrote a checkpoint"

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
# (--timing-warmup: --warmup's older name, still accepted.)
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
assert any(n.startswith("loader thread") for n in names.values()), names
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

# --init from a checkpoint: a fresh run (step 0) starting from those weights. At lr 0 one
# step leaves every trainable tensor as it was loaded, so the saved weights must be the init
# file's bit for bit (BN running statistics do move and are not compared); a run that
# ignored --init would have started from the seed's random weights.
"$stoker" train --synthetic --arch resnet18 --classes 4 --batch 4 --size 32 --steps 1 \
  --lr 0 --weight-decay 0 --init "$tmp/learned.safetensors" --save "$tmp/from_init.safetensors" \
  > "$tmp/init.txt" 2>&1 || { cat "$tmp/init.txt"; fail "--init"; }
grep -q 'from .*learned.safetensors' "$tmp/init.txt" || fail "--init not reported"
python3 - "$tmp/learned.safetensors" "$tmp/from_init.safetensors" <<'PY'
import json, struct, sys
def tensors(path):  # safetensors: u64 header length, JSON header, then the data
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items()}
init, saved = tensors(sys.argv[1]), tensors(sys.argv[2])
weights = [k for k in init if not k.startswith("optim.") and
           not k.endswith(("running_mean", "running_var", "num_batches_tracked"))]
assert len(weights) == 62, len(weights)  # resnet18's trainable tensors
changed = [k for k in weights if saved.get(k) != init[k]]
assert not changed, f"--init: {len(changed)} tensors are not the init file's: {changed[:4]}"
PY

# Errors: exit 1 with the reason (2 for usage), no crash.
expect 2 "neither" train --arch resnet18
expect 2 "both" train "$tmp/d" --synthetic
expect 1 "contradicts" train "$tmp/d" --resume "$tmp/half.safetensors" --lr 0.5
# A run saved by oneDNN 2.6 with --conv-algo fixed:winograd (its stored options rewritten here):
# oneDNN 3 has no x86 Winograd, so the resume is refused with the way out, which then works.
python3 - "$tmp/half.safetensors" "$tmp/wino.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
config = json.loads(header["__metadata__"]["config"])
config["conv_algo"] = "fixed:winograd"
header["__metadata__"]["config"] = json.dumps(config)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
expect 1 "resumes with --conv-algo fixed:direct" train "$tmp/d" --resume "$tmp/wino.safetensors" \
  --steps 1 --no-save
"$stoker" train "$tmp/d" --resume "$tmp/wino.safetensors" --steps 1 --no-save \
  --conv-algo fixed:direct > "$tmp/wino.txt" 2>&1 || { cat "$tmp/wino.txt"; fail "winograd checkpoint resumed as direct"; }
grep -q 'conv fixed:direct' "$tmp/wino.txt" || { cat "$tmp/wino.txt"; fail "the resumed run did not run fixed:direct"; }
expect 2 "save-every with --synthetic needs --save" train --synthetic --save-every 2
expect 2 "val-every needs --val" train --synthetic --val-every 2
expect 1 "missing.safetensors" train --synthetic --init "$tmp/missing.safetensors"
expect 1 "fc.weight" train --synthetic --arch resnet18 --classes 10 --batch 2 \
  --size 32 --steps 1 --init "$tmp/learned.safetensors"
expect 1 "no/such/dir" train --synthetic --arch resnet18 --classes 4 --batch 2 \
  --size 32 --steps 1 --save "$tmp/no/such/dir/x.safetensors"
expect 2 "unknown precision" train --synthetic --precision fp8
expect 2 "expected cpu or cuda" train --synthetic --backend tpu
expect 1 "exhaustive" train --synthetic --arch resnet18 --size 32 --batch 2 \
  --conv-algo exhaustive
expect 1 "not offered by the CPU" train --synthetic --arch resnet18 --size 32 \
  --batch 2 --precision f16
expect 2 "trace-steps" train --synthetic --arch resnet18 --size 32 --batch 2 \
  --trace "$tmp/t.json" --trace-steps 5
if ! grep -q avx512_bf16 /proc/cpuinfo; then
  expect 1 "native bf16" train --synthetic --arch resnet18 --size 32 --batch 2 \
    --precision bf16
fi
expect 1 "value per channel" train --synthetic --arch resnet18 --batch 1 --size 32
expect 2 "label-smoothing" train --synthetic --label-smoothing 2
echo "PASS"
