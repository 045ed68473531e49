# SPDX-License-Identifier: Apache-2.0
# The skip rule of the shell tests, in one place (sourced, not run), as tests/skip_policy.py:
# `skip REASON` ends the test as skipped (exit 77, counted by ctest) where what is missing may
# be missing, and as failed (exit 1) under CI=true or STOKER_REQUIRE_ORACLES=1
# (scripts/test.sh), where scripts/deps.sh --test or the default build must have provided it.
# `skip_honest KIND REASON` skips everywhere, KIND one of tests/honest_skips.txt.
skip() {
  if [ "${CI:-}" = true ] || [ "${STOKER_REQUIRE_ORACLES:-}" = 1 ]; then
    echo "FAIL: $* (required here: CI=true or STOKER_REQUIRE_ORACLES=1)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
skip_honest() {
  local kind=$1 list
  shift
  list="$(dirname "${BASH_SOURCE[0]}")/honest_skips.txt"
  if ! grep -q "^$kind:" "$list"; then
    echo "FAIL: skip kind '$kind' is not in $list ($*)"
    exit 1
  fi
  echo "SKIP[$kind]: $*"
  exit 77
}
