#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole GPU evaluation in one call of at most 8 minutes (docs/GPU.md), from the GPU bundle
# on a lent GPU machine, most important first: the CUDA tests (GPU decode's among them);
# Stoker's synthetic ResNet-50 against the machine's PyTorch (eager); the trainer fed by CPU
# decode and by GPU decode (nvJPEG) at 256/512/1024 px; the loader alone, every reader at 1..16
# workers (the scaling figures); one CUPTI trace; a short `stoker study --decode cpu,gpu`.
# Every step and every command in it has a time budget; a failed step is reported and the rest
# goes on. Under --out (default $OUT) at most 7 files, rewritten after every step so a kill loses
# one step at most: gpu_check.log, .json, tests.log, _raw.tar.gz, 2 traces, study_report.html.
#   gpu_check.sh [--dry-run] [--plan] [--out DIR] [--build DIR] [--python PY] [--steps a,b,...]
# --dry-run: the plan check (budgets fit; every GPU command line parses), then every step on
#   the CPU backend with tiny sizes. --plan: print the steps, budgets and GPU commands; run none.
# --build DIR: programs from a build tree instead of the bundle this script sits in.
# Not `set -e`: a failing command is a result to record, and the steps after it still run.
set -uo pipefail

here=$(cd "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/.." && pwd)
dry=0 print_plan=0 build="" python=${PYTHON:-python3} only="" out=${OUT:-}
usage_line() { sed -n '11p' "$0" | sed 's/^# //'; }

# The plan, most important first: step:budget in seconds. Each step must end by the sum of
# its budget and those before it (time an early step leaves passes to the next ones); the
# sum plus $reserve (the summary and the tarball after each step) fits $limit.
# decode: the trainer fed by CPU decode against GPU decode (issue 34); scaling: every reader
# at 1..16 workers, the loader alone; study: `stoker study --consumer cuda:resnet50 --decode
# cpu,gpu`, short (docs/GPU.md says which budgets were cut for it, and why); auto: the trainer
# fed by `--reader auto` (issue 43) at the smallest and largest size, CPU and GPU decode. `compile`
# (torch.compile, 6,668 img/s bf16 on the H200 of 2026-11-26) and `b400` (MLPerf's per-GPU
# batch, 400) run only when --steps names them: the follow-up call's (docs/GPU.md).
plan=(env:15 tests:82 stoker:62 torch:50 decode:67 auto:48 scaling:71 trace:8 study:55)
optional=(compile:85 b400:85)  # outside the plan's budgets; the plan check parses them too
limit=${STOKER_CHECK_SECONDS:-480} reserve=20
all_steps="$(printf '%s ' "${plan[@]%%:*}" "${optional[@]%%:*}")"

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --plan) print_plan=1; shift ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --build) build=$(realpath "${2:?--build needs a build folder}"); shift 2 ;;
    --python) python=${2:?--python needs an interpreter}; shift 2 ;;
    --steps) only=${2:?--steps needs a list of: $all_steps}; shift 2 ;;
    -h | --help) sed -n '11,14p' "$0" | sed 's/^# //'; exit 0 ;;
    *) echo "gpu_check.sh: unknown option '$1'" >&2; usage_line >&2; exit 2 ;;
  esac
done
for s in ${only//,/ }; do
  [[ " $all_steps" == *" $s "* ]] || { echo "gpu_check.sh: --steps: unknown '$s' (known: $all_steps)" >&2; exit 2; }
done
if [ -z "$build" ] && [ ! -x "$here/bin/run" ]; then
  echo "gpu_check.sh: $here is not a GPU bundle (no bin/run): run scripts/gpu_bundle.sh, or give --build DIR" >&2
  exit 2
fi
[ -n "$build" ] && export STOKER_WORKER=$build/loader/stoker-worker

# cmd_of NAME: sets the array `cmd` to the command that runs a carried program: through the
# bundle's launcher, or from the build tree.
cmd_of() {
  if [ -z "$build" ]; then cmd=("$here/bin/run" "$1"); return; fi
  case $1 in
    stoker | stoker-cuda-versions) cmd=("$build/tools/$1") ;;
    *) cmd=("$build/$(prog_dir "$1")/$1") ;;
  esac
}

# prog_dir NAME: the folder of a carried test or bench program, in the bundle as in the build.
prog_dir() { if [ "$1" = gpu_facts ]; then echo bench; else echo tests; fi; }

