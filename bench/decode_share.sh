#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 25's figure in a few minutes: the loader's steady-state img/s with threads:T for f32
# and u8 output (RandomResizedCrop 224 + flip, batch 64, NCHW), against the T-core
# crop-window decode limit (T bench/decode_limit processes at once, files in memory), and the
# share. Interleaved repeats, medians. Steady state = `stoker bench`'s "steady" figure: from the
# arrival of the 3rd batch to the last (docs/FORMATS.md). Not a test: nothing asserts.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/decode_share.sh STOKER DATASET [options]
  STOKER           the stoker binary (its build directory gives decode_limit's libraries)
  DATASET          an ImageFolder of JPEGs (e.g. bench/make_real_photos.py --short-side 512)
  --threads T      threads:T and T decode-limit processes            (default 2)
  --seconds S      each run's length                                  (default 4)
  --repeats R      interleaved repeats, median reported               (default 3)
  --limit BIN      a built bench/decode_limit (default: built next to STOKER if absent)
  --json FILE      also write the medians as one JSON document
  -h, --help       this text
EOF
}

[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
STOKER=$1 DATA=$2
shift 2
THREADS=2 SECS=4 REPEATS=3 LIMIT= JSON=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS=${2:?--threads needs a value}; shift 2 ;;
    --seconds) SECS=${2:?--seconds needs a value}; shift 2 ;;
    --repeats) REPEATS=${2:?--repeats needs a value}; shift 2 ;;
    --limit) LIMIT=${2:?--limit needs a value}; shift 2 ;;
    --json) JSON=${2:?--json needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; echo "decode_share.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
for kv in threads:$THREADS repeats:$REPEATS; do
  [[ ${kv#*:} =~ ^[1-9][0-9]*$ ]] || { echo "decode_share.sh: --${kv%%:*} must be a positive integer, got '${kv#*:}'" >&2; exit 2; }
done
[[ $SECS =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "decode_share.sh: --seconds must be a number, got '$SECS'" >&2; exit 2; }
[[ -x $STOKER ]] || { echo "decode_share.sh: $STOKER: not an executable" >&2; exit 1; }
[[ -d $DATA ]] || { echo "decode_share.sh: $DATA: no such directory" >&2; exit 1; }

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$(cd "$(dirname "$STOKER")/.." && pwd)
if [[ -z $LIMIT ]]; then
  LIMIT=$BUILD/bench/decode_limit
  if [[ ! -x $LIMIT || $HERE/decode_limit.cc -nt $LIMIT ]]; then
    echo "# building $LIMIT" >&2
    mkdir -p "$BUILD/bench"
    # shellcheck disable=SC2046
    g++ -O2 -std=c++20 -Wall -Wextra -I"$ROOT" $(pkg-config --cflags-only-I opencv4 | sed 's/-I/-isystem /g') \
      "$HERE/decode_limit.cc" "$BUILD/augment/libstoker_augment.a" "$BUILD/common/libstoker_common.a" \
      $(pkg-config --libs opencv4 libjpeg fmt) -o "$LIMIT"
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
find -H "$DATA" -type f -print0 | xargs -0 cat >/dev/null  # warm page cache

echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# data: $DATA ($(find -H "$DATA" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l) JPEGs, $(du -shL "$DATA" | cut -f1))"
echo "# stoker bench --reader threads:$THREADS --transform rrc --batch 64 --seconds $SECS (steady state); decode limit: $THREADS x decode_limit --mode crop --seconds $SECS; $REPEATS interleaved repeats"
for ((r = 1; r <= REPEATS; r++)); do
  for dt in f32 u8; do
    "$STOKER" bench "$DATA" --reader "threads:$THREADS" --transform rrc --batch 64 --dtype "$dt" \
      --epochs 1000 --seconds "$SECS" --json "$tmp/$dt-$r.json" >/dev/null 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
  done
  pids=()
  for ((t = 0; t < THREADS; t++)); do
    "$LIMIT" --mode crop --seconds "$SECS" "$DATA" >"$tmp/limit-$r-$t.json" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
done
/usr/bin/python3 - "$tmp" "$REPEATS" "$THREADS" "$JSON" <<'PY'
import glob, json, statistics, sys
tmp, repeats, threads, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def steady(path):
    r = json.load(open(path))["results"][0]
    return r["steady"]["images_per_s"]
limit = [sum(json.load(open(f))["images_per_s_core"] for f in glob.glob(f"{tmp}/limit-{r}-*.json"))
         for r in range(1, repeats + 1)]
lim = statistics.median(limit)
print(f"{'output':<7} {'threads:' + str(threads) + ' img/s':>18} {'limit img/s':>12} {'share':>6} {'target':>6}  runs (img/s)")
doc = {"threads": threads, "limit_images_per_s": lim, "limit_runs": limit, "outputs": {}}
for dt, target in (("f32", 75), ("u8", 85)):
    runs = [steady(f"{tmp}/{dt}-{r}.json") for r in range(1, repeats + 1)]
    med = statistics.median(runs)
    share = 100 * med / lim
    print(f"{dt:<7} {med:>18,.0f} {lim:>12,.0f} {share:>5.0f}% {target:>5}%  "
          + " / ".join(f"{v:,.0f}" for v in runs) + "  (limit: " + " / ".join(f"{v:,.0f}" for v in limit) + ")")
    doc["outputs"][dt] = {"images_per_s": med, "runs": runs, "share": share / 100, "target": target / 100}
if out:
    json.dump(doc, open(out, "w"), indent=2)
PY
