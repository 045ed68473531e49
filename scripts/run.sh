#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install dependencies, build in Release, and run `stoker bench`. With no
# arguments it generates the built-in default dataset (data/default, three resolutions)
# and prints the serial-vs-parallel loader table; any arguments go to `stoker bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=OFF > /dev/null
cmake --build build --target stoker stoker-worker
exec build/tools/stoker bench "$@"
