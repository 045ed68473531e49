#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The study report as a person sees it: `stoker report` renders the fixture, headless
# Chromium (Debian `chromium`) loads it offline, takes screenshots and dumps the DOM; the
# test fails on any console message or uncaught exception, a missing chart, a wrong series
# count (report_chromium_dom.py computes them from the JSON), or an external resource. It
# first proves it can fail: a copy of the page with a script error must be caught.
# Also renders an interrupted copy and checks its banner. Usage: STOKER FIXTURE [PYTHON]
# Set STOKER_REPORT_SHOTS=DIR to keep the screenshots. Skips without chromium (tests/skip_policy.sh: a failure where oracles are required).
set -euo pipefail
stoker=$1 fixture=$2 python=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip_policy.sh"

# The command's own errors first (they need no browser): exit 2 for usage, 1 naming the file.
errdir=$(mktemp -d)
expect_exit() {  # CODE PATTERN ARGS...: stoker ARGS exits CODE and says PATTERN on stderr
  local code=$1 pattern=$2 rc=0
  shift 2
  "$stoker" "$@" >/dev/null 2>"$errdir/err" || rc=$?
  if [ $rc -ne "$code" ] || ! grep -q -- "$pattern" "$errdir/err"; then
    echo "FAIL: stoker $* exited $rc (want $code), stderr: $(cat "$errdir/err")" >&2
    exit 1
  fi
}
expect_exit 2 "result is required" report
expect_exit 1 "cannot open '$errdir/none.json'" report "$errdir/none.json"
echo '{"results": [' >"$errdir/cut.json"
expect_exit 1 "'$errdir/cut.json' is not valid JSON" report "$errdir/cut.json"
echo '[1, 2]' >"$errdir/array.json"
expect_exit 1 "is not a study result" report "$errdir/array.json"
# Another command's {context, results} (bench, train) is named, not rendered as "0 ok" cells.
echo '{"context": {"tool": "stoker bench"}, "results": [{"images": 8}]}' >"$errdir/bench.json"
expect_exit 1 "is the output of \`stoker bench\`, not a study or qualification result" report "$errdir/bench.json"
echo '{"results": []}' >"$errdir/bare.json"
expect_exit 1 "a document without a context naming its tool, not a study or qualification result" report "$errdir/bare.json"
expect_exit 1 "cannot write $errdir/no/such/dir/r.html.tmp" report "$fixture" -o "$errdir/no/such/dir/r.html"
"$stoker" report "$fixture" -o - | grep -q '</html>' || { echo "FAIL: -o - wrote no page" >&2; exit 1; }
rm -rf "$errdir"

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  skip "chromium is not installed (scripts/deps.sh --test installs it)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
sandbox=()
[ "$(id -u)" -ne 0 ] || sandbox=(--no-sandbox)  # Chromium refuses to run as root with one

# chrome URL OUT_PREFIX: screenshot OUT_PREFIX.png, DOM OUT_PREFIX.dom, log OUT_PREFIX.log
chrome() {
  local url=$1 out=$2 rc=0
  local flags=(--headless=new "${sandbox[@]}" --disable-gpu --hide-scrollbars --no-first-run
    --no-default-browser-check --disable-extensions --disable-background-networking
    --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 --window-size=1280,4000)
  timeout 90 "$chromium" "${flags[@]}" --screenshot="$out.png" "$url" 2>"$out.log" >/dev/null || rc=$?
  timeout 90 "$chromium" "${flags[@]}" --dump-dom "$url" 2>>"$out.log" >"$out.dom" || rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: chromium exited with $rc on $url" >&2
    tail -20 "$out.log" >&2
    return 1
  fi
  [ -s "$out.png" ] && [ -s "$out.dom" ] || { echo "FAIL: no screenshot or DOM for $url" >&2; return 1; }
}

# Console messages and uncaught exceptions, as Chromium logs them with --enable-logging.
console_errors() { grep -E 'CONSOLE|Uncaught' "$1" || true; }

fail=0
"$stoker" report "$fixture" -o "$tmp/report.html" >"$tmp/report.out"
grep -q "^- " "$tmp/report.out" || { echo "FAIL: stoker report printed no conclusions" >&2; fail=1; }
chrome "file://$tmp/report.html" "$tmp/report"
if [ -n "$(console_errors "$tmp/report.log")" ]; then
  echo "FAIL: console messages on the report:" >&2
  console_errors "$tmp/report.log" >&2
  fail=1
fi
"$python" "$here/report_chromium_dom.py" "$fixture" "$tmp/report.dom" "$tmp/report.html" || fail=1

# The test must be able to fail: a page with a script error and one with a chart removed.
sed 's|</body>|<script>undefined_function_of_a_broken_page();</script></body>|' "$tmp/report.html" \
  >"$tmp/broken.html"
chrome "file://$tmp/broken.html" "$tmp/broken"
if [ -z "$(console_errors "$tmp/broken.log")" ]; then
  echo "FAIL: a page with an uncaught exception went unnoticed (is console logging on?)" >&2
  fail=1
fi
"$python" - "$tmp/report.dom" "$tmp/missing.dom" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
# Drop the first bandwidth panel's <svg ...>...</svg>.
m = re.search(r'<svg data-chart="bandwidth".*?</svg>', dom, re.S)
open(sys.argv[2], "w", encoding="utf-8").write(dom[:m.start()] + dom[m.end():])
PY
if "$python" "$here/report_chromium_dom.py" "$fixture" "$tmp/missing.dom" "$tmp/report.html" >/dev/null; then
  echo "FAIL: a page with a chart missing passed the DOM check" >&2
  fail=1
fi

# An interrupted study: the finished cells only, and a banner saying so.
"$python" - "$fixture" "$tmp/interrupted.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["results"] = s["results"][: len(s["results"]) // 3]
s["context"].update(state="interrupted", finished_cells=len(s["results"]))
json.dump(s, open(sys.argv[2], "w"))
PY
"$stoker" report "$tmp/interrupted.json" -o "$tmp/interrupted.html" >/dev/null
chrome "file://$tmp/interrupted.html" "$tmp/interrupted"
if [ -n "$(console_errors "$tmp/interrupted.log")" ]; then
  echo "FAIL: console messages on the interrupted report:" >&2
  console_errors "$tmp/interrupted.log" >&2
  fail=1
fi
"$python" "$here/report_chromium_dom.py" "$tmp/interrupted.json" "$tmp/interrupted.dom" \
  "$tmp/interrupted.html" || fail=1
grep -q 'This study was interrupted' "$tmp/interrupted.dom" || {
  echo "FAIL: no interrupted banner" >&2
  fail=1
}

# A blank screenshot is a broken page too (where Pillow is there to look).
"$python" - "$tmp/report.png" <<'PY' || fail=1
import sys
try:
    from PIL import Image
except ImportError:
    print("note: no Pillow, screenshot not inspected"); sys.exit(0)
im = Image.open(sys.argv[1]).convert("RGB")
colours = im.crop((0, 0, im.width, 1200)).getcolors(1 << 20) or []
if len(colours) < 50:
    print(f"FAIL: the screenshot's top has {len(colours)} colours: blank page?"); sys.exit(1)
print(f"screenshot {im.width}x{im.height}, {len(colours)} colours in the top 1200 px")
PY

if [ -n "${STOKER_REPORT_SHOTS:-}" ]; then
  mkdir -p "$STOKER_REPORT_SHOTS"
  cp "$tmp/report.png" "$tmp/interrupted.png" "$tmp/report.html" "$STOKER_REPORT_SHOTS/"
fi
[ $fail -eq 0 ] && echo "report_chromium: ok"
exit $fail
