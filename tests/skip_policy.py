# SPDX-License-Identifier: Apache-2.0
# The skip rule of the Python oracle tests, in one place: a missing oracle (torch,
# torchvision) is a skip (exit 77, which ctest counts as skipped) where it may be missing,
# and a failure (exit 1) under CI=true or STOKER_REQUIRE_ORACLES=1 (scripts/test.sh), where
# scripts/deps.sh --test must have installed it. Not a test itself.
import os
import sys


def required():
    return os.environ.get("CI") == "true" or os.environ.get("STOKER_REQUIRE_ORACLES") == "1"


def skip(reason):
    """Ends the test: skipped with `reason`, or failed where the oracle is required."""
    if required():
        print(f"FAIL: {reason} (required here: CI=true or STOKER_REQUIRE_ORACLES=1)")
        sys.exit(1)
    print(f"SKIP: {reason}")
    sys.exit(77)