# have_prog NAME: the bundle or the build tree has this test or bench program.
have_prog() { [ -x "${build:-$here}/$(prog_dir "$1")/$1" ]; }

# say TEXT: a line of the log, in a real run (not while checking or printing the plan).
say() { [ "$mode" = run ] && echo "$@"; return 0; }

# params gpu|cpu: the sizes of every step. gpu: the real check. cpu: --dry-run's rehearsal
# (ResNet-18, batch 2, 32 px, tiny datasets at the real sizes; the CPU backend knows f32 only).
# shellcheck disable=SC2034  # serial_cap_PX are read through ${!cap_var}
params() {
  if [ "$1" = gpu ]; then
    backend=cuda arch=resnet50 batch=256 size=224 device=cuda
    # 5 warm-up steps (planning, graph capture, the loader's prefetch drained), 20 timed.
    steps=25 warmup=5
    # f16-nhwc-graph-convstats: --fusions conv_stats (issue 45's cuDNN frontend graphs), beside
    # the default it must beat before it becomes the default; its cap also holds the graphs'
    # planning (about 20 conv and 15 batch-norm shapes, some compiled at run time by NVRTC).
    # bf16-nhwc without graphs left out for it (6,162 img/s on the H200 of 2026-11-26).
    # f16-nhwc-graph-prologue: conv_stats with conv_prologue (the convs apply the batch norm
    # they alone read; about 100 graphs to plan). tf32-nhwc-graph: f32 batch norms in NHWC on
    # the persistent Ex kernels (bn_start), against torch's tf32 channels_last (3,134 img/s
    # there; Stoker 265 on the plain calls); f16-nhwc without graphs left out for it (6,499
    # against 6,532 with graphs there). torch's bf16 eager (4,690 there: torch runs bf16 batch
    # norm on its own kernels, not cuDNN's) left out for torch's tf32; bf16 stands against
    # torch.compile, and runs in the compile step beside it.
    modes="f16-nhwc-graph f16-nhwc-graph-convstats f16-nhwc-graph-prologue tf32-nhwc-graph"
    run_cap=20 convstats_cap=30 fallback_mode=f16-nhwc-graph compile_modes=bf16-nhwc-graph
    torch_variants=f16-nhwc,tf32-nhwc variant_cap=25
    # MLPerf's per-GPU batch (400; ~7,950 img/s per H200 in MLPerf v4.0), the default path
    # and conv_stats, 25 steps each: about 1.5 s of steps, the rest planning and capture.
    b400_batch=400 b400_modes="f16-nhwc-graph f16-nhwc-graph-prologue" b400_cap=40
    compile_variants=bf16-nhwc-compile compile_cap=65
    # One epoch of 25 batches of 256 per size: no epoch boundary inside a timed run.
    gen_sizes=256,512,1024 classes=10 per_class=640 gen_cap=45
    # CPU decode with threads:16 fed 6,496 / 6,510 / 3,125 img/s at 256 / 512 / 1024 px on
    # 2026-11-26: 25 batches of 256 in 1-2 s, plus start-up.
    decode_reader=threads:16 decode_cap=15 decode_kinds="cpu gpu"
    # --reader auto, 50 steps (2 epochs) with windows of at most 8: a staged search on 16 cores tries
    # 3-6 candidates of 2-9 steps each (docs/CLI.md, Readers).
    auto_steps=50 auto_window=8 auto_cap=10
    # The loader alone, every reader at 1..16 workers, 1 s each past its first batches.
    scale_readers="serial,threads:1,2,4,8,16,processes:1,2,4,8,16,uring:64:1,uring:64:2,uring:64:4,uring:64:8,uring:64:16"
    scale_batch=64 scale_seconds=1 scale_cap=23
    trace_steps=6:8
    # The seed study's figure, short: serial against threads:16, CPU and GPU decode, 3 sizes
    # (12 cells), the trainer's defaults at batch 64, 2 warm-up and 8 timed steps, run once.
    study_consumer=cuda:resnet50 study_decode=cpu,gpu study_readers=serial,threads:16
    study_batch=64 study_steps=8 study_warmup=2 study_cap=50
  else
    backend=cpu arch=resnet18 batch=2 size=32 device=cpu steps=3 warmup=1
    modes="f32" run_cap=60 convstats_cap=60 fallback_mode=f32
    torch_variants=tf32-nchw,bf16-nhwc variant_cap=60
    b400_batch=3 b400_modes="f32" b400_cap=60 compile_modes=f32
    compile_variants=bf16-nhwc-compile compile_cap=60
    gen_sizes=256,512,1024 classes=2 per_class=4 gen_cap=60
    decode_reader=threads:2 decode_cap=60 decode_kinds=cpu  # the CPU backend has no GPU decode
    auto_steps=8 auto_window=2 auto_cap=60
    scale_readers="serial,threads:1,2,processes:1,2,uring:8:1" scale_batch=2 scale_seconds=0.5 scale_cap=60
    trace_steps=1:3
    study_consumer=cpu:resnet18 study_decode=cpu study_readers=serial,threads:2
    study_batch=2 study_steps=2 study_warmup=1 study_cap=120
  fi
}

