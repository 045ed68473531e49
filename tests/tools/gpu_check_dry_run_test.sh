#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu_check.sh --dry-run end to end on the CPU: the plan check passes (budgets within
# 8 minutes, every GPU command line parses), every step then runs on the CPU backend with tiny
# sizes (the CUDA tests skip without a device), the JSON holds a row with figures for every
# run, at most 8 files come back, one folder deep. Then what must fail does: a command line
# that no longer parses, budgets over the limit, a failed step (reported, the next still
# runs); a torch variant that finished survives a kill of the bench after it; and the summary
# refuses a rate above the GPU's peak.
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
import json, os, sys, tarfile
out = sys.argv[1]
entries = os.listdir(out)
assert all(os.path.isfile(os.path.join(out, f)) for f in entries), f"folders under $OUT: {entries}"
# (The GPU decode run's trace, trace_decode_1024_gpu.json, comes only from a GPU.)
assert set(entries) == {"gpu_check.log", "gpu_check.json", "tests.log", "gpu_check_raw.tar.gz",
                        "trace_synthetic.json", "study_report.html"}, entries
doc = json.load(open(os.path.join(out, "gpu_check.json")))
plan = ["env", "tests", "stoker", "torch", "decode", "auto", "scaling", "trace", "study"]
steps = {s["step"]: s["status"] for s in doc["steps"]}
assert steps == dict.fromkeys(plan, "ok"), steps
assert [s["step"] for s in doc["steps"]] == plan, "steps out of the plan's order"
p = doc["plan_check"]
assert p["fits"] and p["budget_s"] + p["reserve_s"] <= p["limit_s"] <= 480, p
assert sum(s["budget_s"] for s in doc["steps"]) == p["budget_s"], (doc["steps"], p)
# Every GPU command was checked: 7 tests, 4 synthetic modes, eager torch, gen, 6 decode runs
# (CPU and GPU decode at 3 sizes), 5 auto runs (auto with CPU and GPU decode at 256 and 1024
# px, threads:16 over as many steps), 3 scaling sweeps, the trace, the study; and the steps
# outside the plan: bf16 beside torch.compile, 2 runs at batch 400; the planted error's row.
assert p["commands"] == 34 and not p["not_parsing"], p
# The planted error's row ran and, with no device, was skipped: not run, not "not caught".
assert doc["planted"] and doc["planted"]["verdict"] == "not run", doc["planted"]
checked = {c["run"] for c in p["checked"]}
assert {"stoker_f16-nhwc-graph", "torch", "gen", "loader_1024_gpu-threads16",
        "loader_256_cpu-threads16", "loader_1024_gpu-auto", "loader_1024_gpu-threads16-50", "scaling_512", "stoker_traced",
        "test_gpu_decode_test", "study", "stoker_tf32-nhwc-graph", "torch_compile",
        "stoker_bf16-nhwc-graph", "stoker_f16-nhwc-graph-prologue",
        "stoker_f16-nhwc-graph-prologue-b400"} <= checked, checked
b400_cmd = next(c["command"] for c in p["checked"] if c["run"] == "stoker_f16-nhwc-graph-b400")
assert "--batch 400 " in b400_cmd and "--batch 256" not in b400_cmd, b400_cmd
study_cmd = next(c["command"] for c in p["checked"] if c["run"] == "study")
for part in ("--consumer cuda:resnet50", "--decode cpu,gpu", "--reader serial,threads:16", "256px", "1024px"):
    assert part in study_cmd, (part, study_cmd)
assert "--decode gpu" in " ".join(c["command"] for c in p["checked"])
gpu_cmds = " ".join(c["command"] for c in p["checked"])
assert "--backend cuda" in gpu_cmds and "--arch resnet50 --batch 256 --size 224" in gpu_cmds, gpu_cmds[:300]
assert doc["context"]["dry_run"] is True
for t in ("gpu_host_test", "cuda_backend_test", "gpu_decode_test", "backend_conformance_test",
          "collective_test", "data_parallel_cuda_test"):
    assert t in doc["tests"] and doc["tests"][t]["exit"] in (0, 77), (t, doc["tests"].get(t))
