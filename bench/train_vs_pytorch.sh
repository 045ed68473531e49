#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Training throughput, compute only: `stoker train --synthetic` against PyTorch on the same
# model, batch, input size and thread count, repeats interleaved. PyTorch runs in both memory
# formats and with both allocators (glibc, jemalloc), since its figure moves ~2x with them;
# bf16 as PyTorch's autocast. --before adds a second Stoker build (another oneDNN, an older
# commit) to the same interleaved runs; --isa caps both sides' kernels at one ISA.
# Results: $OUT/<config>-b<B>-r<rep>.json, $OUT/summary.{txt,json}, $OUT/run.log.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/train_vs_pytorch.sh [--reps R] [--steps N] [--warmup W] [--threads T]
                                 [--batches "16 32"] [--arch resnet50] [--size 224]
                                 [--build DIR] [--before DIR] [--isa ISA]
                                 [--allocators "glibc jemalloc"] [--out DIR]
  --reps R        interleaved repeats, median reported        (default 3)
  --steps N       training steps per run, warm-up included    (default 8)
  --warmup W      first steps left out of the timing          (default 2)
  --threads T     threads for both (OMP_NUM_THREADS too)      (default nproc)
  --batches "B.." batch sizes                                 (default "16 32")
  --arch A        torchvision/stoker model name               (default resnet50)
  --size S        input height = width                        (default 224)
  --build DIR     CMake build dir holding tools/stoker        (default build)
  --before DIR    a second build, run as stoker-before-*      (default none)
  --isa ISA       ONEDNN_MAX_CPU_ISA for both sides (AVX2, AVX512_CORE, ...); PyTorch's
                  own kernels get the matching ATEN_CPU_CAPABILITY  (default: the CPU's)
  --allocators L  PyTorch's allocators, of glibc jemalloc     (default both)
  --out DIR       results directory                 (default out/bench-train-<date>)
env: PYTHON (default /usr/bin/python3, which has Debian's torch; the current PyTorch is
       PyPI's: PYTHON=~/.cache/stoker-bench/venv/bin/python, bench/peers.sh makes that venv),
     JEMALLOC (default /usr/lib/<multiarch>/libjemalloc.so.2)
EOF
}

REPS=3 STEPS=8 WARMUP=2 THREADS=$(nproc) BATCHES="16 32" ARCH=resnet50 SIZE=224
BUILD=build BEFORE= ISA= WANT_ALLOCATORS="glibc jemalloc" OUT=out/bench-train-$(date +%Y%m%d-%H%M%S)
CLASSES=1000

die() { echo "train_vs_pytorch.sh: error: $*" >&2; exit 1; }
usage_error() { usage >&2; echo "train_vs_pytorch.sh: error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --reps|--steps|--warmup|--threads|--batches|--arch|--size|--build|--before|--isa|--allocators|--out)
      [[ -n ${2:-} ]] || usage_error "$1 needs a value" ;;
    *) usage_error "unknown argument: $1" ;;
  esac
  case "$1" in
    --reps) REPS=$2 ;;
    --steps) STEPS=$2 ;;
    --warmup) WARMUP=$2 ;;
    --threads) THREADS=$2 ;;
    --batches) BATCHES=$2 ;;
    --arch) ARCH=$2 ;;
    --size) SIZE=$2 ;;
    --build) BUILD=$2 ;;
    --before) BEFORE=$2 ;;
    --isa) ISA=$2 ;;
    --allocators) WANT_ALLOCATORS=$2 ;;
    --out) OUT=$2 ;;
  esac
  shift 2
