#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Training throughput, compute only: `stoker train --synthetic` against PyTorch on the same
# model, batch, input size and thread count, repeats interleaved. PyTorch runs in both memory
# formats and with both allocators (glibc, jemalloc), since its figure moves ~2x with them.
# Results: $OUT/<config>-b<B>-r<rep>.json, $OUT/summary.{txt,json}, $OUT/run.log.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/train_vs_pytorch.sh [--reps R] [--steps N] [--warmup W] [--threads T]
                                 [--batches "16 32"] [--arch resnet50] [--size 224]
                                 [--build DIR] [--out DIR]
  --reps R        interleaved repeats, median reported        (default 3)
  --steps N       training steps per run, warm-up included    (default 8)
  --warmup W      first steps left out of the timing          (default 2)
  --threads T     threads for both (OMP_NUM_THREADS too)      (default nproc)
  --batches "B.." batch sizes                                 (default "16 32")
  --arch A        torchvision/stoker model name               (default resnet50)
  --size S        input height = width                        (default 224)
  --build DIR     CMake build dir holding tools/stoker        (default build)
  --out DIR       results directory                 (default out/bench-train-<date>)
env: PYTHON (default /usr/bin/python3, which has Debian's torch),
     JEMALLOC (default /usr/lib/<multiarch>/libjemalloc.so.2)
EOF
}

REPS=3 STEPS=8 WARMUP=2 THREADS=$(nproc) BATCHES="16 32" ARCH=resnet50 SIZE=224
BUILD=build OUT=out/bench-train-$(date +%Y%m%d-%H%M%S)
CLASSES=1000

die() { echo "train_vs_pytorch.sh: error: $*" >&2; exit 1; }
usage_error() { usage >&2; echo "train_vs_pytorch.sh: error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --reps|--steps|--warmup|--threads|--batches|--arch|--size|--build|--out)
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
if [[ ! -x $STOKER ]] || ! "$STOKER" train --help >/dev/null 2>&1; then
  echo "train_vs_pytorch.sh: $STOKER (with 'train') not built; run scripts/run.sh" \
    "or: cmake --build $BUILD --target stoker" >&2
  exit 2
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
ALLOCATORS=(glibc)
if [[ -n ${JEMALLOC:-} && -e $JEMALLOC ]]; then
  ALLOCATORS+=(jemalloc)
else
  JEMALLOC=
fi
# bf16 needs AVX512_BF16; without it stoker refuses (exit 1), so the configs are left out.
PRECISIONS=(f32)
grep -qw avx512_bf16 /proc/cpuinfo && PRECISIONS+=(bf16)

# --- 2. context ----------------------------------------------------------------
mkdir -p "$OUT"
# Stale runs from an earlier call with more repeats or other configs would skew the medians.
rm -f "$OUT"/stoker-*-b*-r*.json "$OUT"/torch-*-b*-r*.json "$OUT"/summary.{txt,json}
exec > >(tee "$OUT/run.log") 2>&1

cpu=$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n1)
cores=$(LC_ALL=C lscpu -p=core,socket | grep -v '^#' | sort -u | wc -l)
dnnl=$(dpkg-query -W -f='${Version}' libdnnl-dev 2>/dev/null || true)
echo "# date: $(date -Is)"
echo "# cpu: ${cpu:-unknown}, $cores physical cores, nproc $(nproc)"
echo "# avx512: $(grep -o -w 'avx512[a-z0-9_]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "# stoker: $("$STOKER" --version 2>&1 | head -n1)${dnnl:+, libdnnl-dev $dnnl}"
echo "# pytorch: $TORCH_VERSION ($PYTHON)"
echo "# jemalloc: ${JEMALLOC:-no (scripts/deps.sh --bench installs libjemalloc2); jemalloc configs skipped}"
echo "# bf16: $( ((${#PRECISIONS[@]} > 1)) && echo yes || echo 'no (no avx512_bf16): stoker bf16 configs skipped')"
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
clean_env=(env -u LD_PRELOAD -u MALLOC_CONF OMP_NUM_THREADS="$THREADS")
# Without decay jemalloc keeps freed pages instead of returning them, so the big
# activation buffers are not page-faulted in again on every step.
jemalloc_env=(env LD_PRELOAD="$JEMALLOC" "MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1"
  OMP_NUM_THREADS="$THREADS")

# Repeat is the outer loop: a slow spell on the machine then hits every config alike.
for ((r = 1; r <= REPS; r++)); do
  for B in "${BATCH_LIST[@]}"; do
    echo "-- rep $r/$REPS, batch $B"
    for P in "${PRECISIONS[@]}"; do
      json=$OUT/stoker-$P-b$B-r$r.json
      run "$json" "${clean_env[@]}" "$STOKER" train --synthetic --arch "$ARCH" \
        --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
        --warmup "$WARMUP" --threads "$THREADS" --precision "$P" --json "$json"
    done
    # Stoker's default lets oneDNN pick Winograd for the large 3x3 convs; direct
    # convolution everywhere is what PyTorch runs, so it is measured too.
    json=$OUT/stoker-f32-direct-b$B-r$r.json
    run "$json" "${clean_env[@]}" "$STOKER" train --synthetic --arch "$ARCH" \
      --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
      --warmup "$WARMUP" --threads "$THREADS" --conv-algo direct --json "$json"
    for A in "${ALLOCATORS[@]}"; do
      envs=("${clean_env[@]}")
      [[ $A == glibc ]] || envs=("${jemalloc_env[@]}")
      for F in contig cl; do
        json=$OUT/torch-$F-$A-b$B-r$r.json
        layout=()
        [[ $F == contig ]] || layout=(--channels-last)
        run "$json" "${envs[@]}" "$PYTHON" "$HERE/torch_train_bench.py" --arch "$ARCH" \
          --classes "$CLASSES" --batch "$B" --size "$SIZE" --steps "$STEPS" \
          --warmup "$WARMUP" --threads "$THREADS" "${layout[@]}" --json "$json"
      done
    done
  done
done

# --- 4. summary ----------------------------------------------------------------------
echo
"$PYTHON" "$HERE/summarize_train.py" "$OUT" --arch "$ARCH" --size "$SIZE"
echo "== done in $((SECONDS / 60)) min $((SECONDS % 60)) s; results in $OUT"
((failures == 0)) || die "$failures run(s) failed; see $OUT/run.log"