log = open(os.path.join(out, "tests.log")).read()
assert all(f"== {t} " in log for t in doc["tests"]), "tests.log lacks a test's whole output"
assert "[==========]" in log, "tests.log holds no gtest output"
ran = doc["synthetic"]["stoker"]
assert [r["run"] for r in ran] == ["stoker_f32", "stoker_traced"], [r["run"] for r in ran]
for r in ran:
    assert r["exit"] == 0 and r["images_per_s"] > 0 and r["timed_steps"] >= 2 and r["plausible"], r
assert doc["fastest_mode"] == "f32", doc["fastest_mode"]
torch = doc["synthetic"]["torch"]["results"]
assert [r["variant"] for r in torch] == ["tf32-nchw", "bf16-nhwc"], torch
for r in torch:
    assert r["images_per_s"] > 0 and r["timed_steps"] == 2 and r["step_ms"]["median"] > 0, r
assert doc["synthetic"]["torch_compile"] is None  # only when --steps names compile
assert doc["rate_to_feed"] > 0
loader = doc["loader"]["train"]
assert sorted((r["size"], r["reader"]) for r in loader) == sorted(
    [(px, "cpu-threads:2") for px in (256, 512, 1024)] + [(256, "cpu-auto"), (1024, "cpu-auto"),
                                                         (1024, "cpu-threads:2-8")]), loader
for r in loader:
    assert r["exit"] == 0 and r["images_per_s"] > 0 and r["timed_steps"] >= 2, r
    assert 0 <= r["data_wait_share"] <= 1 and r["kernel_gap_share"] is not None, r
assert all(r["cpu_cores_busy"] > 0 and r["decode"]["device"] == "cpu" for r in loader), loader
# The auto runs say what they chose, and the one beside a fixed run of as many steps read the
# same data (its last epoch's checksum).
auto = {r["size"]: r for r in loader if r["reader"] == "cpu-auto"}
assert all(r.get("auto_chose") and r["auto_search_steps"] > 0 for r in auto.values()), auto
assert auto[1024]["same_data_as"] == {"cpu-threads:2-8": True}, auto[1024]
sc = doc["loader"]["scaling"]
assert len(sc) == 18 and [r["size"] for r in sc][::6] == ["256px", "512px", "1024px"], sc
assert [r["reader"] for r in sc][:6] == ["serial", "threads:1", "threads:2", "processes:1",
                                         "processes:2", "uring:8:1"], sc
for r in sc:
    assert r["images_per_s"] > 0 and r["workers"] in (1, 2) and r["stage_ms_per_image"]["decode"] > 0, r
st = doc["study"]
assert st["state"] == "complete" and st["finished_cells"] == st["planned_cells"] == 6, st
assert [(c["resolution"], c["reader"]) for c in st["cells"]] == [
    (px, r) for px in (256, 512, 1024) for r in ("serial", "threads:2")], st["cells"]
for c in st["cells"]:
    assert c["status"] == "ok" and c["images_per_s"] > 0 and c["consumer"] == "cpu:resnet18", c
assert "<svg" in open(os.path.join(out, "study_report.html")).read()
with tarfile.open(os.path.join(out, "gpu_check_raw.tar.gz")) as t:
    names = set(os.path.basename(n) for n in t.getnames())
for f in ("runs.tsv", "steps.tsv", "check.tsv", "stoker_f32.json", "torch.json",
          "loader_1024_cpu-threads2.json", "scaling_256.json", "gtest_cuda_backend_test.json",
          "study.json"):
    assert f in names, (f, sorted(names))
assert not any(n.endswith(".jpg") for n in names), "the datasets went into the tarball"
print(f"ok: plan check ({p['commands']} GPU commands, {p['budget_s']} s + {p['reserve_s']} s <= {p['limit_s']} s),",
      "9 steps in order, tests.log, 2 stoker + 2 torch rows, 6 loader-fed runs (2 auto), 18 scaling rows, 6 study cells,",
      len(entries), "files")
