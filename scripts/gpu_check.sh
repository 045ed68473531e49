#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole GPU evaluation in one call (docs/GPU.md), from the GPU bundle on the GPU machine:
# environment and CUDA library versions, the CUDA tests and the conformance suite's cuda
# rows, ResNet-50 b256 224px synthetic on Stoker (tf32/f16/bf16 x NCHW/NHWC x graphs) and
# on the machine's PyTorch side by side, and loader-fed runs at 256/512/1024 px over serial,
# threads:N and processes:N with data-wait and kernel-gap shares beside `bench --emulate`'s
# prediction. Each step has a time budget (the whole fits 9 minutes); a failed step is
# reported and the rest goes on. Writes at most 8 files under --out (default $OUT):
# gpu_check.json, gpu_check.log and a few Chrome traces.
#   gpu_check.sh [--dry-run] [--out DIR] [--build DIR] [--python PY] [--steps a,b,...]
# --dry-run: every step on the CPU backend with tiny sizes (a rehearsal without a GPU).
# --build DIR: programs from a build tree instead of the bundle this script sits in.
set -uo pipefail

here=$(cd "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/.." && pwd)
dry=0 build="" python=${PYTHON:-python3} only="" out=${OUT:-}
all_steps="env tests stoker torch loader"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --build) build=$(realpath "${2:?--build needs a build folder}"); shift 2 ;;
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --steps) only=${2:?--steps needs a list of: $all_steps}; shift 2 ;;
    -h | --help) sed -n '11,13p' "$0" | sed 's/^# //'; exit 0 ;;
    *) echo "gpu_check.sh: unknown option '$1'" >&2; sed -n '11p' "$0" | sed 's/^# //' >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "gpu_check.sh: give --out DIR (or set OUT)" >&2; exit 2; }
for s in ${only//,/ }; do
  [[ " $all_steps " == *" $s "* ]] || { echo "gpu_check.sh: --steps: unknown '$s' (known: $all_steps)" >&2; exit 2; }
done
if [ -z "$build" ] && [ ! -x "$here/bin/run" ]; then
  echo "gpu_check.sh: $here is not a GPU bundle (no bin/run): run scripts/gpu_bundle.sh, or give --build DIR" >&2
  exit 2
fi
mkdir -p "$out" || exit 1
out=$(realpath "$out")
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out/gpu_check.log") 2>&1
start=$(date +%s)
deadline=$((start + ${STOKER_CHECK_SECONDS:-530}))  # the device tool allows 600 s a command

# cmd_of NAME: sets the array `cmd` to the command that runs a carried program: through the
# bundle's launcher, or from the build tree.
cmd_of() {
  if [ -z "$build" ]; then cmd=("$here/bin/run" "$1"); return; fi
  case $1 in
    stoker | stoker-cuda-versions) cmd=("$build/tools/$1") ;;
    *) cmd=("$build/tests/$1") ;;
  esac
}
[ -n "$build" ] && export STOKER_WORKER=$build/loader/stoker-worker

# Runs a command under what is left of the step's budget; 124 when it ran out.
tmo() {
  local left=$((step_deadline - $(date +%s)))
  [ "$left" -gt 0 ] || return 124
  timeout -k 5 "$left" "$@"
}
# step NAME BUDGET_S: runs step_NAME with a deadline, records status and time (steps.tsv).
step() {
  local name=$1 budget=$2 rc t0 status
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return; fi
  t0=$(date +%s)
  local left=$((deadline - t0))
  if [ "$left" -lt 10 ]; then
    printf '%s\tskipped\t0\t%s\tno time left in the 9 minutes\n' "$name" "$budget" >>"$work/steps.tsv"
    return
  fi
  [ "$budget" -le "$left" ] || budget=$left
  step_deadline=$((t0 + budget))
  echo "== gpu_check: $name (budget ${budget}s, $((t0 - start))s in)"
  "step_$name"
  rc=$?
  status=ok
  [ "$rc" -ne 0 ] && status=failed
  [ "$(date +%s)" -ge "$step_deadline" ] && [ "$rc" -ne 0 ] && status=timeout
  printf '%s\t%s\t%s\t%s\texit %s\n' "$name" "$status" "$(($(date +%s) - t0))" "$budget" "$rc" \
    >>"$work/steps.tsv"
  echo "== gpu_check: $name: $status in $(($(date +%s) - t0))s"
}

# GPU memory in use, sampled every 100 ms while a run lasts (whole-GPU figure: the runs are
# sequential, so the peak minus the idle level is that run's footprint, Stoker's and torch's
# measured the same way). mem_start FILE; ...; mem_stop.
mem_start() {
  mem_pid=""
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null &
  mem_pid=$!
}
mem_stop() { [ -n "$mem_pid" ] && kill "$mem_pid" 2>/dev/null && wait "$mem_pid" 2>/dev/null; return 0; }