# mode_args MODE: a synthetic mode's name as `stoker train` options.
mode_args() {
  local m=$1 a=()
  a=(--precision "${m%%-*}")
  [[ $m == *-nhwc* ]] && a+=(--compute-layout nhwc)
  [[ $m == *-nchw* ]] && a+=(--compute-layout nchw)
  [[ $m == *-graph* ]] && a+=(--graph)
  [[ $m == *-convstats ]] && a+=(--fusions bn_relu,bn_add_relu,conv_stats)
  [[ $m == *-prologue ]] && a+=(--fusions bn_relu,bn_add_relu,conv_stats,conv_prologue)
  echo "${a[@]}"
}

# Seconds left before the current step's deadline.
left() { echo $((step_deadline - $(date +%s))); }

# x TAG CAP CMD...: one command of the plan, under CAP seconds and what is left of its step;
# output in $work/TAG.out, a row in runs.tsv (step, tag, exit, seconds, command); 124 when it
# ran out of time. In the plan check (mode=check) the command is validated instead (check_cmd).
x() {
  local tag=$1 cap=$2 rc t0 t
  shift 2
  if [ "$mode" = check ]; then check_cmd "$tag" "$@"; return 0; fi
  t=$(left)
  [ "$cap" -lt "$t" ] && t=$cap
  t0=$(date +%s%N)
  if [ "$t" -le 0 ]; then
    rc=124
    echo "no time left in the step" >"$work/$tag.out"
  else
    # --foreground: the signal goes to the command alone. Without it timeout signals the
    # process group as well, and stoker takes a second SIGTERM as "quit now, save nothing".
    timeout --foreground -k 5 "$t" "$@" >"$work/$tag.out" 2>&1
    rc=$?
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$cur_step" "$tag" "$rc" "$(( ($(date +%s%N) - t0) / 1000000 ))" "$*" \
    >>"$work/runs.tsv"
  return $rc
}

# check_cmd TAG CMD...: does a GPU command line parse? Run on this machine, briefly: a usage
# error (exit 2) fails; a command still running after a few seconds, one that finishes, or one
# that stops only for want of a CUDA device passes. Test drivers list their filtered tests;
# torch_gpu_bench.py validates its arguments (--check).
check_cmd() {
  local tag=$1 rc t0
  t0=$(date +%s%N)
  shift
  local log=$work/check_$tag.out
  case "$*" in
    *torch_gpu_bench.py*) timeout 30 "$@" --check >"$log" 2>&1 ;;
    *--gtest_*)
      local a=() arg
      for arg in "$@"; do [[ $arg == --gtest_output=* ]] || a+=("$arg"); done
      timeout 30 "${a[@]}" --gtest_list_tests >"$log" 2>&1 && grep -q '^  ' "$log" ||
        { echo "no test matches" >>"$log"; false; } ;;
    *) timeout 3 "$@" >"$log" 2>&1 ;;
  esac
  rc=$?
  local verdict=ok
  if [ "$rc" -eq 2 ]; then verdict="usage error"
  elif [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 77 ] && ! grep -q 'no CUDA device' "$log"; then
    verdict="exit $rc"
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$cur_step" "$tag" "$verdict" "$*" "$(( ($(date +%s%N) - t0) / 1000000 ))" \
    >>"$work/check.tsv"
  [ "$verdict" = ok ] || { echo "plan check: $cur_step/$tag: $verdict: $*"; tail -n 3 "$log" | sed 's/^/  /'; }
}

