#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ctrl-C and SIGTERM keep what is finished (common/interrupt.h): `stoker bench` prints and
# writes (--json, marked interrupted) the rows measured so far and exits 143; `stoker train`
# saves a checkpoint of its last finished step, exits 130, and --resume from that checkpoint
# gives the same bytes as a run that was never interrupted. A second Ctrl-C exits at once.
set -euo pipefail
stoker=$1
. "$(dirname "$0")/../skip_policy.sh"
tmp=$(mktemp -d)
pid=""
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT  # no run outlives a failure
cd "$tmp"  # a run without --save keeps its checkpoint under runs/ here
fail() { echo "FAIL: $*"; exit 1; }
set -m  # background jobs keep default SIGINT handling (a script's jobs otherwise ignore it)
export OMP_NUM_THREADS=2

"$stoker" gen "$tmp/d" --sizes 64 --classes 4 --per-class 16 --seed 2 >/dev/null 2>&1

# Waits until file $1 has a line matching $2 (the command has reached its long work); 1 when
# the command $pid ended first.
wait_for() {
  for _ in $(seq 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  cat "$1"; fail "no '$2' in $1"
}

# bench, SIGTERM mid-run: the context lines, the row so far and --json survive a redirect.
"$stoker" bench "$tmp/d" --reader serial --size 32 --epochs 100000 --json "$tmp/b.json" \
  > "$tmp/b.out" 2> "$tmp/b.err" &
pid=$!
wait_for "$tmp/b.out" "^# page cache" || { cat "$tmp/b.err"; fail "bench ended early"; }
sleep 1
kill -TERM $pid
set +e; wait $pid; rc=$?; set -e; pid=""
[ "$rc" = 143 ] || { cat "$tmp/b.out" "$tmp/b.err"; fail "bench after SIGTERM: exit $rc, expected 143"; }
grep -q "^# stoker .* bench" "$tmp/b.out" || fail "bench: context lines lost"
grep -q "^d  *local  *serial " "$tmp/b.out" || { cat "$tmp/b.out"; fail "bench: no row for the interrupted run"; }
grep -q "^stoker: interrupted" "$tmp/b.err" || fail "bench: no interrupt notice on stderr"
python3 - "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["interrupted"] is True, d["context"]
assert len(d["results"]) == 1, d["results"]
r = d["results"][0]
assert r["interrupted"] is True and r["images"] > 0, r
PY

# train, SIGINT mid-run: a checkpoint of the last finished step, and --json says so.
common=(--arch resnet18 --size 32 --batch 4 --reader threads:2 --seed 7)
"$stoker" train "$tmp/d" "${common[@]}" --steps 400 --save "$tmp/cut.safetensors" \
  --json "$tmp/cut.json" > "$tmp/t.out" 2> "$tmp/t.err" &
pid=$!
wait_for "$tmp/t.out" "^# run:" && sleep 0.3 && kill -INT $pid
set +e; wait $pid; rc=$?; set -e; pid=""
if [ "$rc" = 1 ] && grep -q "not built in" "$tmp/t.err"; then
  skip "train: this build has no CPU backend (oneDNN 3; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)"
fi
[ "$rc" = 130 ] || { cat "$tmp/t.out" "$tmp/t.err"; fail "train after SIGINT: exit $rc, expected 130"; }
grep -q "^# checkpoint: .*cut.safetensors" "$tmp/t.out" || { cat "$tmp/t.out"; fail "no checkpoint"; }
grep -q "resume .*cut.safetensors" "$tmp/t.err" || { cat "$tmp/t.err"; fail "no resume hint"; }
cut=$(python3 - "$tmp/cut.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
d = {**doc["context"], **doc["results"][0]}
assert d["interrupted"] is True and d["planned_steps"] == 400, (d["interrupted"], d["planned_steps"])
n = d["steps"]
assert 1 <= n < 400 and len(d["loss"]) == n and d["end_state"]["step"] == n, d["end_state"]
print(n)
PY
)
echo "interrupted after step $cut"
# Resume 3 more steps; an uninterrupted run of cut + 3 steps of the same 400-step schedule
# must end with the same bytes (weights, momentum, BN statistics, run state).
"$stoker" train "$tmp/d" --resume "$tmp/cut.safetensors" --steps 3 --reader threads:2 \
  --save "$tmp/resumed.safetensors" > /dev/null 2>&1 || fail "resume"
"$stoker" train "$tmp/d" "${common[@]}" --steps $((cut + 3)) --total-steps 400 \
  --save "$tmp/whole.safetensors" > /dev/null 2>&1 || fail "uninterrupted run"
cmp -s "$tmp/whole.safetensors" "$tmp/resumed.safetensors" ||
  fail "resumed from the interrupted checkpoint differs from the uninterrupted run"
[ -z "$(ls "$tmp" | grep '\.tmp\.')" ] || fail "a temporary checkpoint file was left"

# A second SIGINT does not wait for the step: the exit is immediate, still 130. The steps are
# long (about 0.8 s here at 96 px, batch 16): with 32 px, batch 4 a run could finish its step
# and exit within the 50 ms before the second signal (1 in 5 under load), and that kill failed.
"$stoker" train --synthetic --arch resnet18 --size 96 --batch 16 --seed 7 --classes 4 --steps 100000 \
  > "$tmp/s.out" 2> "$tmp/s.err" &
pid=$!
wait_for "$tmp/s.out" "^# run:" || fail "train ended early"
kill -INT $pid; sleep 0.05; kill -INT $pid
set +e; wait $pid; rc=$?; set -e; pid=""
[ "$rc" = 130 ] || { cat "$tmp/s.err"; fail "train after two SIGINTs: exit $rc, expected 130"; }
echo "PASS"
