#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stoker bench --seconds and the warm-up: a time-bounded run stops at a batch boundary soon
# after T seconds, before its epoch ends, and says so; the warm-up reads exactly the samples
# the run's batches read (their count and bytes), not the whole dataset. Also the colour and
# resize-filter options run end to end and are validated.
set -euo pipefail
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 64 --classes 3 --per-class 40 --seed 2 > /dev/null 2>&1

# 120 images, batches of 4 consumed at 20 images/s: 6 s for the epoch, cut at 1 s.
start=$(date +%s.%N)
"$stoker" bench "$tmp/d" --reader serial --batch 4 --size 32 --emulate 20 --seconds 1 \
  --json "$tmp/s.json" > "$tmp/s.txt" 2>/dev/null
elapsed=$(python3 -c "print($(date +%s.%N) - $start)")
python3 -c "import sys; sys.exit(0 if $elapsed < 6 else 1)" || fail "--seconds 1 took ${elapsed}s"
grep -q '^# stopped after 1 s (--seconds)' "$tmp/s.txt" || fail "no stop line: $(cat "$tmp/s.txt")"
python3 - "$tmp/s.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["results"][0]
assert doc["context"]["seconds"] == 1, doc["context"]
assert r["stopped_after_seconds"] == 1 and "interrupted" not in r, r
# at most one batch past the deadline: ~5 batches of 4 at 20 img/s; never the whole epoch
assert 4 <= r["images"] < 120 and r["images"] % 4 == 0, r["images"]
assert r["epoch_checksums"] == [], r["epoch_checksums"]  # no whole epoch, no checksum
assert 15 < r["images_per_s"] < 25, r["images_per_s"]  # over what ran, not the epoch
PY

# --max-batches first: 3 batches of 4 warm exactly those 12 samples, and their bytes are
# what the run itself reads.
"$stoker" bench "$tmp/d" --reader serial --batch 4 --size 32 --max-batches 3 --seconds 100 \
  --json "$tmp/m.json" > "$tmp/m.txt" 2>/dev/null
grep -q '^# warm-up: read 12 samples' "$tmp/m.txt" || fail "warm-up line: $(grep warm "$tmp/m.txt")"
python3 - "$tmp/m.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["images"] == 12 and "stopped_after_seconds" not in r, r
assert r["warm"]["files"] == 12 and r["warm"]["bytes"] == r["bytes"], (r["warm"], r["bytes"])
PY
# Over two epochs, 40 batches: all of epoch 0 (30) and 10 of epoch 1, whose samples are
# already warm: 120 distinct samples, the whole dataset here.
"$stoker" bench "$tmp/d" --reader serial --batch 4 --size 32 --max-batches 40 --epochs 2 \
  --json "$tmp/e.json" > /dev/null 2>&1
python3 -c "import json; r=json.load(open('$tmp/e.json'))['results'][0]; \
assert r['warm']['files'] == 120 and r['images'] == 160, (r['warm'], r['images'])"
# --cold warms nothing.
"$stoker" bench "$tmp/d" --reader serial --batch 4 --size 32 --max-batches 2 --cold \
  > "$tmp/c.txt" 2>/dev/null
! grep -q '^# warm-up' "$tmp/c.txt" || fail "--cold warmed"

# Colour and filter options run through every reader with one checksum, and change pixels.
"$stoker" bench "$tmp/d" --reader serial,threads:2,processes:2 --batch 8 --size 32 \
  --jitter 0.4,0.4,0.4,0.1 --grayscale 0.2 --resize-filter antialias --json "$tmp/j.json" \
  > /dev/null 2>&1
"$stoker" bench "$tmp/d" --reader serial --batch 8 --size 32 --json "$tmp/p.json" > /dev/null 2>&1
python3 - "$tmp/j.json" "$tmp/p.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
plain = json.load(open(sys.argv[2]))["results"][0]["epoch_checksums"]
sums = {tuple(r["epoch_checksums"]) for r in res}
assert len(sums) == 1 and len(res) == 3, sums
assert sums.pop() != tuple(plain), "jitter/grayscale/antialias left the pixels unchanged"
PY
for bad in "--jitter 0.4,0.4,0.4" "--jitter 0.4,-1,0,0" "--jitter 0,0,0,0.6" "--grayscale 1.5" \
    "--resize-filter lanczos" "--seconds 0"; do
  set +e
  # shellcheck disable=SC2086
  "$stoker" bench "$tmp/d" --reader serial $bad > /dev/null 2> "$tmp/err.txt"
  code=$?
  set -e
  [ $code = 2 ] || fail "'$bad' exit code $code, expected 2: $(cat "$tmp/err.txt")"
done
echo "ok: --seconds, targeted warm-up, colour and filter options"
