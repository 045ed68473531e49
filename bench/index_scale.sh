#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Index time and memory for an ImageNet-sized tree: 1000 classes x 1281 empty files named
# like ImageNet's (n01440764/n01440764_10026.JPEG), i.e. 1,281,000 entries. Runs
# `stoker index` several times (dentry cache warm after the first) and, as root, once after
# dropping the caches.
# Usage: bench/index_scale.sh [--build DIR] [--tree DIR] [--repeats N]
set -euo pipefail
build=build tree=data/index-1.28M repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --tree) tree=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--tree DIR] [--repeats N]" >&2; exit 2 ;;
  esac
done
stoker=$build/tools/stoker
[ -x "$stoker" ] || { echo "no $stoker: build first (cmake -S . -B build -G Ninja && ninja -C build)" >&2; exit 1; }

if [ ! -f "$tree/.complete" ]; then
  echo "# creating $tree (1000 x 1281 empty files; once)" >&2
  python3 - "$tree" <<'PY'
import os, sys
root = sys.argv[1]
for c in range(1000):
    d = os.path.join(root, f"n{1440764 + c * 1000:08d}")
    os.makedirs(d, exist_ok=True)
    for i in range(1281):
        open(os.path.join(d, f"{os.path.basename(d)}_{10000 + i * 7}.JPEG"), "wb").close()
open(os.path.join(root, ".complete"), "w").close()
PY
fi

echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus"
if [ "$(id -u)" = 0 ] && sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
  echo "# cold (after drop_caches):"
  "$stoker" index "$tree"
fi
echo "# warm:"
for _ in $(seq "$repeats"); do "$stoker" index "$tree"; done
