#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/run.sh on a "fresh machine": its set-up prints one line per step, whatever apt-get
# and the build print (here a thousand lines each, from stand-ins on PATH for apt-get,
# dpkg-query and cmake), keeps that output in the log it names, and on a failing step shows
# the log's end and exits 1. The stand-ins run nothing real; stoker is a stub too.
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/repo/scripts" "$tmp/bin" "$tmp/repo/build/tools"
cp "$src/scripts/run.sh" "$src/scripts/deps.sh" "$tmp/repo/scripts/"
cat > "$tmp/bin/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat > "$tmp/bin/apt-get" <<'SH'
#!/bin/sh
i=0; while [ $i -lt 1000 ]; do echo "Get:$i http://deb.debian.org/debian bookworm/main amd64 pkg$i"; i=$((i+1)); done
SH
cat > "$tmp/bin/cmake" <<'SH'
#!/bin/sh
[ -n "${FAIL_BUILD:-}" ] && [ "$1" = --build ] && { echo "ninja: build stopped: subcommand failed."; exit 1; }
i=0; while [ $i -lt 1000 ]; do echo "[$i/1000] Building CXX object x$i.o"; i=$((i+1)); done
SH
cat > "$tmp/repo/build/tools/stoker" <<'SH'
#!/bin/sh
echo "stoker $1"
SH
chmod +x "$tmp/bin/"* "$tmp/repo/build/tools/stoker"

export PATH="$tmp/bin:$PATH"
bash "$tmp/repo/scripts/run.sh" > "$tmp/out.txt" 2> "$tmp/err.txt" || { cat "$tmp/out.txt" "$tmp/err.txt"; fail "run.sh"; }
cat "$tmp/out.txt"
grep -q "^set-up: output in out/setup.log$" "$tmp/out.txt" || fail "the log is not named"
[ "$(grep -c ' \.\.\. done$' "$tmp/out.txt")" = 3 ] || fail "not one line per step"
[ "$(wc -l < "$tmp/out.txt")" -le 10 ] || fail "run.sh printed $(wc -l < "$tmp/out.txt") lines"
grep -q "Get:999" "$tmp/repo/out/setup.log" || fail "apt's output is not in the log"
grep -q "Building CXX object x999" "$tmp/repo/out/setup.log" || fail "the build's output is not in the log"
grep -q "^stoker bench" "$tmp/out.txt" && grep -q "^stoker train" "$tmp/out.txt" || fail "the job did not run"
! grep -q "Get:" "$tmp/err.txt" || fail "apt output on stderr"

# A failing step: named, the log's end shown, exit 1, nothing after it runs.
rc=0
FAIL_BUILD=1 bash "$tmp/repo/scripts/run.sh" > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
[ "$rc" = 1 ] || fail "a failed build: exit $rc"
grep -q "^build (stoker, stoker-worker) \.\.\. failed; the end of out/setup.log:" "$tmp/out.txt" ||
  { cat "$tmp/out.txt"; fail "the failed step is not said"; }
grep -q "subcommand failed" "$tmp/err.txt" || fail "the log's end is not shown"
grep -q "^stoker" "$tmp/out.txt" && fail "the job ran after a failed build"
echo PASS
