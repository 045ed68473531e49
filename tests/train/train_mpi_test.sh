#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `stoker train` under mpirun with 2 ranks on this machine (scripts/mpirun_local.sh), a tiny
# ResNet-18: rank 0 alone prints and writes (one context, a checkpoint and JSON that say 2
# ranks, global batch 8, LR scaled by it, global sampler position); the checkpoint resumes on
# one process with the same global batch and is refused on 3 ranks; a bad JPEG in rank 1's
# shard under --on-error fail ends the job naming rank 1 and the file; rank 1 killed with
# SIGKILL mid-run ends the job with rank 0 saying it stopped; SIGTERM to every rank stops all
# after the same step with rank 0's checkpoint; SIGTERM to rank 1 alone does the same, every
# rank exiting 143. Every mpirun is under `timeout`: a hang fails the test. One run of each:
# tests/train/train_mpi_repeat.sh repeats them under load at random moments (issue 36).
set -euo pipefail
stoker=$1
mpirun_local=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # a run without --save keeps its checkpoint under runs/ here
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=1
mpi() { timeout 120 "$mpirun_local" "$@"; }
common=(--arch resnet18 --size 32 --batch 4 --threads 1 --reader threads:1)

"$stoker" gen "$tmp/d" --sizes 64 --classes 4 --per-class 16 --seed 3 2>/dev/null

# 1. Rank 0 speaks and writes; positions are global; LR from the global batch (0.1 x 8 / 256).
mpi 2 "$stoker" train "$tmp/d" "${common[@]}" --steps 3 --total-steps 10 --save "$tmp/ck.safetensors" \
  --json "$tmp/r.json" --trace "$tmp/t.json" > "$tmp/out.txt" 2> "$tmp/err.txt" \
  || { cat "$tmp/err.txt"; fail "mpirun -np 2 stoker train"; }
cat "$tmp/out.txt"
[ "$(grep -c '^# stoker train' "$tmp/out.txt")" = 1 ] || fail "the context is printed more than once"
[ "$(grep -c '^# checkpoint:' "$tmp/out.txt")" = 1 ] || fail "more than one rank saved"
grep -q '^# data parallel: mpi (Open MPI .*), 2 ranks, batch 4 per rank, global batch 8' \
  "$tmp/out.txt" || fail "no data-parallel context line"
grep -q '^# optimiser: SGD lr 0.003125 ' "$tmp/out.txt" || fail "lr not 0.1 x global batch 8 / 256"
if grep -v '^train resnet18 step' "$tmp/err.txt" | grep -q .; then
  cat "$tmp/err.txt"; fail "a quiet run wrote to stderr"
fi
python3 - "$tmp/r.json" "$tmp/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, r = d["context"], d["results"][0]
assert c["world"] == 2 and c["batch"] == 4 and c["global_batch"] == 8, c
assert c["collective"].startswith("mpi (Open MPI"), c["collective"]
assert r["end_state"] == {"step": 3, "epoch": 0, "sampler_position": 24}, r["end_state"]
assert c["options"]["global_batch"] == 8 and c["options"]["batch"] == 4, c["options"]
json.load(open(sys.argv[2]))  # one writer: a valid document
PY

# 2. Resume on one process: the same global batch (--batch becomes 8), the same position.
"$stoker" train "$tmp/d" --resume "$tmp/ck.safetensors" --steps 2 --threads 1 --reader threads:1 --no-save \
  --json "$tmp/r1.json" > "$tmp/out1.txt" 2>&1 || { cat "$tmp/out1.txt"; fail "resume on 1 rank"; }
python3 - "$tmp/r1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["batch"] == 8 and d["context"]["world"] == 1, d["context"]
assert d["results"][0]["end_state"] == {"step": 5, "epoch": 0, "sampler_position": 40}, d["results"][0]["end_state"]
PY
# ... and refused on 3 ranks (8 does not divide), each rank naming itself, no hang.
if mpi 3 "$stoker" train "$tmp/d" --resume "$tmp/ck.safetensors" --steps 1 --threads 1 \
    --reader threads:1 > "$tmp/out3.txt" 2> "$tmp/err3.txt"; then
  fail "a global batch of 8 resumed on 3 ranks"
fi
[ $? -ne 124 ] || fail "mpirun -np 3 hung"
grep -q "stoker train: rank [0-2] of 3: error: .*global batch of 8, which 3 ranks cannot share" \
  "$tmp/err3.txt" || { cat "$tmp/err3.txt"; fail "no clear error for 3 ranks"; }