done
read -ra BATCH_LIST <<<"$BATCHES"
((${#BATCH_LIST[@]})) || usage_error "--batches is empty"
for kv in reps:$REPS steps:$STEPS threads:$THREADS size:$SIZE "${BATCH_LIST[@]/#/batches:}"; do
  [[ ${kv#*:} =~ ^[1-9][0-9]*$ ]] || usage_error "--${kv%%:*} must be a positive integer, got '${kv#*:}'"
done
if [[ ! $WARMUP =~ ^[0-9]+$ ]] || ((WARMUP >= STEPS)); then
  usage_error "--warmup must be in [0, --steps), got '$WARMUP' with --steps $STEPS"
fi

# The helpers live next to this script; user paths stay relative to the caller's cwd.
HERE=$(cd "$(dirname "$0")" && pwd)
trap 'echo "train_vs_pytorch.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

# --- 1. what we compare ------------------------------------------------------
STOKER=$BUILD/tools/stoker
STOKERS=(stoker:"$STOKER")
[[ -z $BEFORE ]] || STOKERS+=(stoker-before:"$BEFORE/tools/stoker")
for s in "${STOKERS[@]}"; do
  if [[ ! -x ${s#*:} ]] || ! "${s#*:}" train --help >/dev/null 2>&1; then
    echo "train_vs_pytorch.sh: ${s#*:} (with 'train') not built; run scripts/run.sh" \
      "or: cmake --build ${s#*:} --target stoker" >&2
    exit 2
  fi
done
# The ISA cap reaches oneDNN in both (PyTorch's is built in) and PyTorch's ATen kernels.
isa_env=()
if [[ -n $ISA ]]; then
  [[ $ISA =~ ^[A-Z0-9_]+$ ]] || usage_error "--isa must be a ONEDNN_MAX_CPU_ISA value (AVX2, AVX512_CORE, ...), got '$ISA'"
  aten=avx512
  [[ $ISA == AVX512* || $ISA == AVX10* ]] || aten=avx2
  [[ $ISA == SSE41 || $ISA == AVX ]] && aten=default
  isa_env=(ONEDNN_MAX_CPU_ISA="$ISA" ATEN_CPU_CAPABILITY="$aten")
fi
# Debian's torch is importable only from /usr/bin/python3 (a pyenv python3 may come first on PATH).
PYTHON=${PYTHON:-/usr/bin/python3}
TORCH_VERSION=$("$PYTHON" -c 'import torch, torchvision; print(torch.__version__)' 2>/dev/null) ||
  die "$PYTHON cannot import torch+torchvision; run scripts/deps.sh --bench or set PYTHON"

if [[ -z ${JEMALLOC:-} ]]; then
  for f in /usr/lib/*-linux-gnu/libjemalloc.so.2 /usr/lib/libjemalloc.so.2; do
    [[ -e $f ]] && { JEMALLOC=$f; break; }
  done
fi
ALLOCATORS=()
for A in $WANT_ALLOCATORS; do
  case $A in
    glibc) ALLOCATORS+=(glibc) ;;
    jemalloc) [[ -n ${JEMALLOC:-} && -e $JEMALLOC ]] && ALLOCATORS+=(jemalloc) ;;
    *) usage_error "--allocators: unknown allocator '$A' (glibc, jemalloc)" ;;
  esac
done
[[ " ${ALLOCATORS[*]} " == *" jemalloc "* ]] || JEMALLOC=
((${#ALLOCATORS[@]})) || die "no PyTorch allocator left to run (jemalloc: scripts/deps.sh --bench)"
# bf16 needs AVX512_BF16 (and no ISA cap below it); without it stoker refuses (exit 1), so
# the configs are left out.
PRECISIONS=(f32)
grep -qw avx512_bf16 /proc/cpuinfo && [[ -z $ISA || $ISA == *BF16* || $ISA == *AMX* ]] &&
  PRECISIONS+=(bf16)

# --- 2. context ----------------------------------------------------------------
mkdir -p "$OUT"
# Stale runs from an earlier call with more repeats or other configs would skew the medians.
rm -f "$OUT"/stoker-*-b*-r*.json "$OUT"/torch-*-b*-r*.json "$OUT"/summary.{txt,json}
exec > >(tee "$OUT/run.log") 2>&1

cpu=$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n1)
cores=$(LC_ALL=C lscpu -p=core,socket | grep -v '^#' | sort -u | wc -l)
echo "# date: $(date -Is)"
echo "# cpu: ${cpu:-unknown}, $cores physical cores, nproc $(nproc)"
echo "# avx512: $(grep -o -w 'avx512[a-z0-9_]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for s in "${STOKERS[@]}"; do echo "# ${s%%:*}: $("${s#*:}" --version 2>&1 | head -n1) (${s#*:})"; done
echo "# isa cap: ${ISA:-none}${ISA:+ (${isa_env[*]})}"
echo "# pytorch: $TORCH_VERSION ($PYTHON)"
echo "# jemalloc: ${JEMALLOC:-no (scripts/deps.sh --bench installs libjemalloc2); jemalloc configs skipped}"
echo "# bf16: $( ((${#PRECISIONS[@]} > 1)) && echo yes || echo 'no (no avx512_bf16, or --isa caps below it): bf16 configs skipped')"
echo "# config: $ARCH ${SIZE}px, $CLASSES classes, batches ${BATCH_LIST[*]}, threads $THREADS," \
  "steps $STEPS (first $WARMUP untimed), reps $REPS; out $OUT"

# --- 3. interleaved runs ---------------------------------------------------------
# A failed run is reported and left out of the table, and the script exits 1 at the
# end: one crash should not throw away the rest of a long benchmark.
failures=0
run() { # run JSON CMD...: prints the line that reproduces it, then runs it
  local json=$1 rc=0; shift
  echo "\$ $*"
  "$@" || rc=$?
  if ((rc)); then
    echo "!! exit status $rc: $json not written"
    rm -f "$json"
    failures=$((failures + 1))
  fi
}
# Both sides get the same OpenMP thread count, and neither inherits a caller's preload.
clean_env=(env -u LD_PRELOAD -u MALLOC_CONF OMP_NUM_THREADS="$THREADS" "${isa_env[@]}")
# Without decay jemalloc keeps freed pages instead of returning them, so the big
# activation buffers are not page-faulted in again on every step.
jemalloc_env=(env LD_PRELOAD="$JEMALLOC" "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1"
  OMP_NUM_THREADS="$THREADS" "${isa_env[@]}")

# Repeat is the outer loop: a slow spell on the machine then hits every config alike.
for ((r = 1; r <= REPS; r++)); do
  for B in "${BATCH_LIST[@]}"; do
    echo "-- rep $r/$REPS, batch $B"
    for s in "${STOKERS[@]}"; do
      name=${s%%:*} bin=${s#*:}
      for P in "${PRECISIONS[@]}"; do
        json=$OUT/$name-$P-b$B-r$r.json
        run "$json" "${clean_env[@]}" "$bin" train --synthetic --arch "$ARCH" \
          --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
          --warmup "$WARMUP" --threads "$THREADS" --precision "$P" --json "$json"
      done
      # Stoker's default lets oneDNN pick Winograd for the large 3x3 convs; direct
      # convolution everywhere is what PyTorch runs, so it is measured too.
      json=$OUT/$name-f32-direct-b$B-r$r.json
      run "$json" "${clean_env[@]}" "$bin" train --synthetic --arch "$ARCH" \
        --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
        --warmup "$WARMUP" --threads "$THREADS" --conv-algo direct --json "$json"
    done
    for A in "${ALLOCATORS[@]}"; do
      envs=("${clean_env[@]}")
      [[ $A == glibc ]] || envs=("${jemalloc_env[@]}")
      for P in "${PRECISIONS[@]}"; do
        for F in contig cl; do
          json=$OUT/torch-$F-$A-b$B-r$r.json
          [[ $P == f32 ]] || json=$OUT/torch-$P-$F-$A-b$B-r$r.json
          flags=()
          [[ $F == contig ]] || flags+=(--channels-last)
          [[ $P == f32 ]] || flags+=(--autocast "$P")
          run "$json" "${envs[@]}" "$PYTHON" "$HERE/torch_train_bench.py" --arch "$ARCH" \
            --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
            --warmup "$WARMUP" --threads "$THREADS" "${flags[@]}" --json "$json"
        done
      done
    done
  done
done

# --- 4. summary ----------------------------------------------------------------------
echo
"$PYTHON" "$HERE/summarize_train.py" "$OUT" --arch "$ARCH" --size "$SIZE"
echo "== done in $((SECONDS / 60)) min $((SECONDS % 60)) s; results in $OUT"
((failures == 0)) || die "$failures run(s) failed; see $OUT/run.log"
