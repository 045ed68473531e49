#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the lean GPU build and packs it into one folder that runs on a bare CUDA machine
# (docs/GPU.md): stoker, stoker-worker, the GPU tests and bench programs, the scripts
# gpu_check.sh runs, and every non-CUDA shared library they need (RPATH $ORIGIN/../lib), with
# a manifest.
# CUDA's own libraries (cudart, cuDNN, cuBLAS, CUPTI, NCCL) are not packed: bin/run finds
# them on the target. Fails if the folder would exceed the device tool's 64 MiB.
#
#   scripts/gpu_bundle.sh [--out DIR] [--build-dir DIR] [--archs "90"] [--no-build]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/out/gpu-bundle
build=$root/build-bundle
archs=90  # H100 and H200; "80;90" adds the A100 for about 2 MiB more
do_build=1
usage() { sed -n '9p' "$0" | sed 's/^#  *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "${2:?--out needs a folder}"); shift 2 ;;
    --build-dir) build=$(realpath -m "${2:?--build-dir needs a folder}"); shift 2 ;;
    --archs) archs=${2:?--archs needs a list like 90 or \"80;90\"}; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h | --help) usage ;;
    *) echo "gpu_bundle.sh: unknown option '$1'" >&2; usage ;;
  esac
done
limit=$((64 * 1024 * 1024))
for tool in patchelf strip ldd dpkg-query; do
  command -v "$tool" >/dev/null || { echo "gpu_bundle.sh: needs $tool (scripts/deps.sh --test)" >&2; exit 1; }
done

# What the bundle carries, and where from in the build tree.
programs=(tools/stoker loader/stoker-worker tools/stoker-cuda-versions)
tests=(tests/cuda_backend_test tests/backend_conformance_test tests/gpu_host_test
  tests/collective_test tests/data_parallel_cuda_test tests/gpu_decode_test)
benches=(bench/cuda_step_driver bench/gpu_facts)