# GPU memory in use, sampled every 100 ms while a run lasts (the whole GPU: the runs are
# sequential, so the peak minus the idle level is that run's footprint; Stoker's JSON and
# torch's allocator give their own figures beside it). mem_start FILE; ...; mem_stop.
mem_pid=""
mem_start() {
  mem_pid=""
  [ "$mode" = run ] && command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$1" 2>/dev/null &
  mem_pid=$!
}
mem_stop() { [ -n "$mem_pid" ] && kill "$mem_pid" 2>/dev/null && wait "$mem_pid" 2>/dev/null; return 0; }

step_env() {
  [ "$mode" = check ] && return 0
  {
    echo "kernel $(uname -r)"
    echo "cores $(nproc)"
    # Whether the cores are SMT siblings decides what "linear in cores" may mean (issue 34).
    echo "cpu_model $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "cpu_topology $(awk '/^physical id/ {p[$4]=1} /^core id/ {c[$4]=1} END {print length(p) " sockets, " length(c) " core ids"}' /proc/cpuinfo) $(grep -c '^processor' /proc/cpuinfo) logical"
    echo "dry_run $dry"
    if command -v nvidia-smi >/dev/null; then
      echo "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | head -1)"
      echo "gpu_idle_mib $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)"
      echo "gpu_clocks $(nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader | head -1)"
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
  timeout "$(left)" "$python" - >"$work/torch_env.json" 2>>"$work/env.txt" <<'EOF'
import json
try:
    import torch
    d = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
         "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        d["gpu"] = torch.cuda.get_device_name(0)
except Exception as e:
    d = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(d))
EOF
  cat "$work/env.txt" "$work/cuda_libs.txt" "$work/torch_env.json"
}

# The CUDA tests, most important first, each with its whole output appended to $out/tests.log
# as it finishes (and gtest JSON in the work folder); 77 = skipped (no device: the dry run).
step_tests() {
  local t cap bad=0 cmd rc
  start_gen
  for t in cuda_backend_test:30 gpu_decode_test:20 backend_conformance_test:75 gpu_host_test:15 \
    collective_test:15 data_parallel_cuda_test:15 gpu_facts:15; do
    cap=${t#*:} t=${t%%:*}
    local args=()
    [ "$t" = gpu_facts ] || args+=(--gtest_output="json:$work/gtest_$t.json")
    # The cuda rows of the conformance suite (the cupti record tests are in gpu_host_test).
    [ "$t" = backend_conformance_test ] && args+=(--gtest_filter='*cuda*')
    [ "$t" = collective_test ] && args+=(--gtest_filter='*/nccl')
    # gpu_facts (a bench program: the facts the first GPU run settles) and gpu_decode_test
    # (nvJPEG's header at build time) only where they were built.
    { [ "$t" = gpu_facts ] || [ "$t" = gpu_decode_test ]; } && ! have_prog "$t" && continue
    cmd_of "$t"
    x "test_$t" "$cap" "${cmd[@]}" "${args[@]}"
    rc=$?
    [ "$mode" = check ] && continue
    [ "$t" = gpu_facts ] && cp "$work/test_$t.out" "$work/gpu_facts.json"
    { echo "== $t ${args[*]} (exit $rc)"; cat "$work/test_$t.out"; } >>"$out/tests.log"
    # The counts and the failed tests' names (the whole output is in tests.log).
    echo "-- $t: exit $rc"
    grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] ' "$work/test_$t.out" | grep -Ev ' ms\)$|^\[  SKIPPED \] [A-Za-z]' |
      sed "s/^/  /" | head -n 12
    printf '%s\t%s\n' "$t" "$rc" >>"$work/tests.tsv"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || bad=1
  done
  step_planted || bad=1
  [ -n "$gen_pid" ] && wait "$gen_pid"
  return $bad
}

