#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what Stoker needs from Debian 12's packages, only what is missing (idempotent,
# non-interactive). `--test` adds the test oracles; `--bench` what the benchmarks compare with;
# `--fuzz` clang with its libFuzzer runtime (scripts/fuzz.sh).
set -euo pipefail

packages=(g++ cmake ninja-build pkg-config libturbojpeg0-dev libjpeg62-turbo-dev libopencv-dev
  libtbb-dev libcli11-dev nlohmann-json3-dev libfmt-dev libxxhash-dev liburing-dev python3-pip
  libnfs-dev python3-dev pybind11-dev libdlpack-dev libopenmpi-dev openmpi-bin)
for arg in "$@"; do
  case "$arg" in
    # djpeg/cjpeg: pixel oracle; torchvision: ImageFolder order oracle; opencv-doc: real photos.
    # nfs-ganesha, rpcbind: the local NFS server of scripts/nfs_serve.sh; iproute2,
    # iputils-ping, iperf3: its --netns link (ip netns, tc; round-trip time; bandwidth).
    # chromium: loads the study report headless (tests/tools/report_chromium_test.sh).
    # pytest, numpy, PIL: the Python module's tests (tests/python); python3-venv: their
    # NumPy 2 venv (tests/python/numpy2_test.sh).
    # patchelf, debootstrap: the GPU bundle (scripts/gpu_bundle.sh) and its bare-Debian test.
    # clang-format: every C++ file is formatted (tests/tools/clang_format_test.sh).
    --test) packages+=(libgtest-dev libjpeg-turbo-progs python3 python3-torchvision opencv-doc
      nfs-ganesha nfs-ganesha-vfs rpcbind iproute2 iputils-ping iperf3 chromium python3-pytest
      python3-numpy python3-pil python3-venv patchelf debootstrap clang-format) ;;
    # libjemalloc2: PyTorch's training baseline runs ~2x faster with it than with glibc malloc.
    # python3-venv: bench/peers.sh's venv of PyPI peers; opencv-doc: its real-photo set.
    --bench) packages+=(libjpeg-turbo-progs python3 python3-torchvision fio libjemalloc2
      nfs-ganesha nfs-ganesha-vfs rpcbind iproute2 iputils-ping iperf3 python3-venv
      opencv-doc) ;;
    # clang 14 and its runtimes (libclang_rt.fuzzer, ASan, UBSan live in libclang-rt-14-dev).
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    *) echo "deps.sh: unknown option '$arg' (expected --test, --bench or --fuzz)" >&2; exit 2 ;;
  esac
done

