#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU bundle's launcher (installed as bin/run by scripts/gpu_bundle.sh). The bundle
# carries every library except CUDA's: this finds those on the machine (the toolkit, the
# PyTorch wheels' nvidia/*/lib, ldconfig's cache), checks each one's own version against
# the one Stoker was linked with (CUDA_LIBS.txt), sets LD_LIBRARY_PATH and runs the program.
#   bin/run --check              the table of CUDA libraries; exit 1 if one is missing
#   bin/run PROGRAM [ARGS...]    PROGRAM from bin/, tests/ or bench/ of the bundle (or a path)
# STOKER_CUDA_LIBS=dir:dir looks there first; STOKER_RUN_TABLE=1 prints the table on every run
# (else only on trouble). CUDA_LIBS.txt's kinds: needed (ldd), dlopen (cuDNN's parts: needed
# too), driver (libcuda.so.1: reported, never required; without it --backend cuda says why).
set -uo pipefail

bundle=$(cd "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/.." && pwd)
list=$bundle/CUDA_LIBS.txt
[ -r "$list" ] || { echo "run: $list is missing: not a bundle made by scripts/gpu_bundle.sh" >&2; exit 127; }

# The libraries that travel gzipped (scripts/gpu_bundle.sh): unpacked once, into lib/ or,
# where the bundle is read-only, into a folder of this user's under $TMPDIR.
unpacked=$bundle/lib
for gz in "$bundle"/lib/*.gz; do
  [ -e "$gz" ] || continue
  name=$(basename "$gz" .gz)
  [ -e "$bundle/lib/$name" ] && continue
  if ! { gzip -dc "$gz" >"$bundle/lib/$name.tmp" && mv "$bundle/lib/$name.tmp" "$bundle/lib/$name"; } 2>/dev/null; then
    rm -f "$bundle/lib/$name.tmp"
    unpacked=${TMPDIR:-/tmp}/stoker-gpu-bundle-$(id -u)
    mkdir -p "$unpacked"
    [ -e "$unpacked/$name" ] || { gzip -dc "$gz" >"$unpacked/$name.tmp" && mv "$unpacked/$name.tmp" "$unpacked/$name"; } ||
      { echo "run: cannot unpack $gz into $unpacked" >&2; exit 127; }
  fi
done

# Folders that may hold CUDA libraries, most specific first.
candidate_dirs() {
  local d py
  [ -n "${STOKER_CUDA_LIBS:-}" ] && tr ':' '\n' <<<"$STOKER_CUDA_LIBS"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64 \
    /usr/local/cuda/targets/x86_64-linux/lib; do echo "$d"; done
  # The wheels (nvidia-cudnn-cu13, nvidia-cublas, ...): found without importing torch.
  for py in ${STOKER_PYTHON:-python3}; do
    command -v "$py" >/dev/null || continue
    "$py" - <<'EOF' 2>/dev/null
import importlib.util, glob, os
for name in ("nvidia", "torch"):
    spec = importlib.util.find_spec(name)
    for top in (spec.submodule_search_locations or []) if spec else []:
        for d in sorted(glob.glob(os.path.join(top, "*", "lib")) + glob.glob(os.path.join(top, "lib"))):
            print(d)
EOF
  done
  ldconfig -p 2>/dev/null | sed -n 's/.*x86-64.* => \(.*\)\/[^/]*$/\1/p' | sort -u
}

# Newer-or-equal by version order (13.0 vs 13.1.0, 130001 vs 130100).
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }

mapfile -t dirs <<<"$(candidate_dirs | awk 'NF && !seen[$0]++')"
missing=() older=() path_dirs=() table=()
while read -r soname linked kind _; do
  [[ -z $soname || $soname == \#* ]] && continue
  found=""
  for d in "${dirs[@]}"; do
    if [ -e "$d/$soname" ]; then found=$d/$soname; break; fi
  done
  if [ -z "$found" ]; then
    if [ "$kind" = driver ]; then
      table+=("$(printf '  %-40s %-10s not found: no NVIDIA driver here' "$soname" "")")
    else
      missing+=("$soname")
      table+=("$(printf '  %-40s %-10s MISSING' "$soname" "$linked")")
    fi
    continue
  fi
  [ "$kind" = driver ] || path_dirs+=("$(dirname "$found")")
  have=-
  [ "$linked" = - ] || have=$("$bundle/bin/stoker-cuda-versions" "$found" 2>/dev/null | awk '{print $2}')
  note=ok
  if [ "$linked" = - ]; then note=present
  elif [ -z "$have" ] || [ "$have" = "?" ]; then note="version unknown"
  elif ! at_least "$have" "$linked"; then note="OLDER than linked"; older+=("$soname $have < $linked")
  fi
  table+=("$(printf '  %-40s %-10s %-10s %s (%s)' "$soname" "$linked" "${have:-?}" "$found" "$note")")
done <"$list"

# glibc and libstdc++: the bundle cannot carry them; say so if this machine's are older.
need_glibc=$(awk '$1 == "glibc" { print $2 }' "$bundle/BUILD_INFO.txt")
have_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
sys_note=""
if [ -n "$have_glibc" ] && [ -n "$need_glibc" ] && ! at_least "$have_glibc" "$need_glibc"; then
  sys_note="glibc $have_glibc is older than the $need_glibc the bundle was built against"
fi

# libstdc++ likewise: the newest GLIBCXX symbol version the bundle needs must be in the system's.
need_cxx=$(awk '$1 == "glibcxx" { print $2 }' "$bundle/BUILD_INFO.txt")
sys_cxx=$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" && /x86-64/ && !p { p = $NF } END { print p }')
if [ -n "$need_cxx" ] && [ -n "$sys_cxx" ] && ! grep -qa "GLIBCXX_$need_cxx" "$sys_cxx"; then
  sys_note="${sys_note:+$sys_note; }$sys_cxx lacks GLIBCXX_$need_cxx, which the bundle needs"
fi

ld_path=$bundle/lib
[ "$unpacked" = "$bundle/lib" ] || ld_path=$unpacked:$ld_path
for d in $(printf '%s\n' "${path_dirs[@]}" | awk '!seen[$0]++'); do ld_path=$ld_path:$d; done
report() {
  printf 'run: CUDA libraries on this machine\n  %-40s %-10s %-10s %s\n' soname linked found where >&2
  printf '%s\n' "${table[@]}" >&2
  echo "  glibc: needs ${need_glibc:-?}, has ${have_glibc:-?}" >&2
}

if [ "${1:-}" = "--check" ]; then
  report
  [ -n "$sys_note" ] && echo "run: $sys_note" >&2
  if [ ${#missing[@]} -gt 0 ]; then
    echo "run: missing: ${missing[*]}; looked in: ${dirs[*]}" >&2
    exit 1
  fi
  echo "LD_LIBRARY_PATH=$ld_path"
  exit 0
fi
[ $# -ge 1 ] || { sed -n '7,9p' "$0" | sed 's/^# //' >&2; exit 2; }

prog=$1
shift
if [[ $prog != */* ]]; then
  for d in bin tests bench; do [ -x "$bundle/$d/$prog" ] && { prog=$bundle/$d/$prog; break; }; done
fi
[ -x "$prog" ] ||
  { echo "run: no program '$prog' in $bundle/bin, $bundle/tests or $bundle/bench" >&2; exit 127; }
if [ ${#missing[@]} -gt 0 ]; then
  report
  echo "run: cannot start $(basename "$prog"): ${missing[*]} not found on this machine (looked in" \
    "${#dirs[@]} folders: the CUDA toolkit, python3's nvidia/*/lib wheels, ldconfig). Install the" \
    "CUDA runtime, cuDNN 9, cuBLAS, CUPTI and NCCL (pip install nvidia-cudnn-cu13 ...) or set" \
    "STOKER_CUDA_LIBS=dir:dir" >&2
  exit 127
fi
if [ ${#older[@]} -gt 0 ] || [ -n "$sys_note" ] || [ "${STOKER_RUN_TABLE:-0}" = 1 ]; then report; fi
for o in "${older[@]}"; do echo "run: warning: $o (a newer function may be missing)" >&2; done
[ -n "$sys_note" ] && echo "run: warning: $sys_note" >&2
export LD_LIBRARY_PATH=$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export STOKER_WORKER=${STOKER_WORKER:-$bundle/bin/stoker-worker}
exec "$prog" "$@"
