#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Repeats the ways a 2-rank `stoker train` under mpirun can be stopped, many times, under load
# and at random points of a step, to find rare races in how the ranks stop (issue 36: a
# SIGTERM to every rank could crash in MPI_Allgatherv and lose the checkpoint). Not part of the
# default suite (minutes, not seconds); tests/train/train_mpi_test.sh keeps one run of each.
#   tests/train/train_mpi_repeat.sh STOKER [--runs N] [--case C[,C...]] [--busy B]
#                                          [--max-delay-ms D] [--stall-ms S] [--jobs J] [--keep DIR]
# Cases: sigterm (SIGTERM to every rank: a scheduler's preemption), sigint (SIGINT to every
# rank), one (SIGTERM to one rank, chosen at random), badfile (rank 1 fails on a bad JPEG
# under --on-error fail while rank 0 is in a collective). Default: all four, --runs each.
# Each run: the job starts, and once it trains, after a random 0..D ms (default 400) the
# signal goes out. --busy B (default 2) busy loops run throughout. --stall-ms S narrows the
# window on purpose: right after the signal one rank, chosen at random, is stopped (SIGSTOP) for
# S ms and continued, as a rank descheduled under heavy load is (default 0: only the load).
# --jobs J runs J jobs at once (each its own data and files; default 1). An AddressSanitizer build
# of STOKER works as is: any sanitizer report fails the run. Every rank runs under a wrapper
# that prints its exit status, so each rank's ending is checked, not only mpirun's.
# A run passes when: no rank crashes (no signal report, no sanitizer report), no rank hangs
# (the job ends within 90 s), every rank ends with a clear line and the status the case
# expects (143 / 130 for a stop, 1 for the failing rank and 143 for the one mpirun stopped,
# whose status mpirun may not forward: it is torn down with the job),
# and the stop cases keep rank 0's checkpoint of the last finished step (a readable file whose
# step is the step the job says it stopped after). Prints one line per failed run and a
# summary; failed runs' logs go to --keep (default: a temporary folder, printed). Exit 1 if
# any run failed.
set -uo pipefail
stoker=$(readlink -f "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=200
cases=sigterm,sigint,one,badfile
busy=2
max_delay_ms=400
stall_ms=0
jobs=1
keep=""
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --case) cases=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --max-delay-ms) max_delay_ms=$2; shift 2 ;;
    --stall-ms) stall_ms=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "usage: $0 STOKER [--runs N] [--case C,...] [--busy B] [--max-delay-ms D]" \
         "[--stall-ms S] [--jobs J] [--keep DIR]" >&2
       exit 2 ;;
  esac
done
tmp=$(mktemp -d)
[ -n "$keep" ] || keep="$tmp/failed"
mkdir -p "$keep"
busy_pids=()
cleanup() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"/d* "$tmp"/bad* "$tmp"/run* "$tmp"/result*
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OMP_NUM_THREADS=1
# Each rank's line of stderr starts with [job,rank]<stderr>: so lines are told apart by rank.
export OMPI_MCA_orte_tag_output=1
common=(--arch resnet18 --size 32 --batch 4 --threads 1 --reader threads:1)
"$stoker" gen "$tmp/d" --sizes 64 --classes 4 --per-class 16 --seed 3 > /dev/null 2>&1
for slot in $(seq 1 "$jobs"); do cp -r "$tmp/d" "$tmp/d$slot"; done
for _ in $(seq 1 "$busy"); do
  (while :; do :; done) &
  busy_pids+=($!)
done

# The stoker processes of the running job (not their wrappers), "pid rank" per line.
ranks_of() {
  for p in $(pgrep -f -- "train $1 --arch" 2>/dev/null); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$stoker" ] || continue
    r=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ -n "$r" ] && echo "$p $r"
  done
}