# Where the CUDA toolkit is, pip fetches nvJPEG (below).
have_cuda=0
{ [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; } && have_cuda=1

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps.sh: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# oneDNN 3 for the CPU trainer (train/cpu), which Debian 12 lacks (it has 2.6.3): PyPI's
# onednn-cpu-gomp 3.2.0, Intel's CPU-only build on GNU OpenMP, the runtime Debian's oneDNN and
# the trainer's own SGD loop use (the TBB build would put oneDNN into the loader's task arena;
# the newer `onednn` 2026 wheels run the CPU engine through SYCL and need Intel's OpenCL
# runtime). Its library needs nothing beyond libgomp. Both wheels are checked against pinned
# hashes and unpacked once into /opt/stoker-deps/onednn, a system path as a package's would be
# (CMake looks there; the binaries keep it as their RUNPATH, so every user can run them).
# Without it the CPU trainer is not built: a failure here is fatal.
onednn_version=3.2.0
onednn_dir=/opt/stoker-deps/onednn
onednn_wheels=(
  "onednn-cpu-gomp==2023.2.0 2f22a54d6a890ed14bfa185d42a4be65d8b5b1df85dc1f0f3a9abe31620416fb"
  "onednn-devel-cpu-gomp==2023.2.0 9763c69e8c907e119056bd52ad918ca84ac9ba939d130a99dfa95ccca3e5e284")
if [ "$(cat "$onednn_dir/VERSION" 2>/dev/null)" != "$onednn_version" ]; then
  tmp=$(mktemp -d)
  for w in "${onednn_wheels[@]}"; do echo "${w%% *} --hash=sha256:${w##* }"; done >"$tmp/req.txt"
  if ! /usr/bin/python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
      --dest "$tmp" -r "$tmp/req.txt" >&2; then
    echo "deps.sh: could not fetch oneDNN $onednn_version (onednn-cpu-gomp) from PyPI" >&2
    rm -rf "$tmp"
    exit 1
  fi
  for whl in "$tmp"/*.whl; do /usr/bin/python3 -m zipfile -e "$whl" "$tmp/x"; done
  mkdir -p "$tmp/onednn/lib"
  cp -r "$tmp"/x/onednn_devel_cpu_gomp-*.data/data/include "$tmp/onednn/"
  # The wheel stores libdnnl.so, .so.3 and .so.3.2 as three copies: keep one, link the others.
  cp "$tmp"/x/onednn_cpu_gomp-*.data/data/lib/libdnnl.so.3.2 "$tmp/onednn/lib/"
  ln -s libdnnl.so.3.2 "$tmp/onednn/lib/libdnnl.so.3" && ln -s libdnnl.so.3 "$tmp/onednn/lib/libdnnl.so"
  echo "$onednn_version" >"$tmp/onednn/VERSION"
  chmod -R a+rX "$tmp/onednn"
  $sudo rm -rf "$onednn_dir" && $sudo mkdir -p "$(dirname "$onednn_dir")"
  $sudo cp -a "$tmp/onednn" "$onednn_dir"
  rm -rf "$tmp"
  echo "deps.sh: oneDNN $onednn_version in $onednn_dir" >&2
fi

# nvJPEG for --decode gpu, which the CUDA toolkit here lacks: header and library from PyPI's
# nvidia-nvjpeg wheel, pinned to a CUDA 13.0 release (the GPU machine's driver 580 runs 13.0),
# unpacked once into ~/.cache/stoker/nvjpeg (CMake looks there; stoker loads the library at
# run time). A failed fetch leaves GPU decode unbuilt, nothing else.
nvjpeg_version=13.0.4.44
nvjpeg_dir=$HOME/.cache/stoker/nvjpeg
if [ "$have_cuda" = 1 ] && [ "$(cat "$nvjpeg_dir/VERSION" 2>/dev/null)" != "$nvjpeg_version" ]; then
  tmp=$(mktemp -d)
  if /usr/bin/python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
      "nvidia-nvjpeg==$nvjpeg_version" >&2 &&
    rm -rf "$nvjpeg_dir" && mkdir -p "$nvjpeg_dir" &&
    /usr/bin/python3 -m zipfile -e "$tmp"/nvidia_nvjpeg-*.whl "$nvjpeg_dir"; then
    echo "$nvjpeg_version" >"$nvjpeg_dir/VERSION"
    echo "deps.sh: nvJPEG $nvjpeg_version in $nvjpeg_dir" >&2
  else
    echo "deps.sh: could not fetch nvidia-nvjpeg $nvjpeg_version from PyPI; --decode gpu is not built" >&2
  fi
  rm -rf "$tmp"
fi

# The cuDNN frontend (header-only C++, its graph API) for the GPU trainer's fused patterns
# (--fusions conv_stats, train/gpu/cudnn_fe_graphs.cc), which the CUDA toolkit lacks: the
# headers of PyPI's nvidia-cudnn-frontend wheel (its Python module is not used), pinned by
# hash, unpacked once into ~/.cache/stoker/cudnn-frontend. A failed fetch leaves that pattern
# unbuilt (--fusions conv_stats then says so), nothing else.
fe_version=1.32.0
fe_dir=$HOME/.cache/stoker/cudnn-frontend
fe_wheel="nvidia-cudnn-frontend==$fe_version --hash=sha256:c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0"
if [ "$have_cuda" = 1 ] && [ "$(cat "$fe_dir/VERSION" 2>/dev/null)" != "$fe_version" ]; then
  tmp=$(mktemp -d)
  echo "$fe_wheel" >"$tmp/req.txt"
  if /usr/bin/python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
      --python-version 3.11 --platform manylinux_2_28_x86_64 --dest "$tmp" -r "$tmp/req.txt" >&2 &&
    /usr/bin/python3 -m zipfile -e "$tmp"/nvidia_cudnn_frontend-*.whl "$tmp/x" &&
    rm -rf "$fe_dir" && mkdir -p "$fe_dir" && cp -r "$tmp/x/include" "$fe_dir/"; then
    echo "$fe_version" >"$fe_dir/VERSION"
    echo "deps.sh: cuDNN frontend $fe_version in $fe_dir" >&2
  else
    echo "deps.sh: could not fetch nvidia-cudnn-frontend $fe_version from PyPI; --fusions conv_stats is not built" >&2
  fi
  rm -rf "$tmp"
fi