PY

# A GPU command line that no longer parses fails the plan check, naming the runs: a copy of
# the script whose synthetic runs carry an option stoker does not know.
mkdir -p "$tmp/copy/scripts"
ln -s "$root/bench" "$tmp/copy/bench"
sed 's/--synthetic --no-gaps/--synthetic --no-gapz/' "$root/scripts/gpu_check.sh" >"$tmp/copy/scripts/gpu_check.sh"
rc=0
bash "$tmp/copy/scripts/gpu_check.sh" --dry-run --build "$build" --python "$python" --out "$tmp/out3" \
  --steps stoker >"$tmp/log3" 2>&1 || rc=$?
"$python" - "$tmp/out3/gpu_check.json" "$rc" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert sys.argv[2] == "1", f"exit {sys.argv[2]}, expected 1 with a command that does not parse"
bad = doc["plan_check"]["not_parsing"]
assert len(bad) == 4 and all(b["verdict"] == "usage error" and b["step"] == "stoker" for b in bad), bad
print("ok: an unknown option in the GPU plan fails the plan check:", len(bad), "runs named")
PY

# Budgets over the limit fail the plan check before anything runs.
rc=0
STOKER_CHECK_SECONDS=400 "$root/scripts/gpu_check.sh" --dry-run --build "$build" --python "$python" \
  --out "$tmp/out4" --steps env >"$tmp/log4" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q 'exceed 400s' "$tmp/log4" ||
  { echo "FAIL: budgets over a 400 s limit: exit $rc"; cat "$tmp/log4"; exit 1; }
echo "ok: budgets over the limit fail the plan check"

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

# The torch bench keeps each finished variant: killed (-9) once the first is written, its
# JSON is a whole document holding that variant.
json=$tmp/torch_kill.json
"$python" "$root/bench/torch_gpu_bench.py" --device cpu --arch resnet18 --batch 2 --size 32 --steps 2 \
  --warmup 1 --variants tf32-nchw,tf32-nhwc,bf16-nchw,bf16-nhwc,tf32-nchw --json "$json" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$json" ] && break; sleep 0.1; done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$python" - "$json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc["results"]
assert 1 <= len(r) < 5 and r[0]["variant"] == "tf32-nchw" and r[0]["images_per_s"] > 0, r
print(f"ok: killed after {len(r)} variant(s), the JSON holds them whole")
PY

