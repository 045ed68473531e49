# SPDX-License-Identifier: Apache-2.0
# The shell tests' check of a command line, in one place (sourced, not run):
#   expect CODE PATTERN ARGS...
# runs "$stoker" ARGS... (stdout to $tmp/out.txt, stderr to $tmp/err.txt) and fails the test
# unless it exits CODE and its stderr matches the extended regular expression PATTERN.
# The sourcing script sets $stoker (the binary) and $tmp (its scratch folder) first.
fail() {
  echo "FAIL: $*"
  exit 1
}
expect() {
  local code=$1 pattern=$2
  shift 2
  local got=0
  "$stoker" "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" || got=$?
  [ "$got" = "$code" ] || { cat "$tmp/out.txt" "$tmp/err.txt"; fail "stoker $*: exit $got, expected $code"; }
  grep -Eq -- "$pattern" "$tmp/err.txt" ||
    { cat "$tmp/err.txt"; fail "stoker $*: stderr does not match '$pattern'"; }
}
