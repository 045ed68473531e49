#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every command's --json context carries the machine under the same keys with the same values
# (machine_context(), common/system_info.h): bench, probe, train, eval, study and, when built,
# stoker-allreduce. And bench's context is its loader options as given, every one
# (loader_options_json): --jitter, --grayscale and --resize-filter included.
# Usage: json_context_test.sh STOKER [STOKER_ALLREDUCE MPIRUN_LOCAL]
set -euo pipefail
stoker=$1
allreduce=${2:-}
mpirun_local=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=1

"$stoker" gen "$tmp/d" --sizes 32 --classes 2 --per-class 4 --seed 3 > /dev/null 2>&1
"$stoker" bench "$tmp/d" --reader serial --batch 4 --size 16 --epochs 1 \
  --jitter 0.4,0.4,0.4,0.1 --grayscale 0.2 --resize-filter antialias \
  --json "$tmp/bench.json" > "$tmp/bench.out" 2>&1 || fail "bench: $(tail -5 "$tmp/bench.out")"
"$stoker" probe "$tmp/d" --reader serial --json "$tmp/probe.json" > "$tmp/probe.out" 2>&1 ||
  fail "probe: $(tail -5 "$tmp/probe.out")"
"$stoker" train "$tmp/d" --arch resnet18 --size 16 --batch 4 --steps 1 --threads 1 \
  --reader serial --save "$tmp/ck.safetensors" --json "$tmp/train.json" > "$tmp/train.out" 2>&1 ||
  fail "train: $(tail -5 "$tmp/train.out")"
"$stoker" eval "$tmp/d" --checkpoint "$tmp/ck.safetensors" --batch 4 --threads 1 \
  --reader serial --json "$tmp/eval.json" > "$tmp/eval.out" 2>&1 ||
  fail "eval: $(tail -5 "$tmp/eval.out")"
"$stoker" study "$tmp/d" --readers serial --storage local --consumer emulated:4000 \
  --steps 1 --warmup 0 --batch 4 --size 16 --repeats 1 --out "$tmp/s" > "$tmp/study.out" 2>&1 ||
  fail "study: $(tail -5 "$tmp/study.out")"
docs=("$tmp/bench.json" "$tmp/probe.json" "$tmp/train.json" "$tmp/eval.json" "$tmp/s/study.json")
if [ -n "$allreduce" ]; then
  timeout 120 "$mpirun_local" 1 "$allreduce" --mib 1 --warmup 0 --repeats 1 \
    --json "$tmp/allreduce.json" > "$tmp/allreduce.out" 2>&1 ||
    fail "stoker-allreduce: $(tail -5 "$tmp/allreduce.out")"
  docs+=("$tmp/allreduce.json")
fi

python3 - "${docs[@]}" <<'PY'
import json, sys
machine = {"cpu", "online_cpus", "memory_bytes", "kernel"}
seen = {}
for path in sys.argv[1:]:
    ctx = json.load(open(path))["context"]
    missing = machine - set(ctx)
    assert not missing, f"{ctx.get('tool')}: no {sorted(missing)} in its context"
    assert "machine" not in ctx and "cores" not in ctx, f"{ctx['tool']}: an older machine key"
    seen[ctx["tool"]] = {k: ctx[k] for k in machine}
assert len({json.dumps(v, sort_keys=True) for v in seen.values()}) == 1, seen
assert isinstance(next(iter(seen.values()))["memory_bytes"], int)

bench = json.load(open(sys.argv[1]))["context"]
assert bench["jitter"] == "0.4,0.4,0.4,0.1", bench
assert bench["grayscale"] == 0.2 and bench["resize_filter"] == "antialias", bench
assert bench["batch"] == 4 and bench["size"] == 16 and bench["height"] == 0, bench
# The stored run options of train use the same keys and values as bench's context.
opts = json.load(open(sys.argv[3]))["context"]["options"]
for key in ("transform", "flip", "seed", "no_shuffle", "layout", "mean", "std", "jitter"):
    assert key in opts and key in bench, key
print("machine keys alike in", sorted(seen))
PY
