#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu_check.sh --dry-run end to end on the CPU backend with tiny sizes: every step
# runs (the CUDA tests skip without a device), the JSON holds a row for every run with its
# figures, at most 8 files come back, and a planted failure is reported without stopping
# the steps after it.
#   gpu_check_dry_run_test.sh BUILD_DIR PYTHON_WITH_TORCH
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../skip_policy.sh"
build=${1:?usage: gpu_check_dry_run_test.sh BUILD_DIR PYTHON}
python=${2:?usage: gpu_check_dry_run_test.sh BUILD_DIR PYTHON}
"$python" -c 'import torch, torchvision' 2>/dev/null ||
  skip "$python has no torch/torchvision (Debian: python3-torchvision)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
rc=0
"$root/scripts/gpu_check.sh" --dry-run --build "$build" --python "$python" --out "$tmp/out" \
  >"$tmp/log" 2>&1 || rc=$?
echo "== dry run: exit $rc in $(($(date +%s) - t0)) s"
sed -n '/^synthetic ResNet: Stoker/,$p' "$tmp/log"
[ "$rc" -eq 0 ] || { echo "FAIL: gpu_check.sh --dry-run exited $rc"; tail -n 40 "$tmp/log"; exit 1; }
"$python" - "$tmp/out" <<'PY'
import json, os, sys
out = sys.argv[1]
files = os.listdir(out)
assert 0 < len(files) <= 8, f"{len(files)} files under $OUT (at most 8): {files}"
doc = json.load(open(os.path.join(out, "gpu_check.json")))
steps = {s["step"]: s["status"] for s in doc["steps"]}
assert steps == dict.fromkeys(["env", "tests", "stoker", "torch", "loader"], "ok"), steps
assert doc["context"]["dry_run"] is True
for t in ("gpu_host_test", "cuda_backend_test", "backend_conformance_test", "collective_test",
          "data_parallel_cuda_test"):
    assert t in doc["tests"] and doc["tests"][t]["exit"] in (0, 77), (t, doc["tests"].get(t))
ran = [r for r in doc["synthetic"]["stoker"] if "skipped" not in r]
assert len(doc["synthetic"]["stoker"]) == 13 and len(ran) == 2, doc["synthetic"]["stoker"]
for r in ran:
    assert r["images_per_s"] > 0 and r["exit"] == 0, r
torch = doc["synthetic"]["torch"]["results"]
assert [r["variant"] for r in torch] == ["tf32-nchw", "bf16-nhwc"], torch
assert all(r.get("images_per_s", 0) > 0 for r in torch), torch
loader = doc["loader"]
assert len(loader) == 6, [r["run"] for r in loader]
for r in loader:
    assert r["exit"] == 0 and r["images_per_s"] > 0 and 0 <= r["data_wait_share"] <= 1, r
    assert r["kernel_gap_share"] is not None, r
    assert r["emulated"].get("images_per_s", 0) > 0 and 0 <= r["emulated"]["au"] <= 1, r
assert any(f.startswith("trace_") for f in files), files
print("ok: steps, tests, 2 stoker + 2 torch synthetic runs, 6 loader-fed runs with emulation,", len(files), "files")
PY
# A step that fails is reported, and the steps after it still run: a build tree whose test
# executables are missing fails `tests`; `torch` runs after it and the JSON says both.
mkdir -p "$tmp/broken/tests"
ln -s "$build/tools" "$build/loader" "$tmp/broken/"
rc=0
"$root/scripts/gpu_check.sh" --dry-run --build "$tmp/broken" --python "$python" \
  --out "$tmp/out2" --steps tests,torch >"$tmp/log2" 2>&1 || rc=$?
"$python" - "$tmp/out2/gpu_check.json" "$rc" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
steps = {s["step"]: s["status"] for s in doc["steps"]}
assert sys.argv[2] == "1", f"exit {sys.argv[2]}, expected 1 with a failed step"
assert steps == {"tests": "failed", "torch": "ok"}, steps
print("ok: a failed step (tests) is reported, the next (torch) still ran, exit 1")
PY