# The summary refuses a rate the GPU cannot reach: the first H200 run's figures (graph mode's
# host-side 527,469 img/s beside f16 NCHW's 2,394) in a work folder made here; a run at batch
# 400 (the b400 step), faster, is never the fastest mode either (the other steps run at 256).
w=$tmp/fake
mkdir -p "$w"
printf 'gpu NVIDIA H200, 580.159.04, 143771 MiB, 9.0\ngpu_idle_mib 0\n' >"$w/env.txt"
for run in f16-nhwc-graph:527469.5 f16-nchw:2393.7 f16-nhwc-graph-b400:3100.0; do
  tag=stoker_${run%%:*}
  printf 'stoker\t%s\t0\t12000\ttrain ...\n' "$tag" >>"$w/runs.tsv"
  cat >"$w/$tag.json" <<JSON
{"context": {"precision": "f16", "warmup": 5},
 "results": [{"images_per_s": ${run##*:}, "flop_per_image": 24.6e9, "step_ms": {"median": 107.0},
   "per_step": [$(seq -s, 1 25 | sed 's/[0-9]\+/{}/g')], "data_wait_share": 0, "gaps": null,
   "device_memory": {"planned_bytes": 30000000000, "peak_in_use_bytes": 30914969600}}]}
JSON
done
# A run written before issue 44 renamed its keys (timing_warmup, data_wait_fraction) still reads.
sed -i 's/"warmup"/"timing_warmup"/; s/"data_wait_share"/"data_wait_fraction"/' \
  "$w/stoker_f16-nhwc-graph.json"
cat >"$w/torch.json" <<'JSON'
{"context": {"torch": "2.11.0+cu130"}, "results": [
 {"variant": "f16-nhwc", "images_per_s": 5781.6, "peak_reserved_mib": 12636.0, "peak_allocated_mib": 11271.6},
 {"variant": "f16-nchw", "images_per_s": 2964.1, "peak_reserved_mib": 13504.0, "peak_allocated_mib": 11258.9}]}
JSON
[ "$("$python" "$root/bench/gpu_check_summary.py" --work "$w" --fastest)" = f16-nchw ] ||
  { echo "FAIL: the fastest mode should be f16-nchw, the graph rate being impossible"; exit 1; }
[ "$("$python" "$root/bench/gpu_check_summary.py" --work "$w" --rate)" = 5782 ] ||
  { echo "FAIL: the rate to feed should be PyTorch's 5782"; exit 1; }
"$python" "$root/bench/gpu_check_summary.py" --work "$w" --out "$w/s.json" --quiet
"$python" - "$w/s.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = {r["run"]: r for r in doc["synthetic"]["stoker"]}
g, n = rows["stoker_f16-nhwc-graph"], rows["stoker_f16-nchw"]
assert not g["plausible"] and "above the GPU's 989 peak" in g["implausible"], g
assert n["plausible"] and n["timed_steps"] == 20 and n["device_memory_peak_mib"] == 29482.8, n
assert g["timed_steps"] == n["timed_steps"] and g["data_wait_share"] == n["data_wait_share"] == 0, g
b400 = {r["mode"]: r for r in doc["synthetic"]["comparison"]}["f16-nhwc-graph-b400"]
assert "ratio" not in b400 and b400["stoker_images_per_s"] == 3100.0, b400  # no torch at 400
c = {r["mode"]: r for r in doc["synthetic"]["comparison"]}["f16-nchw"]
assert c["ratio"] == round(2393.7 / 2964.1, 3) and c["memory_ratio_to_reserved"] == round(29482.8 / 13504.0, 2), c
print("ok: a graph rate of 527,469 img/s is refused (", round(g["achieved_tflops"]), "TFLOP/s ); f16-nchw is the fastest")
PY

# --plan prints every step with its budget and every GPU command, and runs none.
"$root/scripts/gpu_check.sh" --plan --build "$build" --python "$python" >"$tmp/plan"
grep -q '^stoker (62 s)$' "$tmp/plan" && grep -q 'stoker_f16-nhwc-graph-prologue .* --fusions bn_relu,bn_add_relu,conv_stats,conv_prologue' "$tmp/plan" && grep -q 'stoker_tf32-nhwc-graph .* --precision tf32 --compute-layout nhwc --graph' "$tmp/plan" && grep -q '^b400 (85 s, only when --steps names it)$' "$tmp/plan" && grep -q 'stoker_f16-nhwc-graph-convstats .* --graph --fusions bn_relu,bn_add_relu,conv_stats' "$tmp/plan" && grep -q '^study (55 s)$' "$tmp/plan" && grep -q '^auto (48 s)$' "$tmp/plan" && grep -q 'loader_1024_gpu-auto .* --reader auto --auto-window 8 --decode gpu' "$tmp/plan" && grep -q 'loader_1024_gpu-threads16 .* --decode gpu' "$tmp/plan" && grep -q 'stoker_bf16-nhwc-graph .* --precision bf16 --compute-layout nhwc --graph' "$tmp/plan" &&
  grep -Eq '^total: [0-9]+ s of budgets \+ [0-9]+ s reserve' "$tmp/plan" ||
  { echo "FAIL: --plan"; cat "$tmp/plan"; exit 1; }
echo "ok: --plan lists $(grep -c '^  ' "$tmp/plan") commands"
