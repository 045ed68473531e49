#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python module's labels and indices under NumPy 2 (issue 47: built with Debian's pybind11
# 2.10, they came out with a stride of 0 under NumPy 2, every label the batch's last).
# Usage: numpy2_test.sh BUILD_DIR STOKER_CLI
# The NumPy 2 environment is a venv of its own, made once under BUILD_DIR/numpy2-venv from
# Debian's python3 (the module's ABI) with PyPI's numpy>=2 and without Debian's site-packages,
# so Debian's NumPy 1 cannot be what imports; later runs reuse it (STOKER_NUMPY2_PYTHON names
# another interpreter instead). Its first run needs PyPI (about 10 s).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../skip_policy.sh
. "$HERE/../skip_policy.sh"
BUILD=$(cd "${1:?usage: numpy2_test.sh BUILD_DIR STOKER_CLI}" && pwd)
CLI=${2:?usage: numpy2_test.sh BUILD_DIR STOKER_CLI}
VENV=$BUILD/numpy2-venv
PY=${STOKER_NUMPY2_PYTHON:-$VENV/bin/python}

numpy2() { "$1" -c 'import numpy, sys; sys.exit(int(numpy.__version__.split(".")[0]) < 2)' 2>/dev/null; }
if [ -z "${STOKER_NUMPY2_PYTHON:-}" ] && ! numpy2 "$PY"; then
  log=$BUILD/numpy2-venv.log
  echo "== making $VENV (python3 -m venv, pip install 'numpy>=2'; log $log)"
  if ! { /usr/bin/python3 -m venv --clear "$VENV" &&
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check 'numpy>=2'; } >"$log" 2>&1; then
    tail -3 "$log"
    rm -rf "$VENV"
    skip "cannot make a NumPy 2 venv at $VENV (python3-venv and PyPI; scripts/deps.sh --test)"
  fi
fi
numpy2 "$PY" || { echo "FAIL: $PY does not import NumPy 2"; exit 1; }
PYTHONPATH=$BUILD/python PYTHONDONTWRITEBYTECODE=1 "$PY" "$HERE/labels_exact.py" "$CLI" --numpy-major 2
# The benchmarks' venv (bench/peers.sh: PyPI's torch, torchvision and NumPy 2), where it
# exists: torch tensors under NumPy 2 too, as issue 47 trained.
BENCH_PY=${STOKER_BENCH_VENV:-$HOME/.cache/stoker-bench/venv}/bin/python
if [ -z "${STOKER_NUMPY2_PYTHON:-}" ] && numpy2 "$BENCH_PY"; then
  PYTHONPATH=$BUILD/python PYTHONDONTWRITEBYTECODE=1 "$BENCH_PY" "$HERE/labels_exact.py" "$CLI" \
    --numpy-major 2
fi
