#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies (test oracles included), build everything, run every test.
# Exits non-zero on any failure. Whatever scripts/deps.sh --test installs is required: a test
# missing an oracle, tool or library fails rather than skips (STOKER_REQUIRE_ORACLES=1; set it
# to 0 to allow those skips). Skips that remain (tests/honest_skips.txt: no GPU, say) are listed
# with their reasons. Then the numerics tests run once more under another oneDNN ISA cap.
set -euo pipefail
cd "$(dirname "$0")/.."
export STOKER_REQUIRE_ORACLES=${STOKER_REQUIRE_ORACLES:-1}
scripts/deps.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=ON > /dev/null
cmake --build build
# The lean GPU bundle, before the tests (tests/tools/gpu_bundle_chroot_test.sh runs it on a
# bare Debian): its own smaller build, made here rather than inside a test that runs beside others.
if [ -x build/tests/cuda_backend_test ]; then
  scripts/gpu_bundle.sh --out build/gpu-bundle --build-dir build/bundle-build >/dev/null
fi
rc=0
ctest --test-dir build --output-on-failure -j "$(nproc)" --output-junit ctest-junit.xml || rc=$?
# The skipped tests and why (ctest's summary names them, not the reason); with oracles
# required, a skip that tests/honest_skips.txt does not list fails the run.
python3 tests/skip_policy.py --check build/ctest-junit.xml || rc=1
# The numerics tests again with oneDNN capped below this CPU's best (AVX2 on an AVX-512 CPU,
# else SSE41): other kernels, other rounding, as on another CPU (scripts/test_isas.sh with no
# argument runs every cap this CPU supports).
scripts/test_isas.sh --build-dir build --other || rc=1
exit "$rc"