step_env() {
  {
    echo "kernel $(uname -r)"
    echo "cores $(nproc)"
    echo "dry_run $dry"
    if command -v nvidia-smi >/dev/null; then
      echo "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | head -1)"
      echo "gpu_idle_mib $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)"
    else
      echo "gpu none (no nvidia-smi)"
    fi
    if dd if=/dev/zero of="$work/odirect" bs=4096 count=1 oflag=direct 2>/dev/null; then
      echo "o_direct works"
    else
      echo "o_direct refused by this file system"
    fi
  } >"$work/env.txt"
  if [ -z "$build" ]; then
    "$here/bin/run" --check >/dev/null 2>"$work/cuda_libs.txt"
  else
    echo "(a build tree: the launcher's table of CUDA libraries is the bundle's)" >"$work/cuda_libs.txt"
  fi
  tmo "$python" - >"$work/torch_env.json" 2>>"$work/env.txt" <<'EOF'
import json
try:
    import torch
    d = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
         "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        d["gpu"] = torch.cuda.get_device_name(0)
        d["cublas_via_torch"] = "see the launcher's table"
except Exception as e:
    d = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(d))
EOF
  cat "$work/env.txt" "$work/cuda_libs.txt" "$work/torch_env.json"
}

# The CUDA tests (gtest JSON each), the conformance suite's cuda rows and the collective
# suite's nccl rows (one rank); 77 = skipped.
step_tests() {
  local t rc bad=0 cmd
  for t in gpu_host_test cuda_backend_test backend_conformance_test collective_test \
    data_parallel_cuda_test; do
    local args=(--gtest_output="json:$work/gtest_$t.json")
    # The cuda rows only (none without a device: the dry run rehearses the call).
    [ "$t" = backend_conformance_test ] && args+=(--gtest_filter='*cuda*')
    [ "$t" = collective_test ] && args+=(--gtest_filter='*/nccl')
    cmd_of "$t"
    echo "-- $t ${args[*]:1}"
    tmo "${cmd[@]}" "${args[@]}" >"$work/$t.out" 2>&1
    rc=$?
    tail -n 15 "$work/$t.out"
    printf '%s\t%s\n' "$t" "$rc" >>"$work/tests.tsv"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || bad=1
  done
  return $bad
}

# Sizes of the synthetic comparison and the loader-fed runs; the dry run's are tiny.
if [ "$dry" = 1 ]; then
  # The CPU is far slower than a GPU: two sizes, one timed step a run, and the emulated
  # accelerator at a fixed 500 img/s rather than the CPU's own rate.
  backend=cpu arch=resnet18 batch=2 size=32 steps=2 warmup=1 torch_device=cpu
  gen_sizes="32,48" per_class=4 classes=2 readers="serial threads:2 processes:2"
  loader_steps=1 serial_steps=1 dry_rate=500
else
  backend=cuda arch=resnet50 batch=256 size=224 steps=20 warmup=3 torch_device=cuda
  gen_sizes="256,512,1024" per_class=256 classes=10
  readers="serial processes:16 threads:16 processes:8 threads:8 processes:4 threads:4"
  loader_steps=10 serial_steps=3
fi

# One Stoker training run: stoker_run TAG ARGS... -> $work/stoker_TAG.json (+ .mem samples).
stoker_run() {
  local tag=$1 cmd rc
  shift
  cmd_of stoker
  mem_start "$work/stoker_$tag.mem"
  tmo "${cmd[@]}" train --backend "$backend" --arch "$arch" --batch "$batch" --size "$size" \
    --json "$work/stoker_$tag.json" "$@" >"$work/stoker_$tag.out" 2>&1
  rc=$?
  mem_stop
  tail -n 3 "$work/stoker_$tag.out"
  printf '%s\t%s\t%s\n' "$tag" "$rc" "$*" >>"$work/stoker_runs.tsv"
  return $rc
}