# The lean build, by choice (docs/GPU.md says why each): no OpenCV imgcodecs (JPEG only:
# about 150 libraries less), no MPI (one GPU; the NCCL test runs as one rank), no Python
# module (the target's Python is another version), CUDA code for $archs only.
if [ "$do_build" = 1 ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=ON \
    -DSTOKER_WITH_CUDA=ON -DSTOKER_WITH_DNNL=ON -DSTOKER_WITH_IMGCODECS=OFF -DSTOKER_WITH_MPI=OFF \
    -DSTOKER_WITH_PYTHON=OFF -DCMAKE_CUDA_ARCHITECTURES="$archs" "${launcher[@]}" >/dev/null
  targets=()
  for p in "${programs[@]}" "${tests[@]}" "${benches[@]}"; do targets+=("$(basename "$p")"); done
  cmake --build "$build" --target "${targets[@]}"
fi

rm -rf "$out"
mkdir -p "$out"/{bin,lib,tests,scripts,bench,data/photos}
for p in "${programs[@]}"; do install -m 755 "$build/$p" "$out/bin/"; done
for p in "${tests[@]}"; do install -m 755 "$build/$p" "$out/tests/"; done
for p in "${benches[@]}"; do install -m 755 "$build/$p" "$out/bench/"; done
# Every program the bundle carries (bench/ holds Python scripts too).
carried=("$out"/bin/stoker* "$out"/tests/* "${benches[@]/#/$out/}")
install -m 755 "$root/scripts/gpu_check.sh" "$out/scripts/"
install -m 755 "$root/bench/torch_gpu_bench.py" "$root/bench/gpu_check_summary.py" "$out/bench/"
install -m 644 "$root/bench/fusion_choice.py" "$out/bench/"
install -m 755 "$root/scripts/gpu_run.sh" "$out/bin/run"
# A few real photos (opencv-doc's; about 240 KB), so that gpu_decode_test's oracle runs on real
# JPEGs on the bare GPU machine too (tests/augment/gpu/gpu_decode_test.cc: kPhotos, the same list).
photos=/usr/share/doc/opencv-doc/examples/data
for p in HappyFish.jpg butterfly.jpg home.jpg messi5.jpg squirrel_cls.jpg Blender_Suzanne1.jpg; do
  if [ -f "$photos/$p" ]; then install -m 644 "$photos/$p" "$out/data/photos/"
  else echo "gpu_bundle.sh: no $photos/$p (scripts/deps.sh --test installs opencv-doc)" >&2
  fi
done

# Libraries the target has or must bring itself: the C and C++ runtimes (every Linux with
# a CUDA driver has them; a copy of glibc cannot be carried), and CUDA's (bin/run finds them).
base_re='^(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'
cuda_re='^lib(cuda|cudart|cudnn[a-z_]*|cublas|cublasLt|cupti|nccl|nvrtc|nvJitLink|nvidia-ml)\.so'
# Loaded with dlopen, so ldd does not list them: oneTBB's scalable allocator.
extra_libs=(libtbbmalloc.so.2)

declare -A bundled=() cuda=() base=()
collect() {  # collect ELF: sort its closure into bundled / cuda / base
  local line soname path
  while read -r line; do
    soname=${line%% *}
    path=$(sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p' <<<"$line")
    if [[ $soname =~ $cuda_re ]]; then cuda[$soname]=${path:-missing}
    elif [[ $soname =~ $base_re || $soname == linux-vdso* || $soname == /* ]]; then base[$soname]=1
    elif [ -n "$path" ]; then bundled[$soname]=$path
    else echo "gpu_bundle.sh: $1 needs $soname, which ldd cannot find here" >&2; exit 1
    fi
  done < <(ldd "$1" | sed 's/^[[:space:]]*//')
}
for f in "${carried[@]}"; do collect "$f"; done
for l in "${extra_libs[@]}"; do
  p=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64/ && !p { p = $NF } END { print p }')
  [ -n "$p" ] && bundled[$l]=$p
done

# The Debian package that owns a file; dpkg knows it by one of its /lib or /usr/lib names.
pkg_of() {
  local p alt found
  for p in "$@"; do
    for alt in "$p" "${p#/usr}" "/usr$p"; do
      found=$(dpkg -S "$alt" 2>/dev/null | sed -n '1{s/: .*//; s/:[a-z0-9]*$//; p}' || true)
      [ -n "$found" ] && { echo "$found"; return; }
    done
  done
  return 0  # none (oneDNN 3 is PyPI's): the caller says so
}

manifest=$out/MANIFEST.tsv
printf 'file\tbytes\tversion\tdebian_package\tsource\n' >"$manifest"
for soname in $(printf '%s\n' "${!bundled[@]}" | sort); do
  src=$(realpath "${bundled[$soname]}")
  install -m 644 "$src" "$out/lib/$soname"
  strip --strip-unneeded "$out/lib/$soname" 2>/dev/null || true
  patchelf --set-rpath '$ORIGIN' "$out/lib/$soname"
  pkg=$(pkg_of "$src" "${bundled[$soname]}")
  ver=$([ -n "$pkg" ] && dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo unknown)
  # oneDNN 3 is not Debian's: scripts/deps.sh unpacked PyPI's onednn-cpu-gomp.
  if [[ $src == "/opt/stoker-deps/onednn/"* ]]; then
    pkg="(PyPI onednn-cpu-gomp)" ver=$(cat /opt/stoker-deps/onednn/VERSION)
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "lib/$soname" "$(stat -c %s "$out/lib/$soname")" "$ver" \
    "${pkg:-unknown}" "$src" >>"$manifest"
done
# nvJPEG (--decode gpu), which stoker loads at run time from ../lib: the PyPI wheel
# scripts/deps.sh unpacked, carried as NVIDIA built it (no strip, no new RPATH).
nvjpeg_dir=$HOME/.cache/stoker/nvjpeg
if [ -f "$nvjpeg_dir/nvidia/cu13/lib/libnvjpeg.so.13" ]; then
  install -m 644 "$nvjpeg_dir/nvidia/cu13/lib/libnvjpeg.so.13" "$out/lib/"
  printf '%s\t%s\t%s\t%s\t%s\n' lib/libnvjpeg.so.13 "$(stat -c %s "$out/lib/libnvjpeg.so.13")" \
    "$(cat "$nvjpeg_dir/VERSION")" "(PyPI nvidia-nvjpeg)" "$nvjpeg_dir" >>"$manifest"
else
  echo "gpu_bundle.sh: no nvJPEG in $nvjpeg_dir (scripts/deps.sh fetches it): --decode gpu will not run" >&2
fi
for f in "${carried[@]}"; do
  strip --strip-unneeded "$f"
  patchelf --set-rpath '$ORIGIN/../lib' "$f"
  printf '%s\t%s\t%s\t%s\t%s\n' "${f#"$out"/}" "$(stat -c %s "$f")" \
    "$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)" "(built here)" \
    "$build" >>"$manifest"
done

# Libraries over 4 MiB travel gzipped (oneDNN alone is 44 MB, 11 MB gzipped): bin/run unpacks
# them on the first run. gzip is everywhere (Debian's minbase included); xz is not.
for f in "$out"/lib/*; do
  [ "$(stat -c %s "$f")" -gt $((4 * 1024 * 1024)) ] || continue
  gzip -9n "$f"
  printf '%s\t%s\t%s\t%s\t%s\n' "lib/$(basename "$f").gz" "$(stat -c %s "$f.gz")" "-" \
    "(gzip of lib/$(basename "$f"))" "bin/run unpacks it" >>"$manifest"
done

# The CUDA libraries as linked here, with the versions they report (bin/stoker-cuda-versions):
# bin/run checks the target's against this list. cuDNN loads its parts with dlopen.
cudnn_parts=(libcudnn_ops.so.9 libcudnn_cnn.so.9 libcudnn_adv.so.9 libcudnn_graph.so.9
  libcudnn_heuristic.so.9 libcudnn_engines_precompiled.so.9 libcudnn_engines_runtime_compiled.so.9)
{
  echo "# soname version-linked kind found-here-at (scripts/gpu_bundle.sh; read by bin/run)"
  for soname in $(printf '%s\n' "${!cuda[@]}" | sort); do
    [ "${cuda[$soname]}" = missing ] && { echo "gpu_bundle.sh: $soname not found here" >&2; exit 1; }
    ver=$("$out/bin/stoker-cuda-versions" "${cuda[$soname]}" | awk '{print $2}')
    echo "$soname ${ver:-?} needed ${cuda[$soname]}"
  done
  cudnn_dir=$(dirname "${cuda[libcudnn.so.9]}")
  for part in "${cudnn_parts[@]}"; do
    [ -e "$cudnn_dir/$part" ] && echo "$part - dlopen $cudnn_dir/$part"
  done
  echo "libcuda.so.1 - driver -"
} >"$out/CUDA_LIBS.txt"
# The newest glibc and libstdc++ symbol versions any carried file needs (bin/run checks).
need_ver() {
  objdump -T "$out"/bin/* "${carried[@]}" "$out"/lib/* 2>/dev/null | grep -o "$1_[0-9.]*" |
    sed "s/^$1_//" | sort -V | tail -1
}
{
  echo "glibc $(need_ver GLIBC)"
  echo "glibcxx $(need_ver GLIBCXX)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cuda_archs $archs"
  echo "from_the_system $(printf '%s\n' "${!base[@]}" | grep -v '^/\|vdso' | sort | tr '\n' ' ')"
  echo "commit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
} >"$out/BUILD_INFO.txt"

cat >"$out/README.txt" <<'EOF'
Stoker's GPU bundle (scripts/gpu_bundle.sh; docs/GPU.md). On the GPU machine:
  out/gpu-bundle/bin/run --check          # the CUDA libraries found, their versions
  out/gpu-bundle/bin/run stoker --version # any carried program through the launcher
  out/gpu-bundle/scripts/gpu_check.sh     # the whole evaluation, results under $OUT
MANIFEST.tsv: every file, its size, version and Debian package. CUDA_LIBS.txt: the CUDA
libraries as linked (found on the target by bin/run). BUILD_INFO.txt: glibc/libstdc++ needed.
EOF

total=$(du -sb "$out" | cut -f1)
printf '%-34s %10s\n' "gpu_bundle.sh: largest files" "bytes"
(cd "$out" && find . -type f -printf '%s %P\n' | sort -rn | awk 'NR <= 8 {printf "  %-32s %10d\n", $2, $1}')
echo "gpu_bundle.sh: $out: ${#bundled[@]} libraries, ${#cuda[@]} CUDA libraries left to the target," \
  "total $total bytes ($((total / 1048576)) MiB; limit 64 MiB)"
if [ "$total" -gt "$limit" ]; then
  echo "gpu_bundle.sh: the bundle is larger than the device tool's 64 MiB: $total bytes" >&2
  exit 1
fi