# One run of case $1 (number $2, in slot $3 of --jobs); prints nothing when it passes, else
# why, and keeps its logs.
one_run() {
  local kind=$1 n=$2 slot=$3 data=$tmp/d$3 extra=() expect=143 sig=TERM why=()
  local run=$tmp/run$3
  rm -rf "$run"; mkdir -p "$run"
  case $kind in
    sigint) sig=INT; expect=130 ;;
    badfile)
      # Rank 1's sample j of step s (global positions 8s+4..8s+7 with --no-shuffle).
      rm -rf "$tmp/bad$slot"; cp -r "$tmp/d" "$tmp/bad$slot"; data=$tmp/bad$slot
      local pos=$(( 8 * (1 + RANDOM % 6) + 4 + RANDOM % 4 ))
      local bad
      bad=$(find "$data" -type f -name '*.jpg' | LC_ALL=C sort | sed -n "$((pos + 1))p")
      head -c 300 /dev/urandom > "$bad"
      extra=(--no-shuffle --on-error fail --save-every 1 --keep 2)
      echo "$bad" > "$run/bad"
      echo $(( pos / 8 )) > "$run/step" ;;
  esac
  # The wrapper ignores the signals itself (stoker installs its own handlers) and reports.
  timeout 90 "$root/scripts/mpirun_local.sh" 2 bash -c \
    'trap "" TERM INT; "$@"; rc=$?; echo "rank-exit $OMPI_COMM_WORLD_RANK $rc" >&2; exit $rc' _ \
    "$stoker" train "$data" "${common[@]}" --steps 100000 --save "$run/ck.safetensors" \
    "${extra[@]}" > "$run/out.txt" 2> "$run/err.txt" &
  local job=$! ranks=""
  if [ "$kind" != badfile ]; then
    for _ in $(seq 1 300); do
      ranks=$(ranks_of "$data")
      if [ "$(echo "$ranks" | grep -c .)" = 2 ] && grep -q 'train resnet18 step' "$run/err.txt"; then
        break
      fi
      sleep 0.1
    done
    sleep "$(printf '0.%03d' $(( RANDOM % (max_delay_ms + 1) )))" 2>/dev/null \
      || sleep "$(( max_delay_ms / 1000 ))"
    local targets
    if [ "$kind" = one ]; then
      targets=$(echo "$ranks" | sed -n "$(( 1 + RANDOM % 2 ))p" | cut -d' ' -f1)
      echo "$ranks" | awk -v t="$targets" '$1 == t {print "signalled rank " $2}' > "$run/note"
    else
      targets=$(echo "$ranks" | cut -d' ' -f1)
    fi
    # shellcheck disable=SC2086
    [ -n "$targets" ] && kill -"$sig" $targets
    if [ "$stall_ms" -gt 0 ]; then
      local stalled
      stalled=$(echo "$ranks" | sed -n "$(( 1 + RANDOM % 2 ))p")
      kill -STOP "${stalled% *}" 2>/dev/null
      sleep "$(( stall_ms / 1000 )).$(printf '%03d' $(( stall_ms % 1000 )))"
      kill -CONT "${stalled% *}" 2>/dev/null
      echo "stalled rank ${stalled#* } for $stall_ms ms" >> "$run/note"
    fi
  fi
  wait "$job"
  local rc=$?
  local err=$run/err.txt
  [ "$rc" -ne 124 ] || why+=("hung (killed after 90 s)")
  local want_rc=$expect
  [ "$kind" = badfile ] && want_rc=1  # the first rank to end, rank 1, ends the job
  [ "$rc" = "$want_rc" ] || [ "$rc" = 124 ] || why+=("mpirun exit $rc, expected $want_rc")
  grep -q 'Process received signal\|Segmentation fault' "$err" && why+=("a rank crashed")
  grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$err" && why+=("sanitizer report")
  for r in 0 1; do
    local code
    code=$(sed -n "s/.*rank-exit $r \([0-9]*\)$/\1/p" "$err" | tail -1)
    local want=$expect
    if [ "$kind" = badfile ]; then [ $r = 1 ] && want=1; fi
    if [ -z "$code" ]; then
      # Rank 0 of badfile ends in MPI_Abort while mpirun tears the job down after rank 1's:
      # mpirun kills it there and may be gone before its status is forwarded. Its line
      # (checked below) says it stopped; its status, when it comes, must be 143.
      [ "$kind" = badfile ] && [ $r = 0 ] && continue
      why+=("rank $r: no exit status (killed)")
    elif [ "$code" != "$want" ]; then
      why+=("rank $r: exit $code, expected $want")
    fi
  done
  if [ "$kind" = badfile ]; then
    grep -q "\[.*,1\]<stderr>:stoker train: rank 1 of 2: error: .*$(basename "$(cat "$run/bad")")" \
      "$err" || why+=("rank 1 did not name the bad file")
    grep -q "\[.*,0\]<stderr>:stoker train: rank 0 of 2: stopped: signal 15 while .*: rank 1 (pid [0-9]*) has ended" \
      "$err" || why+=("rank 0 did not say that rank 1 has ended")
    # The step with the bad file cannot finish; --save-every 1 kept the one before it.
    local kept
    kept=$run/ck-step$(printf '%08d' "$(cat "$run/step")").safetensors
    "$stoker" checkpoint info "$kept" > /dev/null 2>&1 || why+=("no readable $(basename "$kept")")
  else
    grep -q 'MPI_ABORT' "$err" && why+=("the job aborted")
    for r in 0 1; do
      grep -q "\[.*,$r\]<stderr>:stoker: train: interrupted after step [0-9]*" "$err" \
        || why+=("rank $r: no 'interrupted after step' line")
    done
    local step
    step=$(sed -n 's/.*stoker: train: interrupted after step \([0-9]*\).*/\1/p' "$err" | sort -u)
    [ "$(echo "$step" | grep -c .)" -le 1 ] || why+=("the ranks stopped after different steps: $step")
    if ! grep -q "# checkpoint: $run/ck.safetensors (step $step," "$run/out.txt"; then
      why+=("no checkpoint of step $step")
    elif ! "$stoker" checkpoint info "$run/ck.safetensors" > /dev/null 2>&1; then
      why+=("the checkpoint does not read")
    fi
  fi
  sleep 0.2
  local left
  left=$(ranks_of "$data")
  if [ -n "$left" ]; then
    why+=("ranks left running: $left")
    echo "$left" | cut -d' ' -f1 | xargs -r kill -9
  fi
  if [ ${#why[@]} -gt 0 ]; then
    local dir=$keep/$kind-$n
    mkdir -p "$dir" && cp "$run"/* "$dir"/ 2>/dev/null
    local IFS=';' note=""
    [ -f "$run/note" ] && note=", $(tr '\n' ' ' < "$run/note")"
    echo "FAIL $kind run $n (rc $rc$note): ${why[*]}"
  fi
}

echo "# $(basename "$0"): $stoker, $runs runs per case ($cases), $busy busy loops," \
  "signal 0..$max_delay_ms ms after training starts, stall $stall_ms ms, $jobs at once," \
  "$(getconf _NPROCESSORS_ONLN) cores, logs of failures in $keep"
total_failed=0
declare -a slot_pid
for kind in ${cases//,/ }; do
  case $kind in sigterm|sigint|one|badfile) ;; *) echo "unknown case $kind" >&2; exit 2 ;; esac
  failed=0
  start=$SECONDS
  rm -f "$tmp"/result*
  for n in $(seq 1 "$runs"); do
    slot=$(( (n - 1) % jobs + 1 ))
    [ "$n" -le "$jobs" ] || wait "${slot_pid[$slot]}"
    one_run "$kind" "$n" "$slot" > "$tmp/result-$n" &
    slot_pid[$slot]=$!
  done
  wait "${slot_pid[@]}"
  for n in $(seq 1 "$runs"); do
    if [ -s "$tmp/result-$n" ]; then
      cat "$tmp/result-$n"
      failed=$((failed + 1))
    fi
  done
  echo "case $kind: $failed of $runs runs failed ($((SECONDS - start)) s)"
  total_failed=$((total_failed + failed))
done
[ "$total_failed" -eq 0 ]
