#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds Stoker's libFuzzer targets with clang (ASan + UBSan, build-fuzz/) and runs each for
# a fixed time, one after the other, seeded from fuzz/corpus/<target>/ and the regressions.
# Inputs that crash are saved in fuzz/crashes/<target>/; fix the bug, then move the input to
# fuzz/regressions/<target>/ so that ctest replays it (docs/FUZZING.md). Exit 1 on a finding.
set -euo pipefail

usage() {
  cat <<USAGE
usage: scripts/fuzz.sh [--seconds N] [--build-only | --no-build] [TARGET...]
  --seconds N    run each target for N seconds (default 60)
  --build-only   configure and build build-fuzz/, run nothing
  --no-build     run the targets as last built
  TARGET         image_decode, list_file, safetensors (default: all three)
Needs clang and libFuzzer: scripts/deps.sh --fuzz. Runs at nice 19, one fuzzer at a time.
USAGE
}

seconds=60
build_only=0
no_build=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) [ $# -ge 2 ] || { usage >&2; exit 2; }; seconds="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    -h|--help) usage; exit 0 ;;
    image_decode|list_file|safetensors) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: --seconds wants a whole number, got '$seconds'" >&2; exit 2 ;; esac
[ ${#targets[@]} -gt 0 ] || targets=(image_decode list_file safetensors)

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${STOKER_FUZZ_BUILD:-$root/build-fuzz}"
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/deps.sh --fuzz)" >&2; exit 1; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ "$no_build" -eq 0 ] && [ ! -f "$build/CMakeCache.txt" ]; then
  # Optimised with debug info, the way libFuzzer targets are usually built; only the
  # libraries the targets link are compiled (no tests, no GPU or CPU training backend).
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTOKER_FUZZ=ON -DSTOKER_BUILD_TESTS=OFF -DSTOKER_WITH_CUDA=OFF -DSTOKER_WITH_DNNL=OFF \
    "${launcher[@]}" >/dev/null
fi
[ "$no_build" -eq 1 ] || nice -n 19 ninja -C "$build" -j "${STOKER_FUZZ_BUILD_JOBS:-2}" "${targets[@]/%/_fuzz}"
[ "$build_only" -eq 1 ] && exit 0

# Longest input per target: images need room for a real photo, the text formats do not.
max_len() {
  case "$1" in image_decode) echo 32768 ;; list_file) echo 4096 ;; safetensors) echo 8192 ;; esac
}

findings=0
summary=()
for t in "${targets[@]}"; do
  crashes="$root/fuzz/crashes/$t"
  work="$build/corpus/$t"  # what the fuzzer adds; the committed seeds stay as they are
  mkdir -p "$crashes" "$work"
  dirs=("$work" "$root/fuzz/corpus/$t")
  [ -d "$root/fuzz/regressions/$t" ] && dirs+=("$root/fuzz/regressions/$t")
  before=$(find "$crashes" -type f | wc -l)
  log="$build/$t.log"
  echo "fuzz.sh: $t for ${seconds}s (log: $log)" >&2
  start=$(date +%s)
  # -malloc_limit_mb: an input that makes Stoker ask for this much at once is a finding
  # (decoding is bounded by kImageMaxPixels, fuzz/fuzz_entry.h); -timeout: one input that
  # takes this long (wall seconds) is a hang. 60, not libFuzzer's usual 10: at nice 19 on a
  # shared machine a 0.2 CPU-second input has taken more than 10 s.
  rc=0
  TIMEFORMAT='%U %S'  # the fuzzer's CPU seconds (user, system), for the hours-run figures
  { time nice -n 19 "$build/fuzz/${t}_fuzz" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
    -timeout=60 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${dirs[@]}" >"$log" 2>&1; } 2>"$build/$t.cpu" || rc=$?
  wall=$(( $(date +%s) - start ))
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$build/$t.cpu")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  new=$(( $(find "$crashes" -type f | wc -l) - before ))
  summary+=("$(printf '%-13s %7s %7s %12s %9s %5s %9s' "$t" "$wall" "$cpu" "${execs:-?}" \
    "${cov:-?}" "$rc" "$new")")
  if [ "$rc" -ne 0 ] || [ "$new" -gt 0 ]; then
    findings=1
    grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error|internal check failed' \
      "$log" >&2 || tail -5 "$log" >&2
  fi
done
printf '%s\n' "# target       wall_s   cpu_s        execs  coverage  exit  findings" "${summary[@]}"
exit "$findings"
