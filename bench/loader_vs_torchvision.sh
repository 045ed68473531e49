#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stoker's loader vs torchvision's ImageFolder/DataLoader vs libjpeg-turbo's
# single-core decode rate (tjbench), on synthetic 256/512/1024 px datasets.
# Results: $OUT/*.json, $OUT/tjbench-*.txt, $OUT/summary.{md,json}, $OUT/run.log.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/loader_vs_torchvision.sh [--build DIR] [--data DIR] [--images-per-class N]
                                      [--classes C] [--repeats R] [--out DIR]
  --build DIR            CMake build dir holding tools/stoker   (default build)
  --data DIR             datasets root, generated if absent       (default data/bench)
  --images-per-class N   images per class when generating         (default 250)
  --classes C            classes when generating                  (default 10)
  --repeats R            interleaved repeats, median reported     (default 3)
  --out DIR              results directory                        (default out/bench-loader)
env: PYTHON=/path/to/python3 with torch+torchvision (default: first python3 that has them)
EOF
}

BUILD=build DATA=data/bench OUT=out/bench-loader
# 10 x 250 = 2500 images per resolution (~1.1 GB): about 12 min on 2 cores
# (measured: one repeat of 2000 images took ~3 min), mostly torchvision at
# 1024 px (~50 img/s with 0 workers). Fewer images make worker start-up
# (1-3 s) a large share of torchvision's time.
CLASSES=10 PER_CLASS=250 REPEATS=3
SIZES=(256 512 1024)

die() { echo "loader_vs_torchvision.sh: error: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --data) DATA=${2:?--data needs a value}; shift 2 ;;
    --images-per-class) PER_CLASS=${2:?--images-per-class needs a value}; shift 2 ;;
    --classes) CLASSES=${2:?--classes needs a value}; shift 2 ;;
    --repeats) REPEATS=${2:?--repeats needs a value}; shift 2 ;;
    --out) OUT=${2:?--out needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
for kv in classes:$CLASSES images-per-class:$PER_CLASS repeats:$REPEATS; do
  [[ ${kv#*:} =~ ^[1-9][0-9]*$ ]] || die "--${kv%%:*} must be a positive integer, got '${kv#*:}'"
done

# User paths stay relative to the caller's cwd; the helpers live next to this script.
HERE=$(cd "$(dirname "$0")" && pwd)
trap 'echo "loader_vs_torchvision.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

# --- 1. dependencies -------------------------------------------------------
PKGS=(python3-torchvision python3-torch libjpeg-turbo-progs)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing ${missing[*]}"
  SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${PKGS[@]}"
fi
command -v tjbench >/dev/null || die "tjbench not found (apt-get install libjpeg-turbo-progs)"

# Debian's torch is for /usr/bin/python3; a pyenv/venv python3 first on PATH
# would not see it, so pick the first interpreter that can import both.
if [[ -z ${PYTHON:-} ]]; then
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import torch, torchvision' 2>/dev/null; then PYTHON=$c; break; fi
  done
fi
[[ -n ${PYTHON:-} ]] || die "no python3 can import torch+torchvision; set PYTHON=/usr/bin/python3"

STOKER=$BUILD/tools/stoker
[[ -x $STOKER ]] || die "$STOKER not found; build it first: cmake -S . -B build -G Ninja && ninja -C build"

# --- 2. datasets -------------------------------------------------------------
# A stamp records the generation parameters, so changed --classes/--per-class
# are not silently ignored in favour of an old dataset.
stamp="classes=$CLASSES per-class=$PER_CLASS seed=1 sizes=256,512,1024"
present=0
for S in "${SIZES[@]}"; do [[ -d $DATA/${S}px ]] && present=$((present + 1)); done
if ((present == 0)); then
  echo "== generating $DATA ($stamp)"
  "$STOKER" gen "$DATA" --sizes 256,512,1024 --classes "$CLASSES" --per-class "$PER_CLASS" --seed 1
  echo "$stamp" >"$DATA/.bench-stamp"
elif ((present < ${#SIZES[@]})); then
  die "$DATA is incomplete (needs 256px, 512px and 1024px); remove it and rerun"
elif [[ -f $DATA/.bench-stamp && $(<"$DATA/.bench-stamp") != "$stamp" ]]; then
  die "$DATA was generated with '$(<"$DATA/.bench-stamp")', not '$stamp'; remove it or pass matching options"
fi
for S in "${SIZES[@]}"; do
  n=$(find "$DATA/${S}px" -type f -iname '*.jpg' | wc -l)
  ((n > 0)) || die "no .jpg files under $DATA/${S}px"
  echo "== $DATA/${S}px: $n images, $(du -sh "$DATA/${S}px" | cut -f1)"
  # Read everything once so every loader, including the first, sees a warm page cache.
  find "$DATA/${S}px" -type f -iname '*.jpg' -print0 | xargs -0 cat >/dev/null
done

# --- 3. interleaved runs -----------------------------------------------------
mkdir -p "$OUT"
# Stale files from a run with more repeats would skew the medians.
rm -f "$OUT"/stoker-*.json "$OUT"/tv-nw*.json "$OUT"/tjbench-*.txt "$OUT"/summary.{md,json}
exec > >(tee "$OUT/run.log") 2>&1
echo "== $(date -Is)  repeats=$REPEATS  python=$PYTHON  stoker=$STOKER"

# Repeat is the outer loop: a slow spell on the machine then hits every
# loader and resolution alike instead of one cell of the table.
for ((i = 1; i <= REPEATS; i++)); do
  for S in "${SIZES[@]}"; do
    echo "-- repeat $i/$REPEATS, ${S}px"
    "$STOKER" bench "$DATA/${S}px" --reader serial,threads:2 --transform rrc --batch 64 \
      --json "$OUT/stoker-$S-r$i.json"
    for W in 0 2; do
      "$PYTHON" "$HERE/torchvision_loader.py" --data "$DATA/${S}px" --workers "$W" \
        --json "$OUT/tv-nw$W-$S-r$i.json"
    done
  done
done

# --- 4. libjpeg-turbo single-core decode ceiling -----------------------------
# tjbench with a JPEG input only decompresses; it is single-threaded and
# decodes at full size (Stoker may decode DCT-scaled, so it can beat this). The file
# closest to the median size stands for the dataset. -rgb: loaders want RGB
# (tjbench defaults to BGR); -nowrite: time decoding, not writing PPMs.
for S in "${SIZES[@]}"; do
  mapfile -t files < <(find "$DATA/${S}px" -type f -iname '*.jpg' -printf '%s\t%p\n' | sort -n)
  pick=${files[$(((${#files[@]} - 1) / 2))]}
  f=$(realpath "${pick#*$'\t'}")
  echo "-- tjbench ${S}px: $f (${pick%%$'\t'*} bytes)"
  {
    echo "# file: $f"
    echo "# bytes: ${pick%%$'\t'*}"
    (cd "$OUT" && tjbench "$f" -rgb -nowrite -benchtime 2 -warmup 1)
  } >"$OUT/tjbench-$S.txt"
  grep -E 'Image size|Throughput' "$OUT/tjbench-$S.txt" | sed 's/^/   /'
done

# --- 5. summary ----------------------------------------------------------------
echo
"$PYTHON" "$HERE/summarize_loader.py" "$OUT"
echo "== done in $((SECONDS / 60)) min $((SECONDS % 60)) s; results in $OUT/summary.md"
