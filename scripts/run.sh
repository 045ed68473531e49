#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install dependencies, build in Release, and run `stoker bench`. With no
# arguments it generates the built-in default dataset (data/default, three resolutions),
# prints the serial-vs-parallel loader table, then trains ResNet-18 on the CPU (oneDNN) for 5
# short epochs fed by the loader (data-wait share, loss, top-1); any arguments go to
# `stoker bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=OFF > /dev/null
cmake --build build --target stoker stoker-worker
if [ $# -gt 0 ]; then exec build/tools/stoker bench "$@"; fi
build/tools/stoker bench
echo
# 5 epochs of the 400 images at 64 px with the default optimiser settings: the loss falls and
# top-1 (--val, on the same images: there is no held-out set) ends far above chance (10%).
build/tools/stoker train data/default/256px --arch resnet18 --size 64 --batch 32 --epochs 5 \
  --reader threads:2 --val data/default/256px
