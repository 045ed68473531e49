#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every C, C++ and CUDA file of the tree is as clang-format (the repository's .clang-format)
# writes it: a change that is not formatted fails here, in CI, rather than in review.
# The files are git's tracked ones where this is a checkout, else every one under the tree.
#   tests/tools/clang_format_test.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: clang_format_test.sh SOURCE_DIR}
cd "$root"
if ! command -v clang-format >/dev/null; then
  . tests/skip_policy.sh
  skip "clang-format is not installed (Debian: clang-format; scripts/deps.sh --test)"
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.c' -o -name '*.cc' \
    -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
# Batches of files per clang-format call, on every core; a file it would change is named in
# its "file:line:col: error:" lines.
mapfile -t bad < <(printf '%s\0' "${files[@]}" |
  xargs -0 -n 40 -P "$(nproc)" clang-format --dry-run --Werror 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "FAIL: ${#bad[@]} of ${#files[@]} files are not clang-formatted (clang-format -i FILE):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "ok: ${#files[@]} files are clang-formatted"
