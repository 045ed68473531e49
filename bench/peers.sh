#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stoker against its current peers on the CPU, side by side (issue 10): PyTorch 2 +
# torchvision's DataLoader, DALI in CPU-only mode and FFCV, all from PyPI in a venv of their
# own, and the decode-only limit (libjpeg-turbo decoding only the crop window, one core, files
# in memory). Same batch, transforms, output and cores for all. Results: $OUT/results.jsonl,
# $OUT/stoker-*.json, $OUT/summary.md, $OUT/run.log. Not a test: nothing here asserts.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/peers.sh [options]
  --build DIR        CMake build dir; tools/stoker is built there if absent    (default build)
  --data DIR         `stoker gen` root with 256px/ 512px/ 1024px/, made if absent
                     (10 classes x 250 images, seed 1: loader_vs_torchvision.sh's set)
                                                                           (default data/bench)
  --per-class N      images per class when --data is generated                (default 250)
  --classes C        classes when --data is generated                         (default 10)
  --sizes LIST       which of --data's resolutions                (default 256,512,1024)
  --real DIR         a real-photo ImageFolder; without it one is derived from opencv-doc's
                     photographs into data/peers-real (bench/make_real_photos.py)
  --real-count N     images of the derived real-photo set                     (default 2000)
  --no-real          leave the real-photo set out
  --peers LIST       any of stoker,torch,dali,ffcv,limit          (default all five)
  --threads T        cores: DataLoader workers, DALI/FFCV threads, threads:T  (default nproc)
  --repeats R        interleaved repeats, median reported                     (default 3)
  --warmup W         batches before a peer's clock starts                     (default 3)
  --batches N        timed batches per run, at most                           (default 20)
  --seconds S        a peer run stops timing after S s (at least 2 batches)   (default 2)
  --venv DIR         the peers' venv, made if absent   (default $STOKER_BENCH_VENV or
                     ~/.cache/stoker-bench/venv: outside the tree, reused between runs)
  --no-install       use the venv as it is (no pip)
  --out DIR          results                                     (default out/bench-peers)
  -h, --help         this text
EOF
}

BUILD=build DATA=data/bench PER_CLASS=250 CLASSES=10 SIZES=256,512,1024 REAL= REAL_COUNT=2000
USE_REAL=1 PEERS=stoker,torch,dali,ffcv,limit THREADS=$(nproc) REPEATS=3 WARMUP=3 BATCHES=20
RUN_SECONDS=2 VENV=${STOKER_BENCH_VENV:-$HOME/.cache/stoker-bench/venv} INSTALL=1
OUT=out/bench-peers BATCH=64

