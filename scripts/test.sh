#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies (test oracles included), build everything, run every test.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=ON > /dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$(nproc)"