# 3. A bad JPEG at global position 5: with --no-shuffle, rank 1's second sample of step 0.
cp -r "$tmp/d" "$tmp/bad"
bad=$(find "$tmp/bad" -type f -name '*.jpg' | LC_ALL=C sort | sed -n 6p)
head -c 300 /dev/urandom > "$bad"
set +e
mpi 2 "$stoker" train "$tmp/bad" "${common[@]}" --steps 6 --no-shuffle --on-error fail \
  > "$tmp/outb.txt" 2> "$tmp/errb.txt"
rc=$?
set -e
cat "$tmp/errb.txt"
[ $rc -ne 0 ] || fail "a bad file under --on-error fail: exit 0"
[ $rc -ne 124 ] || fail "a bad file under --on-error fail: the job hung"
grep -q "stoker train: rank 1 of 2: error: $bad" "$tmp/errb.txt" || fail "rank 1 and the file not named"
if grep -q "rank 0 of 2: error: .*img" "$tmp/errb.txt"; then fail "rank 0 read rank 1's sample"; fi

# 4. Rank 1 killed with SIGKILL mid-run: the job ends (not a hang), rank 0 says it stopped.
set +e
mpi 2 "$stoker" train "$tmp/d" "${common[@]}" --steps 100000 > "$tmp/outk.txt" 2> "$tmp/errk.txt" &
job=$!
victim=""
for _ in $(seq 1 100); do  # rank 1: this run's command line, OMPI_COMM_WORLD_RANK=1
  for p in $(pgrep -f -- "train $tmp/d --arch" 2>/dev/null); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
      victim=$p
    fi
  done
  # Killed once training runs (the progress line), not while MPI starts.
  if [ -n "$victim" ] && grep -q '^train resnet18 step' "$tmp/errk.txt"; then break; fi
  sleep 0.2
done
[ -n "$victim" ] || fail "rank 1 not found"
kill -9 "$victim"
wait $job
rc=$?
set -e
grep -v '^train resnet18 step' "$tmp/errk.txt" || true
[ $rc -ne 0 ] || fail "a killed rank: exit 0"
[ $rc -ne 124 ] || fail "a killed rank: the job hung"
grep -q "stoker train: rank 0 of 2: stopped: signal 15 while waiting for the other rank" \
  "$tmp/errk.txt" || fail "rank 0 did not say it stopped"

# 5. SIGTERM to every rank (a scheduler's preemption): the ranks agree on the step to stop
# after, rank 0 saves it, every rank exits 143, no abort. 6. SIGTERM to rank 1 alone: the same,
# rank 0 stopping with it (and saying so). Each rank runs under a wrapper that reports its exit
# status (mpirun reports one only).
stop_case() {  # name, which ranks get SIGTERM ("all" or a rank), files prefix
  set +e
  mpi 2 bash -c 'trap "" TERM INT; "$@"; rc=$?; echo "rank-exit $OMPI_COMM_WORLD_RANK $rc" >&2; exit $rc' _ \
    "$stoker" train "$tmp/d" "${common[@]}" --steps 100000 --save "$tmp/$3.safetensors" \
    > "$tmp/$3.out" 2> "$tmp/$3.err" &
  local job=$! ranks="" p r
  for _ in $(seq 1 100); do
    ranks=""
    for p in $(pgrep -f -- "train $tmp/d --arch" 2>/dev/null); do
      [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$stoker")" ] || continue
      r=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
      if [ -n "$r" ] && { [ "$2" = all ] || [ "$2" = "$r" ]; }; then ranks="$ranks $p"; fi
    done
    if [ -n "$ranks" ] && grep -q '^train resnet18 step' "$tmp/$3.err"; then break; fi
    sleep 0.2
  done
  kill -TERM $ranks
  wait $job
  local rc=$?
  set -e
  grep -v '^train resnet18 step' "$tmp/$3.err" || true
  [ $rc -eq 143 ] || fail "$1: exit $rc, expected 143"
  for r in 0 1; do
    grep -qx "rank-exit $r 143" "$tmp/$3.err" || fail "$1: rank $r did not exit 143"
  done
  [ "$(grep -c '^stoker: train: interrupted after step' "$tmp/$3.err")" = 2 ] \
    || fail "$1: not every rank said after which step it stopped"
  grep -q '^# checkpoint: ' "$tmp/$3.out" || fail "$1: no checkpoint"
  if grep -q 'MPI_ABORT' "$tmp/$3.err"; then fail "$1: aborted"; fi
  "$stoker" checkpoint info "$tmp/$3.safetensors" > /dev/null || fail "$1: the checkpoint does not read"
}
stop_case "SIGTERM to every rank" all stop
stop_case "SIGTERM to rank 1 alone" 1 stop1
grep -q '^stoker train: rank 0 of 2: stopping with the others (signal 15)' "$tmp/stop1.err" \
  || fail "SIGTERM to rank 1 alone: rank 0 did not say why it stopped"
echo "OK"