# A planted error in a fused op's epilogue must fail the conv_stats conformance row (issue 45):
# STOKER_FE_PLANT=finalize_count makes bn_finalize count n*h*w - 1 elements (the statistics off
# by one element: 1/16 in ResNet-18's last stage at 64 px). Last in the tests step: it takes
# the time the tests leave. Its verdict in planted.tsv and gpu_check.json's `planted`; the
# step fails only when the row passes with the error in.
step_planted() {
  local rc verdict
  cmd_of backend_conformance_test
  x test_planted 20 env STOKER_FE_PLANT=finalize_count "${cmd[@]}" \
    --gtest_filter='*cuda*_conv_stats' --gtest_output="json:$work/gtest_planted.json"
  rc=$?
  [ "$mode" = check ] && return 0
  if grep -q '^\[  FAILED  \] .*conv_stats' "$work/test_planted.out"; then verdict=caught
  elif grep -q '^\[  PASSED  \] [1-9]' "$work/test_planted.out"; then verdict="not caught"
  else verdict="not run"; fi
  printf '%s\t%s\n' "$verdict" "$rc" >"$work/planted.tsv"
  { echo "== planted STOKER_FE_PLANT=finalize_count (exit $rc: $verdict)"; cat "$work/test_planted.out"; } \
    >>"$out/tests.log"
  echo "-- planted bn_finalize count n*h*w - 1: $verdict (exit $rc)"
  [ "$verdict" != "not caught" ]
}

# The loader's datasets are made while the tests run, niced (the tests come first, and they
# are not timed), so that the loader step spends its budget measuring. Its exit: gen.rc.
gen_pid=""
start_gen() {
  [ "$mode" = run ] && { [ -z "$only" ] || [[ ",$only," =~ ,(decode|scaling|study), ]]; } || return 0
  cmd_of stoker
  say "-- gen $gen_sizes: $classes x $per_class images each, in the background"
  (
    x gen "$gen_cap" nice -n 19 "${cmd[@]}" gen "$gen_root" --sizes "$gen_sizes" --classes "$classes" \
      --per-class "$per_class"
    echo $? >"$work/gen.rc"
  ) &
  gen_pid=$!
}

# One Stoker training run: stoker_run TAG CAP ARGS... -> $work/TAG.json (+ TAG.mem samples).
stoker_run() {
  local tag=$1 cap=$2 rc cmd
  shift 2
  cmd_of stoker
  mem_start "$work/$tag.mem"
  x "$tag" "$cap" "${cmd[@]}" train --backend "$backend" --arch "$arch" --batch "$batch" --size "$size" \
    --steps "$steps" --warmup "$warmup" --json "$work/$tag.json" "$@"
  rc=$?
  mem_stop
  # The summary row (header and figures), and any error or interruption line.
  [ "$mode" = run ] && grep -E -A1 '^ +steps +img/s' "$work/$tag.out" | tail -n 2
  [ "$mode" = run ] && grep -E '^stoker: |^# interrupted' "$work/$tag.out" | head -n 3
  return $rc
}

# ResNet-50 b256 224 px on synthetic input, every mode (precision x layout x graph), the ones
# PyTorch is compared with first; no kernel records (--no-gaps), as torch runs without.
step_stoker() {
  local m cap bad=0
  for m in $modes; do
    say "-- stoker $m"
    cap=$run_cap
    [[ $m == *-convstats || $m == *-prologue ]] && cap=$convstats_cap
    # shellcheck disable=SC2046
    stoker_run "stoker_$m" "$cap" --synthetic --no-gaps $(mode_args "$m") || bad=1
  done
  return $bad
}

# The same at MLPerf's per-GPU batch: tags stoker_MODE-bBATCH (the summary compares them with no
# torch variant, and never picks one as the fastest mode: the other steps run at $batch).
step_b400() {
  local m saved=$batch bad=0
  batch=$b400_batch
  for m in $b400_modes; do
    say "-- stoker $m, batch $batch"
    # shellcheck disable=SC2046
    stoker_run "stoker_$m-b$batch" "$b400_cap" --synthetic --no-gaps $(mode_args "$m") || bad=1
  done
  batch=$saved
  return $bad
}

# PyTorch's own on the machine's python3: same model, batch, size and step counts. Eager
# variants in one process (one bounded by variant_cap), torch.compile in its own step.
torch_run() {
  local tag=$1 variants=$2 cap=$3 rc
  mem_start "$work/$tag.mem"
  x "$tag" 600 "$python" "$here/bench/torch_gpu_bench.py" --device "$device" --arch "$arch" \
    --batch "$batch" --size "$size" --steps $((steps - warmup)) --warmup "$warmup" \
    --variants "$variants" --variant-seconds "$cap" --json "$work/$tag.json"
  rc=$?
  mem_stop
  [ "$mode" = run ] && cat "$work/$tag.out"
  return $rc
}
step_torch() { torch_run torch "$torch_variants" "$variant_cap"; }
# torch.compile, beside the Stoker mode it is compared with (bf16 NHWC with graphs).
step_compile() {
  local m bad=0
  for m in $compile_modes; do
    say "-- stoker $m"
    # shellcheck disable=SC2046
    stoker_run "stoker_$m" "$run_cap" --synthetic --no-gaps $(mode_args "$m") || bad=1
  done
  torch_run torch_compile "$compile_variants" "$compile_cap" || bad=1
  return $bad
}

