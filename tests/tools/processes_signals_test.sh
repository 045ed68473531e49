#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# processes:N and signals: SIGINT, SIGTERM or SIGKILL to a running
# `stoker bench --reader processes:2` leaves no stoker-worker process and nothing in /dev/shm.
# (A worker's command line ends with its parent's pid, which is how they are found here.)
# The loader's shared memory is memfds (named stoker-index, stoker-batches), which die with
# the last process holding them; /dev/shm is checked for new entries named after stoker only,
# since other programs (other tests under ctest -j, other users) come and go there.
set -euo pipefail
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
set -m  # background jobs keep default SIGINT handling (a script's jobs otherwise ignore it)

"$stoker" gen "$tmp/d" --sizes 128 --classes 4 --per-class 25 >/dev/null 2>&1
shm_before=$(ls -A /dev/shm 2>/dev/null | sort)

# Live processes running stoker-worker for parent $1 (zombies have no command line).
workers_of() {
  local n=0 f
  for f in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' < "$f" 2>/dev/null | grep -q "stoker-worker $1 \$"; then n=$((n + 1)); fi
  done
  echo $n
}

for sig in INT TERM KILL; do
  "$stoker" bench "$tmp/d" --reader processes:2 --epochs 100000 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ "$(workers_of $pid)" = 2 ] && break; sleep 0.1; done
  [ "$(workers_of $pid)" = 2 ] || fail "SIG$sig: the two workers of $pid did not start"
  sleep 0.5  # mid-run
  kill -s $sig $pid
  wait $pid && fail "SIG$sig: stoker exited 0" || true
  for _ in $(seq 50); do [ "$(workers_of $pid)" = 0 ] && break; sleep 0.1; done
  [ "$(workers_of $pid)" = 0 ] || fail "SIG$sig: $(workers_of $pid) stoker-worker left behind"
done
new_shm=$(comm -13 <(echo "$shm_before") <(ls -A /dev/shm 2>/dev/null | sort) | grep -i stoker || true)
[ -z "$new_shm" ] || fail "left in /dev/shm: $new_shm"
echo "ok: no worker or /dev/shm entry left after SIGINT, SIGTERM, SIGKILL"