die() { echo "peers.sh: error: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --data) DATA=${2:?--data needs a value}; shift 2 ;;
    --per-class) PER_CLASS=${2:?--per-class needs a value}; shift 2 ;;
    --classes) CLASSES=${2:?--classes needs a value}; shift 2 ;;
    --sizes) SIZES=${2:?--sizes needs a value}; shift 2 ;;
    --real) REAL=${2:?--real needs a value}; shift 2 ;;
    --real-count) REAL_COUNT=${2:?--real-count needs a value}; shift 2 ;;
    --no-real) USE_REAL=0; shift ;;
    --peers) PEERS=${2:?--peers needs a value}; shift 2 ;;
    --threads) THREADS=${2:?--threads needs a value}; shift 2 ;;
    --repeats) REPEATS=${2:?--repeats needs a value}; shift 2 ;;
    --warmup) WARMUP=${2:?--warmup needs a value}; shift 2 ;;
    --batches) BATCHES=${2:?--batches needs a value}; shift 2 ;;
    --seconds) RUN_SECONDS=${2:?--seconds needs a value}; shift 2 ;;
    --venv) VENV=${2:?--venv needs a value}; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --out) OUT=${2:?--out needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; echo "peers.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
for kv in per-class:$PER_CLASS classes:$CLASSES real-count:$REAL_COUNT threads:$THREADS \
  repeats:$REPEATS warmup:$WARMUP batches:$BATCHES; do
  [[ ${kv#*:} =~ ^[1-9][0-9]*$ ]] || { echo "peers.sh: --${kv%%:*} must be a positive integer, got '${kv#*:}'" >&2; exit 2; }
done
[[ $RUN_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "peers.sh: --seconds must be a number, got '$RUN_SECONDS'" >&2; exit 2; }
IFS=, read -ra PEER_LIST <<<"$PEERS"
for p in "${PEER_LIST[@]}"; do
  [[ $p =~ ^(stoker|torch|dali|ffcv|limit)$ ]] || { echo "peers.sh: unknown peer '$p' (stoker, torch, dali, ffcv, limit)" >&2; exit 2; }
done
IFS=, read -ra SIZE_LIST <<<"$SIZES"
want() { [[ ,$PEERS, == *,$1,* ]]; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
trap 'echo "peers.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
mkdir -p "$OUT"
rm -f "$OUT"/results.jsonl "$OUT"/stoker-*.json "$OUT"/summary.md "$OUT"/*.err
exec > >(tee "$OUT/run.log") 2>&1
echo "== $(date -u +%FT%TZ) peers=$PEERS threads=$THREADS repeats=$REPEATS warmup=$WARMUP batches=$BATCHES seconds=$RUN_SECONDS"

# Appends a failure to the results: which tool and run, and the last lines of its stderr,
# so the summary can quote the exact error.
record_failure() {  # tool variant dataset stage errfile
  /usr/bin/python3 - "$@" "$OUT/results.jsonl" <<'PY'
import json, sys
tool, variant, dataset, stage, errfile, out = sys.argv[1:7]
lines = open(errfile, errors="replace").read().strip().splitlines()
with open(out, "a") as f:
    f.write(json.dumps({"tool": tool, "variant": variant, "dataset": dataset, "stage": stage,
                        "error": "\n".join(lines[-25:])}) + "\n")
PY
  echo "   !! $1 $2 $3: $4 failed (last lines in $5):"
  tail -n 3 "$5" | sed 's/^/      /'
}

# --- 1. Stoker, and the decode-limit program against its libraries -------------
STOKER=$BUILD/tools/stoker
if [[ ! -x $STOKER ]]; then
  echo "== building $STOKER"
  [[ -f $BUILD/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" --target stoker
fi
LIMIT=$BUILD/bench/decode_limit
if want limit && [[ ! -x $LIMIT || $HERE/decode_limit.cc -nt $LIMIT || $BUILD/augment/libstoker_augment.a -nt $LIMIT ]]; then
  echo "== building $LIMIT"
  mkdir -p "$BUILD/bench"
  # The product's static libraries give the crop window and DCT scale (one place for them).
  g++ -O2 -std=c++20 -Wall -Wextra -I"$ROOT" $(pkg-config --cflags-only-I opencv4 | sed 's/-I/-isystem /g') \
    "$HERE/decode_limit.cc" "$BUILD/augment/libstoker_augment.a" "$BUILD/common/libstoker_common.a" \
    $(pkg-config --libs opencv4 libjpeg fmt) -o "$LIMIT"
fi

# --- 2. the peers' venv: PyPI's current releases -------------------------------
# Each install is tried on its own; one that fails is recorded with its error and its peer
# is left out, the rest go on.
PY=$VENV/bin/python
declare -A PKG=([torch]="torch torchvision" [dali]="nvidia-dali-cuda130" [ffcv]="ffcv")
declare -A CHECK=([torch]="import torch, torchvision" [dali]="import nvidia.dali" [ffcv]="import ffcv.loader")
if want torch || want dali || want ffcv || [[ $USE_REAL == 1 && -z $REAL ]]; then
  if [[ ! -x $PY ]]; then
    echo "== creating venv $VENV"
    mkdir -p "$(dirname "$VENV")"
    /usr/bin/python3 -m venv "$VENV" || die "cannot create a venv at $VENV (apt-get install python3-venv, or scripts/deps.sh --bench)"
    "$PY" -m pip install -q --upgrade pip
  fi
  for p in torch dali ffcv; do
    # torch's venv also brings PIL, which derives the real-photo set.
    want "$p" || [[ $p == torch && $USE_REAL == 1 && -z $REAL ]] || continue
    if "$PY" -c "${CHECK[$p]}" 2>/dev/null; then continue; fi
    if [[ $INSTALL == 0 ]]; then
      echo "${CHECK[$p]}: not importable and --no-install given" >"$OUT/install-$p.err"
      record_failure "$p" install - install "$OUT/install-$p.err"
      continue
    fi
    echo "== pip install ${PKG[$p]} (first time: downloads, see docs/PERFORMANCE.md)"
    # shellcheck disable=SC2086
    if ! "$PY" -m pip install ${PKG[$p]} >"$OUT/install-$p.log" 2>"$OUT/install-$p.err" ||
       ! "$PY" -c "${CHECK[$p]}" 2>>"$OUT/install-$p.err"; then
      record_failure "$p" install - install "$OUT/install-$p.err"
    fi
  done
fi
have() { [[ -x $PY ]] && "$PY" -c "${CHECK[$1]}" 2>/dev/null; }

# --- 3. data -------------------------------------------------------------------
DATASETS=()   # label:path
declare -A COUNT=()  # label -> images
need_images=$(((WARMUP + BATCHES) * BATCH))
present=0
for S in "${SIZE_LIST[@]}"; do [[ -d $DATA/${S}px ]] && present=$((present + 1)); done
if ((present == 0)); then
  echo "== generating $DATA (stoker gen, $CLASSES x $PER_CLASS images, seed 1)"
  "$STOKER" gen "$DATA" --sizes "$SIZES" --classes "$CLASSES" --per-class "$PER_CLASS" --seed 1
  echo "classes=$CLASSES per-class=$PER_CLASS seed=1 sizes=$SIZES" >"$DATA/.bench-stamp"
fi
for S in "${SIZE_LIST[@]}"; do
  [[ -d $DATA/${S}px ]] || die "$DATA has no ${S}px/ (remove $DATA to regenerate, or pass --sizes)"
  DATASETS+=("${S}px:$DATA/${S}px")
done
if [[ $USE_REAL == 1 ]]; then
  if [[ -z $REAL ]]; then
    REAL=data/peers-real
    # Made again when absent or made with another --real-count.
    if ! grep -q "\"count\": $REAL_COUNT," "$REAL/.real-photos.json" 2>/dev/null; then
      echo "== deriving the real-photo set $REAL ($REAL_COUNT images)"
      rm -rf "$REAL"
      "$PY" "$HERE/make_real_photos.py" "$REAL" --count "$REAL_COUNT" --seed 1
    fi
  fi
  [[ -d $REAL ]] || die "no such real-photo directory: $REAL"
  DATASETS+=("real:$REAL")
fi
for d in "${DATASETS[@]}"; do
  dir=${d#*:}
  n=$(find -H "$dir" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l)
  ((n >= need_images)) || die "$dir has $n images; --warmup $WARMUP + --batches $BATCHES batches of $BATCH need $need_images"
  COUNT[${d%%:*}]=$n
  echo "== ${d%%:*}: $dir, $n images, $(du -sh "$dir" | cut -f1)"
  # Warm page cache for every tool, the first included.
  find -H "$dir" -type f -print0 | xargs -0 cat >/dev/null
done

# --- 4. runs -------------------------------------------------------------------
COMMON=(--batch "$BATCH" --warmup "$WARMUP" --batches "$BATCHES" --seconds "$RUN_SECONDS" --json "$OUT/results.jsonl")
peer() {  # tool variant label: runs "$@" after the three labels, records a failure
  local tool=$1 variant=$2 label=$3; shift 3
  local err="$OUT/$tool-${variant// /_}-$label.err"
  if ! "$@" 2>"$err"; then record_failure "$tool" "$variant" "$label" run "$err"; fi
}
mkdir -p "$OUT/ffcv"  # a .beton per dataset path, written by the first FFCV run, kept
for ((r = 1; r <= REPEATS; r++)); do
  for d in "${DATASETS[@]}"; do
    label=${d%%:*} dir=${d#*:}
    echo "-- repeat $r/$REPEATS, $label"
    if want stoker; then
      for dt in f32 u8; do
        # Timed as the peers are: the summary takes `stoker bench`'s steady state (from the
        # arrival of its 3rd batch to the last, docs/FORMATS.md), for --seconds after the
        # warm-up. Not capped at --batches: at 256 px that many batches last ~0.2 s, too short
        # to read on a shared VM; its epochs wrap (as the peers' do) and a wrap inside the
        # window can only slow it.
        "$STOKER" bench "$dir" --reader "serial,threads:$THREADS" --transform rrc --batch "$BATCH" \
          --dtype "$dt" --epochs 1000 \
          --seconds "$(/usr/bin/python3 -c "print($RUN_SECONDS + 0.5)")" \
          --json "$OUT/stoker-$label-$dt-r$r.json" | grep -E '^\S+ +(serial|threads)|^# steady'
      done
    fi
    if want limit; then
      modes=crop
      ((r > 1)) || modes="crop full"  # the whole-image decode is a reference: once
      for m in $modes; do
        peer limit "$m" "$label" bash -c '"$1" --mode "$2" --seconds "$3" --dataset "$4" "$5" >>"$6"' _ \
          "$LIMIT" "$m" "$RUN_SECONDS" "$label" "$dir" "$OUT/results.jsonl"
      done
      tail -n "$(wc -w <<<"$modes")" "$OUT/results.jsonl" | sed 's/^/   /'
    fi
    # One process per peer and dataset: its runs follow each other inside it, so the
    # interpreter, the imports and FFCV's compilation are paid once, outside every clock.
    if want torch && have torch; then
      peer torch all "$label" "$PY" "$HERE/peer_torch.py" --data "$dir" --dataset "$label" \
        --runs "pil:0:f32,pil:$THREADS:f32,tvio:0:f32,tvio:$THREADS:f32,tvio:$THREADS:u8" \
        --repeat "$r" "${COMMON[@]}"
    fi
    if want dali && have dali; then
      peer dali all "$label" "$PY" "$HERE/peer_dali.py" --data "$dir" --dataset "$label" \
        --runs decode:f32,roi:f32,roi:u8 --threads "$THREADS" --repeat "$r" "${COMMON[@]}"
    fi
    if want ffcv && have ffcv; then
      peer ffcv all "$label" "$PY" "$HERE/peer_ffcv.py" --data "$dir" --dataset "$label" \
        --beton "$OUT/ffcv/$label-$(realpath "$dir" | md5sum | cut -c1-8)-${COUNT[$label]}.beton" \
        --dtypes f32,u8 --threads "$THREADS" --repeat "$r" "${COMMON[@]}"
    fi
  done
done

# --- 5. summary ------------------------------------------------------------------
"$PY" "$HERE/summarize_peers.py" "$OUT" --threads "$THREADS" --venv "$VENV" || /usr/bin/python3 "$HERE/summarize_peers.py" "$OUT" --threads "$THREADS"
echo "== done in $((SECONDS / 60)) min $((SECONDS % 60)) s; results in $OUT/summary.md"