# The fastest synthetic mode measured (a rate the GPU's peak allows), else the fallback.
fastest() {
  local m
  m=$("$python" "$here/bench/gpu_check_summary.py" --work "$work" --fastest 2>/dev/null) || m=""
  echo "${m:-$fallback_mode}"
}

# The generated datasets (made in the background while the tests ran, else now).
need_data() {
  cmd_of stoker
  if [ ! -f "$work/gen.rc" ]; then
    say "-- gen $gen_sizes: $classes x $per_class images each"
    x gen "$gen_cap" "${cmd[@]}" gen "$gen_root" --sizes "$gen_sizes" --classes "$classes" \
      --per-class "$per_class"
    echo $? >"$work/gen.rc"
  fi
  [ "$(cat "$work/gen.rc" 2>/dev/null || echo 0)" = 0 ] || { tail -n 5 "$work/gen.out"; return 1; }
}

# The trainer in the fastest mode fed by CPU decode, then by GPU decode (nvJPEG, --decode
# gpu), with the same reader at each size: img/s, data-wait and kernel-gap shares, CPU cores
# busy, and the GPU decoder's counts. The GPU run at the largest size leaves a trace.
step_decode() {
  local px d tag bad=0 m
  need_data || return 1
  m=$(fastest)
  say "-- the trainer's mode: $m"
  for px in ${gen_sizes//,/ }; do
    for d in $decode_kinds; do
      tag=loader_${px}_${d}-${decode_reader/:/}
      local trace=()
      [ "$d" = gpu ] && [ "$px" = "${gen_sizes##*,}" ] &&
        trace=(--trace "$out/trace_decode_${px}_gpu.json" --trace-steps "$trace_steps")
      say "-- decode $d, $px px, $decode_reader"
      # shellcheck disable=SC2046
      stoker_run "$tag" "$decode_cap" "$data_root/${px}px" --reader "$decode_reader" --decode "$d" \
        --no-save $(mode_args "$m") "${trace[@]}" || bad=1
      [ "$mode" = run ] && grep -E '^# (gpu decode|cpu|decode):' "$work/$tag.out" | sed 's/^/  /'
    done
  done
  return $bad
}

# The trainer fed by --reader auto (issue 43) in the fastest mode, at the smallest and the
# largest size, with CPU and GPU decode: beside the decode step's threads:16 runs (and the
# scaling step's processes:16, the loader alone), its img/s, data wait and cores busy, the
# reader it chose and its search's cost; then threads:16 over as many steps, whose last epoch's
# checksum the summary holds auto's to (the same data whatever reader ran).
step_auto() {
  local px d m bad=0 saved=$steps
  need_data || return 1
  m=$(fastest)
  steps=$auto_steps
  for px in ${gen_sizes%%,*} ${gen_sizes##*,}; do
    for d in $decode_kinds; do
      say "-- reader auto, decode $d, $px px"
      # shellcheck disable=SC2046
      stoker_run "loader_${px}_${d}-auto" "$auto_cap" "$data_root/${px}px" --reader auto \
        --auto-window "$auto_window" --decode "$d" --no-save $(mode_args "$m") || bad=1
      [ "$mode" = run ] && grep -E '^# reader auto: (search|chose)' "$work/loader_${px}_${d}-auto.out" | sed 's/^/  /'
    done
  done
  # The fixed reader over the same steps at the largest size with the last decode kind: the
  # same epoch's checksum as auto's (the summary compares them).
  px=${gen_sizes##*,} d=${decode_kinds##* }
  say "-- $decode_reader, decode $d, $px px, $auto_steps steps (auto's data)"
  # shellcheck disable=SC2046
  stoker_run "loader_${px}_${d}-${decode_reader/:/}-${auto_steps}" "$auto_cap" "$data_root/${px}px" \
    --reader "$decode_reader" --decode "$d" --no-save $(mode_args "$m") || bad=1
  steps=$saved
  return $bad
}

# The loader alone (no trainer) at each size: every reader at 1..16 workers, each measured
# at steady state (past its first batches), with its per-stage times and CPU use: img/s per
# worker against the scaling model (docs/PERFORMANCE.md), and why processes:N falls short.
step_scaling() {
  local px bad=0
  need_data || return 1
  for px in ${gen_sizes//,/ }; do
    x "scaling_$px" "$scale_cap" "${cmd[@]}" bench "$data_root/${px}px" --reader "$scale_readers" \
      --batch "$scale_batch" --size "$size" --seconds "$scale_seconds" \
      --json "$work/scaling_$px.json" || bad=1
    [ "$mode" = run ] && grep -E '^[0-9]+px ' "$work/scaling_$px.out" | awk '{print "  " $1, $2, $3 " img/s"}'
  done
  return $bad
}

# One short traced run of the fastest mode: CUPTI kernel records of 2 steps.
step_trace() {
  local m
  m=$(fastest)
  say "-- traced: $m"
  local saved=$steps
  steps=8
  # shellcheck disable=SC2046
  stoker_run stoker_traced 30 --synthetic $(mode_args "$m") --trace "$out/trace_synthetic.json" \
    --trace-steps "$trace_steps"
  local rc=$?
  steps=$saved
  return $rc
}

# A short `stoker study` (the seed's figure on this GPU): the trainer fed by serial and
# parallel readers, with CPU decode and with GPU decode as one more reader, at every size:
# study.json in the work folder (the tarball), its report beside the logs. A study stopped at
# its cap keeps its finished cells (written after each).
step_study() {
  local rc px data=()
  need_data || return 1
  cmd_of stoker
  for px in ${gen_sizes//,/ }; do data+=("$data_root/${px}px"); done
  x study "$study_cap" "${cmd[@]}" study "${data[@]}" --consumer "$study_consumer" \
    --decode "$study_decode" --reader "$study_readers" --storage local --batch "$study_batch" \
    --size "$size" --steps "$study_steps" --warmup "$study_warmup" --repeats 1 --out "$work/study"
  rc=$?
  [ "$mode" = run ] || return 0
  [ -f "$work/study/report.html" ] && cp "$work/study/report.html" "$out/study_report.html"
  grep -vE '^\[' "$work/study.out" | tail -n 20 | sed 's/^/  /'
  return $rc
}

# pack: the summary JSON and the tarball of the work folder (datasets left out), after every
# step, so whatever stops the check keeps every finished step.
pack() {
  "$python" "$here/bench/gpu_check_summary.py" --work "$work" --out "$out/gpu_check.json" \
    --dry-run "$dry" --seconds $(($(date +%s) - start)) --limit "$limit" "$@"
  local rc=$?
  tar -C "$work" --exclude=./data --exclude=./check -czf "$out/gpu_check_raw.tar.gz.tmp" . 2>/dev/null &&
    mv "$out/gpu_check_raw.tar.gz.tmp" "$out/gpu_check_raw.tar.gz"
  return $rc
}

# step NAME: runs step_NAME until its deadline, records status and time (steps.tsv), packs.
step() {
  local name=$1 budget=$2 rc t0 status
  cum=$((cum + budget))
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return; fi
  cur_step=$name
  if [ "$mode" = check ]; then step_deadline=$(($(date +%s) + 600)); "step_$name"; return; fi
  t0=$(date +%s)
  step_deadline=$((start + cum * scale))
  [ "$step_deadline" -le $((start + (limit - reserve) * scale)) ] || step_deadline=$((start + (limit - reserve) * scale))
  if [ $((step_deadline - t0)) -lt 5 ]; then
    printf '%s\tskipped\t0\t%s\tno time left\n' "$name" "$budget" >>"$work/steps.tsv"
    echo "== gpu_check: $name: skipped, no time left"
    return
  fi
  echo "== gpu_check: $name (budget ${budget}s, until $((step_deadline - start))s; $((t0 - start))s in)"
  "step_$name"
  rc=$?
  status=ok
  [ "$rc" -ne 0 ] && status=failed
  [ "$(date +%s)" -ge "$step_deadline" ] && [ "$rc" -ne 0 ] && status=timeout
  printf '%s\t%s\t%s\t%s\texit %s\n' "$name" "$status" "$(($(date +%s) - t0))" "$budget" "$rc" \
    >>"$work/steps.tsv"
  echo "== gpu_check: $name: $status in $(($(date +%s) - t0))s"
  pack --quiet >/dev/null
}

run_plan() {
  local s
  cum=0
  for s in "${plan[@]}"; do step "${s%%:*}" "${s##*:}"; done
  # Steps outside the default plan: only when --steps names them (the plan check: always).
  for s in "${optional[@]}"; do
    [[ $mode == check || ",$only," == *",${s%%:*},"* ]] && step "${s%%:*}" "${s##*:}"
  done
  return 0
}

# The plan check: the budgets fit, and every command of the GPU plan parses here (the
# datasets it reads are made tiny, at the real sizes).
plan_check() {
  local s sum=0 saved_work=$work
  for s in "${plan[@]}"; do sum=$((sum + ${s##*:})); done
  echo "plan: ${plan[*]} = ${sum}s + ${reserve}s reserve, limit ${limit}s"
  printf 'budget\t%s\t%s\t%s\n' "$sum" "$reserve" "$limit" >"$saved_work/check.tsv"
  [ $((sum + reserve)) -le "$limit" ] || { echo "plan check: budgets ${sum}s + ${reserve}s exceed ${limit}s"; return 1; }
  work=$saved_work/check
  mkdir -p "$work"
  mode=check
  params gpu
  cmd_of stoker
  data_root=$work/data gen_root=$work/gen
  "${cmd[@]}" gen "$data_root" --sizes "$gen_sizes" --classes 2 --per-class 1 >"$work/gen_tiny.out" 2>&1 ||
    { echo "plan check: cannot make its tiny datasets"; cat "$work/gen_tiny.out"; return 1; }
  local out_real=$out
  out=$work  # traces a command would write stay in the check folder
  run_plan
  out=$out_real
  cat "$work/check.tsv" >>"$saved_work/check.tsv"
  work=$saved_work
  local n bad
  n=$(grep -vc '^budget' "$work/check.tsv")
  bad=$(awk -F'\t' '$1 != "budget" && $3 != "ok"' "$work/check.tsv" | wc -l)
  echo "plan check: $n GPU commands, $bad not parsing; budgets ${sum}s + ${reserve}s <= ${limit}s"
  [ "$bad" -eq 0 ]
}

if [ "$print_plan" = 1 ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  mode=print
  params gpu
  data_root=$work/data gen_root=$work/data out=${out:-\$OUT}
  check_cmd() { printf '  %-28s %s\n' "$1" "${*:2}"; }
  mode=check
  cum=0
  for s in "${plan[@]}"; do
    echo "${s%%:*} (${s##*:} s)"
    step "${s%%:*}" "${s##*:}"
  done | sed "s#$work#\$WORK#g; s#$here#\$BUNDLE#g"
  sum=0
  for s in "${plan[@]}"; do sum=$((sum + ${s##*:})); done
  echo "total: $sum s of budgets + $reserve s reserve for the summaries; limit $limit s"
  for s in "${optional[@]}"; do
    echo "${s%%:*} (${s##*:} s, only when --steps names it)"
    step "${s%%:*}" "${s##*:}"
  done | sed "s#$work#\$WORK#g; s#$here#\$BUNDLE#g"
  exit 0
fi

[ -n "$out" ] || { echo "gpu_check.sh: give --out DIR (or set OUT)" >&2; exit 2; }
mkdir -p "$out" || exit 1
out=$(realpath "$out")
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
exec > >(tee "$out/gpu_check.log") 2>&1
tee_pid=$!
# On the way out: the work folder goes, and tee is waited for, so the log is whole on disk.
trap 'mem_stop; rm -rf "$work"; exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT
: >"$out/tests.log"
start=$(date +%s)
echo "gpu_check: $( ((dry)) && echo "DRY RUN (plan check, then the cpu backend, tiny sizes)" || echo "GPU run")" \
  "from ${build:-$here}; results in $out"

check_rc=0 scale=1
if [ "$dry" = 1 ]; then
  # The rehearsal runs the same deadlines, stretched: this machine's CPUs are slower and shared.
  scale=4
  plan_check
  check_rc=$?
  params cpu
else
  params gpu
fi
mode=run data_root=$work/data gen_root=$work/data
run_plan
pack
summary_rc=$?
echo "gpu_check: done in $(($(date +%s) - start))s; $(find "$out" -maxdepth 1 -type f | wc -l) files in $out"
grep -q $'\tfailed\t\|\ttimeout\t' "$work/steps.tsv" 2>/dev/null && exit 1
[ "$check_rc" -eq 0 ] || exit 1
exit $summary_rc