# ResNet-50 b256 224px on synthetic input: precision x layout x graphs.
step_stoker() {
  local p l g bad=0 extra tag
  for p in tf32 f16 bf16; do
    for l in nchw nhwc; do
      for g in off on; do
        tag=$p-$l-graph$g
        extra=(--precision "$p" --compute-layout "$l")
        [ "$g" = on ] && extra+=(--graph)
        if [ "$dry" = 1 ]; then
          # The CPU has no tf32/f16, no compute layout and no graphs: one run stands for all.
          [ "$tag" = tf32-nchw-graphoff ] || { printf '%s\tskipped\tdry run: cuda only\n' "$tag" >>"$work/stoker_runs.tsv"; continue; }
          extra=(--precision f32)
        fi
        echo "-- stoker $tag"
        stoker_run "$tag" --synthetic --steps "$steps" --timing-warmup "$warmup" --no-gaps \
          "${extra[@]}" || bad=1
      done
    done
  done
  # One traced run with kernel gaps (CUPTI), the fastest mode, for the trace file.
  local traced=bf16-nhwc-graphon
  [ "$dry" = 1 ] && traced=f32
  echo "-- stoker traced ($traced)"
  extra=(--precision bf16 --compute-layout nhwc --graph)
  [ "$dry" = 1 ] && extra=(--precision f32)
  stoker_run traced --synthetic --steps "$steps" --timing-warmup "$warmup" "${extra[@]}" \
    --trace "$out/trace_synthetic.json" --trace-steps 2:4 || bad=1
  return $bad
}

# PyTorch's own, in the machine's python3, same model, batch and image size.
step_torch() {
  local variants="" rc
  [ "$dry" = 1 ] && variants="--variants tf32-nchw,bf16-nhwc"
  mem_start "$work/torch.mem"
  # shellcheck disable=SC2086
  tmo "$python" "$here/bench/torch_gpu_bench.py" --device "$torch_device" --arch "$arch" \
    --batch "$batch" --size "$size" --steps "$steps" --warmup "$warmup" $variants \
    --json "$work/torch.json"
  rc=$?
  mem_stop
  return $rc
}

# Loader-fed: datasets made here by `stoker gen`; for each size and reader a training run
# (data-wait and gap shares) and `bench --emulate` at the rate Stoker computes alone.
step_loader() {
  local cmd rc bad=0 px r tag rate n
  cmd_of stoker
  echo "-- gen $gen_sizes"
  tmo "${cmd[@]}" gen "$work/data" --sizes "$gen_sizes" --classes "$classes" \
    --per-class "$per_class" >"$work/gen.out" 2>&1 || { tail -n 5 "$work/gen.out"; return 1; }
  # io_uring: a 4.4 kernel (gVisor) has none; the reader must say so and fall back.
  tmo "${cmd[@]}" bench "$work/data/${gen_sizes%%,*}px" --reader uring:8 --batch 2 --size 32 \
    --max-batches 2 >"$work/uring.out" 2>&1
  rate=$("$python" "$here/bench/gpu_check_summary.py" --rate "$work/stoker_bf16-nhwc-graphon.json" \
    "$work/stoker_tf32-nchw-graphoff.json" 2>/dev/null)
  [ -n "$rate" ] || rate=1000
  [ "$dry" = 1 ] && rate=$dry_rate
  for px in ${gen_sizes//,/ }; do
    for r in $readers; do
      tag=${px}_${r/:/}
      n=$loader_steps
      [ "$r" = serial ] && n=$serial_steps
      local trace=()
      # Traces of the largest size, serial against the first parallel reader: 2 files.
      local traced_readers
      traced_readers=" $(cut -d" " -f1-2 <<<"$readers") "
      [ "$px" = "${gen_sizes##*,}" ] && [[ $traced_readers == *" $r "* ]] &&
        trace=(--trace "$out/trace_loader_${tag}.json" --trace-steps 1:3)
      echo "-- loader $tag"
      local extra=(--precision bf16 --compute-layout nhwc)
      [ "$dry" = 1 ] && extra=(--precision f32)
      stoker_run "loader_$tag" "$work/data/${px}px" --reader "$r" --steps $((n + 1)) --timing-warmup 1 \
        "${extra[@]}" "${trace[@]}" || bad=1
      tmo "${cmd[@]}" bench "$work/data/${px}px" --reader "$r" --batch "$batch" --size "$size" \
        --emulate "${rate}img/s" --max-batches $((n + 1)) --json "$work/bench_$tag.json" \
        >"$work/bench_$tag.out" 2>&1 || { tail -n 3 "$work/bench_$tag.out"; bad=1; }
    done
  done
  return $bad
}

echo "gpu_check: $( ((dry)) && echo "DRY RUN (cpu backend, tiny sizes)" || echo "GPU run") from" \
  "${build:-$here}; results in $out"
step env 30
step tests 100
step stoker 160
step torch 110
step loader 180
"$python" "$here/bench/gpu_check_summary.py" --work "$work" --out "$out/gpu_check.json" \
  --dry-run "$dry" --seconds $(($(date +%s) - start))
summary_rc=$?
echo "gpu_check: done in $(($(date +%s) - start))s; $(ls "$out" | wc -l) files in $out"
grep -q $'\tfailed\t\|\ttimeout\t' "$work/steps.tsv" && exit 1
exit $summary_rc
