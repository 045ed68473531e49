#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install dependencies, build in Release, and run `stoker bench`. With no
# arguments it generates the built-in default dataset (data/default, three resolutions),
# prints the serial-vs-parallel loader table, then trains ResNet-18 on the CPU (oneDNN) for 5
# short epochs fed by the loader (data-wait share, loss, top-1); any arguments go to
# `stoker bench`. The set-up prints one line per step; apt's and the build's output go to
# the log file it names ($STOKER_SETUP_LOG, default out/setup.log), shown when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
log=${STOKER_SETUP_LOG:-out/setup.log}
mkdir -p "$(dirname "$log")"
: > "$log"
echo "set-up: output in $log"
# step WHAT COMMAND...: one line saying WHAT and how it went; the command's output to $log.
step() {
  local what=$1
  shift
  printf '%s ... ' "$what"
  if "$@" >> "$log" 2>&1; then
    echo done
  else
    echo "failed; the end of $log:"
    tail -n 20 "$log" >&2
    exit 1
  fi
}
step "dependencies (scripts/deps.sh: apt-get for what is missing)" scripts/deps.sh
step "configure (cmake, Release)" \
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=OFF
step "build (stoker, stoker-worker)" cmake --build build --target stoker stoker-worker
echo
if [ $# -gt 0 ]; then exec build/tools/stoker bench "$@"; fi
# Epochs enough to run each row for 2 s: a single epoch of the default set lasts ~0.1 s, which
# start-up dominates; the "# steady state" line under each row leaves start-up out. The set is
# made in data/default, here, for the training run below.
build/tools/stoker bench --default-root data/default --epochs 100 --seconds 2
echo
# 5 epochs of the 400 images at 64 px with the default optimiser settings: the loss falls and
# top-1 (--val, on the same images: there is no held-out set) ends far above chance (10%).
build/tools/stoker train data/default/256px --arch resnet18 --size 64 --batch 32 --epochs 5 \
  --reader threads:2 --val data/default/256px
