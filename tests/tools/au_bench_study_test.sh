#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One run, one AU (issue 44): bench and the study, on the same dataset, reader, emulated
# accelerator and number of batches, measure AU with the one formula of common/measures.h:
# nominal compute (batches x batch / rate, the emulator's oversleep left out) over a window
# that opens at the first batch's arrival. Before, the study divided the time the emulator
# held the batches (oversleep included) by a window opened at the first request: the same
# run got 0.786 from bench and 0.546 from the study.
set -euo pipefail
stoker=$1
python=${2:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 32 --classes 2 --per-class 24 --seed 3 > /dev/null 2>&1
# 12 batches of 4 at 80 images/s: 50 ms of compute each, far slower than the loader.
common=(--batch 4 --size 16)
"$stoker" bench "$tmp/d" --reader threads:2 "${common[@]}" --emulate 80 --max-batches 12 \
  --json "$tmp/bench.json" > "$tmp/bench.txt" 2>&1 || fail "bench: $(tail -3 "$tmp/bench.txt")"
"$stoker" study "$tmp/d" --readers threads:2 --storage local --consumer emulated:80 \
  --steps 12 --warmup 0 --repeats 1 "${common[@]}" --out "$tmp/s" > "$tmp/study.txt" 2>&1 ||
  fail "study: $(tail -3 "$tmp/study.txt")"
"$python" - "$tmp/bench.json" "$tmp/s/study.json" <<'PY'
import json, math, sys
e = json.load(open(sys.argv[1]))["results"][0]["emulation"]
cells = [c for c in json.load(open(sys.argv[2]))["results"] if c["status"] == "ok"]
assert len(cells) == 1, cells
c = cells[0]
nominal = 12 * 4 / 80  # 0.6 s: what an accelerator of 80 images/s computes in 12 batches of 4
# Both count the same compute: the nominal one, not the time the emulator really held them.
assert e["batches"] == 12 and math.isclose(e["compute_s"], nominal, rel_tol=1e-9), e
assert math.isclose(c["step_s"]["compute"], nominal, rel_tol=1e-9), c["step_s"]
# The one formula, AU = compute / window, in each.
assert math.isclose(e["accelerator_utilisation"], nominal / e["window_s"], rel_tol=1e-9), e
assert math.isclose(c["accelerator_utilisation"], nominal / c["wall_s"], rel_tol=1e-9), c
# The same window: without a warm-up the first batch's wait (start-up) is outside it.
assert c["steps_ms"][0][0] == 0, c["steps_ms"][0]
# Same run, same AU: the two measurements differ only by the machine's noise.
au_bench, au_study = e["accelerator_utilisation"], c["accelerator_utilisation"]
assert abs(au_bench - au_study) <= 0.05, (au_bench, au_study)
print(f"ok: AU bench {au_bench:.4f}, study {au_study:.4f}; both {nominal} s of compute")
PY
