#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU bundle (scripts/gpu_bundle.sh) on a bare Debian 12: a debootstrap --variant=minbase
# chroot with nothing of ours, no -dev package and no CUDA toolkit, only CUDA's runtime
# libraries where a GPU machine has them (/usr/local/cuda/lib64, hard links to this
# machine's). There: the launcher's table, `stoker --version`, `stoker gen`, a short CPU
# `bench`, a 2-step CPU `train`, and `--backend cuda` failing with the no-device message,
# not a missing library; then without the CUDA libraries the launcher names what is missing.
#   gpu_bundle_chroot_test.sh BUNDLE_DIR [BUILD_DIR_TO_MAKE_IT_IN]
# BUNDLE_DIR is made with scripts/gpu_bundle.sh when it holds no bundle. The chroot is made
# once and kept in ${STOKER_CHROOT_CACHE:-~/.cache/stoker}/chroot-bookworm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../skip_policy.sh"
bundle=${1:?usage: gpu_bundle_chroot_test.sh BUNDLE_DIR [BUILD_DIR]}
t_start=$(date +%s)

[ "$(id -u)" -eq 0 ] || skip "debootstrap and chroot need root (uid $(id -u))"
command -v debootstrap >/dev/null || skip "no debootstrap (Debian: debootstrap; scripts/deps.sh --test)"
if [ ! -x "$bundle/bin/run" ]; then
  echo "== no bundle in $bundle: making it (scripts/gpu_bundle.sh)"
  t0=$(date +%s)
  "$root/scripts/gpu_bundle.sh" --out "$bundle" ${2:+--build-dir "$2"}
  echo "== the bundle took $(($(date +%s) - t0)) s to build and pack"
fi

cache=${STOKER_CHROOT_CACHE:-$HOME/.cache/stoker}
chroot_dir=$cache/chroot-bookworm
mkdir -p "$cache"
# One maker at a time (parallel ctest runs); a half-made chroot is removed and made again.
exec 9>"$cache/chroot-bookworm.lock"
flock 9
if [ ! -f "$chroot_dir/.stoker-complete" ]; then
  rm -rf "$chroot_dir"
  echo "== making the chroot: debootstrap --variant=minbase bookworm (once; cached in $chroot_dir)"
  t0=$(date +%s)
  if ! debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian \
    >"$cache/debootstrap.log" 2>&1; then
    tail -n 5 "$cache/debootstrap.log"
    rm -rf "$chroot_dir"
    skip "debootstrap cannot run here (no network to deb.debian.org, or no chroot): $cache/debootstrap.log"
  fi
  echo "$(($(date +%s) - t0))" >"$chroot_dir/.stoker-complete"
fi
echo "== chroot: $chroot_dir (making it took $(cat "$chroot_dir/.stoker-complete") s, once)"
flock -u 9

# What the chroot must not have: nothing of Stoker's dependencies.
for lib in libopencv_core.so.406 libdnnl.so.3 libtbb.so.12 libturbojpeg.so.0 libjpeg.so.62 libfmt.so.9; do
  if chroot "$chroot_dir" /bin/sh -c "ldconfig -p | grep -q ' $lib '"; then
    echo "FAIL: the chroot has $lib: not bare"
    exit 1
  fi
done

# Fresh copies each run: the bundle, and CUDA's runtime libraries as hard links (no space).
# The mount-free layout keeps this working where bind mounts are refused.
rm -rf "$chroot_dir/opt/gpu-bundle" "$chroot_dir/usr/local/cuda" "$chroot_dir/tmp/t"
cp -a "$bundle" "$chroot_dir/opt/gpu-bundle"
mkdir -p "$chroot_dir/usr/local/cuda/lib64" "$chroot_dir/tmp/t"
while read -r soname _ kind where; do
  [[ -z $soname || $soname == \#* || $kind == driver ]] && continue
  ln "$(realpath "$where")" "$chroot_dir/usr/local/cuda/lib64/$soname" 2>/dev/null ||
    cp "$(realpath "$where")" "$chroot_dir/usr/local/cuda/lib64/$soname"
done <"$bundle/CUDA_LIBS.txt"

# /proc (the worker is found through /proc/self/exe) and /dev/shm (processes:N's batch
# slots), as every real machine has them; unmounted whatever happens.
cleanup() { umount "$chroot_dir/dev/shm" "$chroot_dir/proc" 2>/dev/null || true; }
trap cleanup EXIT
mount -t proc proc "$chroot_dir/proc" || skip "cannot mount /proc in the chroot (no mount privilege)"
mount -t tmpfs -o size=256m shm "$chroot_dir/dev/shm" || skip "cannot mount /dev/shm in the chroot"

in_chroot() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp "$@"; }
run=/opt/gpu-bundle/bin/run
fails=0
check() {  # check NAME EXPECTED_RC PATTERN CMD...: the exit code and a line of the output
  local name=$1 want=$2 pattern=$3 rc=0 t0
  shift 3
  t0=$(date +%s%N)
  in_chroot "$@" >"$cache/out.txt" 2>&1 || rc=$?
  if [ "$rc" != "$want" ] || ! grep -Eq "$pattern" "$cache/out.txt"; then
    echo "FAIL: $name: exit $rc (want $want), looked for /$pattern/ in:"
    tail -n 15 "$cache/out.txt"
    fails=$((fails + 1))
  else
    echo "ok: $name ($(( ($(date +%s%N) - t0) / 1000000 )) ms): $(grep -Em1 "$pattern" "$cache/out.txt")"
  fi
}

check "launcher finds CUDA's libraries" 0 "libcudnn.so.9 .*\(ok\)" $run --check
check "stoker --version" 0 "^stoker [0-9]" $run stoker --version
check "gen" 0 "images" $run stoker gen /tmp/t/data --sizes 64 --classes 2 --per-class 8
check "CPU bench" 0 "serial" $run stoker bench /tmp/t/data --reader serial --batch 4 --size 32 \
  --max-batches 3
check "CPU bench, processes:2 (stoker-worker)" 0 "processes:2" $run stoker bench /tmp/t/data \
  --reader processes:2 --batch 4 --size 32 --max-batches 3
check "2-step CPU train" 0 "step 2/2" $run stoker train /tmp/t/data --backend cpu --arch resnet18 \
  --batch 4 --size 32 --steps 2 --threads 1
check "--backend cuda: no device, not a missing library" 1 "no CUDA device" $run stoker train \
  --synthetic --backend cuda --arch resnet18 --batch 2 --size 32 --steps 1
check "a PNG is refused by name (JPEG-only build)" 1 "a PNG file, and this build decodes JPEG only" \
  /bin/sh -c "mkdir -p /tmp/t/png/c && printf '\211PNG\r\n\032\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\10\2\0\0\0' >/tmp/t/png/c/x.png && $run stoker bench /tmp/t/png --batch 1 --size 8 --max-batches 1 --on-error fail"
check "a CUDA GPU test skips with no device" 0 "no CUDA device" $run cuda_backend_test \
  --gtest_filter='CudaBackend.*'
# Without CUDA's libraries the launcher names each one missing and runs nothing.
rm -rf "$chroot_dir/usr/local/cuda"
check "no CUDA libraries: the launcher names them" 127 "cannot start stoker: .*libcudart.so.13.* not found" $run stoker --version

echo "== chroot test: $((fails)) failures, $(($(date +%s) - t_start)) s in all"
[ "$fails" -eq 0 ]
