#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The numerics tests that run oneDNN (ctest label `numerics`: the CPU backend layer by layer
# and whole, data parallelism, and their torch oracles) under oneDNN ISA caps, one ctest run
# per cap: other kernels round otherwise, as another CPU would (an Intel Xeon without bf16, an AMD EPYC with it), so a
# bound that holds only on the CPU it was written on fails here. Needs a built tree
# (scripts/test.sh builds one).
#   scripts/test_isas.sh [--build-dir DIR] [CAP...|--other]
# No CAP: every cap this CPU supports, then the default (uncapped). --other: one cap below
# the best this CPU has (AVX2 on an AVX-512 CPU, else SSE41), which scripts/test.sh runs.
# Caps (oneDNN's ONEDNN_MAX_CPU_ISA): SSE41 AVX AVX2 AVX512_CORE AVX512_CORE_VNNI
# AVX512_CORE_BF16 AVX512_CORE_AMX (a Sapphire Rapids' own: its default run is AMX, so its
# BF16 cap is another set of kernels, issue 40), and default. A cap above what the CPU has
# changes nothing (not run), nor does its best one beside the default (run once).
# Each cap's full output is kept in BUILD/isas/CAP.log. Exits 1 if any run fails, 2 on a usage
# error.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
caps=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    -h|--help) sed -n '3,16p' "$0"; exit 0 ;;
    --other) caps+=(other); shift ;;
    SSE41|AVX|AVX2|AVX512_CORE|AVX512_CORE_VNNI|AVX512_CORE_BF16|AVX512_CORE_AMX|default) caps+=("$1"); shift ;;
    *) echo "test_isas.sh: usage error: unknown cap or option '$1' (caps: SSE41 AVX AVX2 AVX512_CORE AVX512_CORE_VNNI AVX512_CORE_BF16 AVX512_CORE_AMX default, or --other)" >&2; exit 2 ;;
  esac
done
[ -f "$build/CTestTestfile.cmake" ] || { echo "test_isas.sh: no built tree in '$build' (run scripts/test.sh first)" >&2; exit 1; }

# What this CPU can run, from its flags (oneDNN would silently run a lower ISA otherwise).
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
supported() {
  case $1 in
    default) return 0 ;;
    SSE41) has sse4_1 ;;
    AVX) has avx ;;
    AVX2) has avx2 ;;
    AVX512_CORE) has avx512f avx512bw avx512vl avx512dq ;;
    AVX512_CORE_VNNI) has avx512f avx512bw avx512vl avx512dq avx512_vnni ;;
    AVX512_CORE_BF16) has avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16 ;;
    AVX512_CORE_AMX) has avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8 ;;
  esac
}
if [ ${#caps[@]} -eq 0 ]; then
  caps=(SSE41 AVX AVX2 AVX512_CORE AVX512_CORE_VNNI AVX512_CORE_BF16 AVX512_CORE_AMX default)
fi
best=default
for cap in SSE41 AVX AVX2 AVX512_CORE AVX512_CORE_VNNI AVX512_CORE_BF16 AVX512_CORE_AMX; do
  if supported "$cap"; then best=$cap; fi
done
for i in "${!caps[@]}"; do
  if [ "${caps[$i]}" = other ]; then
    if supported AVX512_CORE; then caps[$i]=AVX2; else caps[$i]=SSE41; fi
  fi
done

export STOKER_REQUIRE_ORACLES=${STOKER_REQUIRE_ORACLES:-1}
rc=0 ran=() failed=() unsupported=()
for cap in "${caps[@]}"; do
  if ! supported "$cap"; then
    unsupported+=("$cap")
    echo "# $cap: this CPU cannot run it (flags lack it); not run"
    continue
  fi
  if [ "$cap" = "$best" ] && [[ " ${caps[*]} " == *" default "* ]]; then
    echo "# $cap: this CPU's best, the same kernels as the default run; not run twice"
    continue
  fi
  echo "# numerics tests with ONEDNN_MAX_CPU_ISA=$cap"
  start=$SECONDS
  if [ "$cap" = default ]; then
    (unset ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA; ctest --test-dir "$build" -L numerics -j "$(nproc)" --output-on-failure) || { rc=1; failed+=("$cap"); }
  else
    # The reshape leak test holds memory, not rounding: the default run has it.
    ONEDNN_MAX_CPU_ISA=$cap ctest --test-dir "$build" -L numerics -E 'ReshapeCyclesHoldNoMoreMemory' \
      -j "$(nproc)" --output-on-failure || { rc=1; failed+=("$cap"); }
  fi
  ran+=("$cap ($((SECONDS - start)) s)")
  # Every test's whole output, for the errors and bounds the oracles print.
  mkdir -p "$build/isas" && cp "$build/Testing/Temporary/LastTest.log" "$build/isas/$cap.log"
done
echo "# numerics under oneDNN caps: ran ${ran[*]:-none}; failed ${failed[*]:-none}; not supported here ${unsupported[*]:-none}"
exit "$rc"
