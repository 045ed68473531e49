#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --reader auto end to end (issue 43): `train --reader auto` (ResNet-18, 32 px, CPU) trains the
# same bits as a fixed reader (losses, epoch checksums, checkpoint) while its search switches
# readers mid-epoch; an auto run stopped mid-search and resumed is exact; a candidate that
# cannot start is skipped and named; the header and --json list every candidate, the choice
# and why; without --threads the core split is chosen once before the first step and kept by
# --resume; bench's auto row and study's auto cell have the fixed reader's checksums; commands of
# fixed readers refuse it.
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2

"$stoker" gen "$tmp/d" --sizes 48 --classes 2 --per-class 16 --seed 4 > /dev/null 2>&1
d=$tmp/d

# same_weights A B: two checkpoints hold the same tensors, byte for byte.
same_weights() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a.keys() == b.keys()
bad = [k for k in a if a[k] != b[k]]
assert not bad, bad[:5]
PY
}

# Usage: auto only where a command chooses while it runs; --auto-window only with auto.
expect 2 "auto chooses the reader while a run goes on" probe "$d" --reader auto
expect 2 "--auto-window means nothing" bench "$d" --reader threads:2 --auto-window 4
expect 2 "--auto-search means nothing" bench "$d" --reader threads:2 --auto-search full
expect 2 "expected staged or full" bench "$d" --reader auto --auto-search wide
expect 2 "train: --reader auto,threads:2 names 2 readers; train runs one" train "$d" \
  --reader auto,threads:2

# train: 32 steps of 4 images (4 epochs of 8 batches), a fixed reader against auto. The full
# sweep tries every candidate; every worker of processes:N fails to start under auto: skipped,
# named, and the run goes on. The resumed run below searches staged, the default.
common=(--arch resnet18 --batch 4 --size 32 --seed 3 --lr 0.05 --lr-warmup 1 --total-steps 32
        --warmup 0 --threads 1)
"$stoker" train "$d" "${common[@]}" --steps 32 --reader threads:2 \
  --save "$tmp/fixed.safetensors" --json "$tmp/fixed.json" > "$tmp/fixed.txt" 2>&1 ||
  { cat "$tmp/fixed.txt"; fail "train threads:2"; }
expect 2 "auto chooses the reader while a run goes on" eval "$d" \
  --checkpoint "$tmp/fixed.safetensors" --reader auto
# Validation every 8 steps (between steps: no step of a window) reads with the default reader.
STOKER_WORKER=/nonexistent/stoker-worker "$stoker" train "$d" "${common[@]}" --steps 32 \
  --reader auto --auto-search full --auto-window 2 --val "$d" --val-every 8 \
  --save "$tmp/auto.safetensors" --json "$tmp/auto.json" \
  > "$tmp/auto.txt" 2>&1 || { cat "$tmp/auto.txt"; fail "train --reader auto"; }
grep -q "^# data: .*reader auto (chosen by the training step's rate" "$tmp/auto.txt" ||
  { cat "$tmp/auto.txt"; fail "train header does not say auto"; }
grep -q "^# reader auto: search 1 (start), from step 0" "$tmp/auto.txt" ||
  { cat "$tmp/auto.txt"; fail "no search in the header"; }
grep -Eq "^#   processes:1 prefetch 2 +skipped: .*/nonexistent/stoker-worker" "$tmp/auto.txt" ||
  { cat "$tmp/auto.txt"; fail "the worker that cannot start is not named"; }
grep -q "^# reader auto: chose " "$tmp/auto.txt" || { cat "$tmp/auto.txt"; fail "no choice"; }

# Every bit the same as the fixed reader's: losses, the data's checksums, the checkpoint.
python3 - "$tmp/fixed.json" "$tmp/auto.json" <<'PY'
import json, sys
def run(p):  # the context's keys and the result's, in one
    d = json.load(open(p))
    return {**d["context"], **d["results"][0]}
f, a = (run(p) for p in sys.argv[1:])
assert a["reader"] == "auto" and f["reader"] == "threads:2", (a["reader"], f["reader"])
assert a["loss"] == f["loss"] and len(a["loss"]) == 32, (a["loss"], f["loss"])
assert a["data_checksums"] == f["data_checksums"], (a["data_checksums"], f["data_checksums"])
t = a["reader_tuning"]
s = t["searches"][0]
assert s["reason"] == "start" and s["finished"], s
measured = [c for c in s["tried"] if "skipped" not in c]
skipped = [c for c in s["tried"] if "skipped" in c]
assert len({c["reader"] for c in measured}) >= 3, s["tried"]  # it switched mid-epoch
assert all(c["steps"] == 2 and c["steps_per_s"] > 0 and 0 <= c["data_wait"] <= 1
           for c in measured), measured
assert {c["reader"] for c in skipped} >= {"processes:1", "processes:2"}, skipped
assert all("/nonexistent/stoker-worker" in c["skipped"] for c in skipped
           if c["reader"].startswith("processes")), skipped
assert s["why"] and t["chosen"] == s["chosen"], t
assert f["reader_tuning"] is None
assert [v["step"] for v in a["validation"]] == [8, 16, 24, 32], a["validation"]
PY
same_weights "$tmp/fixed.safetensors" "$tmp/auto.safetensors" || fail "auto run's weights differ"

# Stopped at step 11 (mid-epoch, mid-search) and resumed with auto: the rest of the same run.
"$stoker" train "$d" "${common[@]}" --steps 11 --reader auto --auto-window 2 \
  --save "$tmp/half.safetensors" > "$tmp/half.txt" 2>&1 || { cat "$tmp/half.txt"; fail "half"; }
"$stoker" train "$d" --resume "$tmp/half.safetensors" --reader auto --auto-window 2 \
  --save "$tmp/resumed.safetensors" --json "$tmp/resumed.json" > "$tmp/resumed.txt" 2>&1 ||
  { cat "$tmp/resumed.txt"; fail "resume of an auto run"; }
# The decode device is the run's: recorded in the checkpoint, and a resume that names another
# is refused (before anything else could refuse it: the CPU backend has no GPU decode).
expect 1 "contradicts the run being resumed .it was trained on cpu-decoded pixels" train "$d" \
  --resume "$tmp/half.safetensors" --decode gpu --no-save --steps 12
python3 - "$tmp/fixed.json" "$tmp/resumed.json" <<'PY'
import json, sys
def run(p):
    d = json.load(open(p))
    return {**d["context"], **d["results"][0]}
f, r = (run(p) for p in sys.argv[1:])
assert r["first_step"] == 11 and r["loss"] == f["loss"][11:], (f["loss"], r["loss"])
assert r["data_checksums"] == f["data_checksums"], (r["data_checksums"], f["data_checksums"])
assert r["reader"] == "auto" and r["reader_tuning"]["searches"][0]["first_step"] == 0
PY
same_weights "$tmp/fixed.safetensors" "$tmp/resumed.safetensors" ||
  fail "the resumed auto run's weights differ from the fixed run's"

# The core split: without --threads, auto first measures the trainer's compute threads on
# scratch (every core, then fewer), chooses once before the first step, and trains exactly what
# a fixed reader with --threads <chosen> trains; the checkpoint records the split and --resume
# keeps it (no new search). At 64 px and batch 8 oneDNN's sums differ with its thread count from
# the third step on (at 32 px and batch 4 they do not), so the losses tell the counts apart. The
# search runs for a run it can pay for: a schedule of 400 steps (10 scratch steps at most, under
# 5% of it); a run of 8 keeps every core and says why.
"$stoker" train "$d" --arch resnet18 --batch 4 --size 32 --steps 1 --reader auto --no-save \
  --auto-window 4 --json "$tmp/short.json" > "$tmp/short.txt" 2>&1 ||
  { cat "$tmp/short.txt"; fail "a short auto run"; }
grep -q "^# core split: not searched: the run's 1 steps are too few to pay for it" \
  "$tmp/short.txt" || { cat "$tmp/short.txt"; fail "a short run does not say why no split"; }
split=(--arch resnet18 --batch 8 --size 64 --seed 3 --lr 0.05 --lr-warmup 1 --total-steps 400
       --warmup 0)
"$stoker" train "$d" "${split[@]}" --steps 6 --reader auto --auto-window 4 \
  --save "$tmp/split.safetensors" --json "$tmp/split.json" > "$tmp/split.txt" 2>&1 ||
  { cat "$tmp/split.txt"; fail "train --reader auto without --threads"; }
grep -q "^# core split: searched on scratch before the first step" "$tmp/split.txt" ||
  { cat "$tmp/split.txt"; fail "no core split search in the header"; }
grep -Eq "^# core split: chose [0-9]+ compute threads?: " "$tmp/split.txt" ||
  { cat "$tmp/split.txt"; fail "no core split choice"; }
chosen=$(python3 - "$tmp/split.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
r = {**d["context"], **d["results"][0]}
c, cpus = r["core_split"], os.cpu_count()
assert c["reason"] == "core split" and c["finished"], c
assert c["tried"][0]["compute_threads"] == cpus and c["tried"][0]["steps"] >= 2, c["tried"]
assert (cpus + 1) // 2 <= c["compute_threads"] <= cpus and c["why"], c
assert r["threads"] == c["compute_threads"], (r["threads"], c)
print(c["compute_threads"])
PY
) || fail "the core split's JSON"
"$stoker" train "$d" "${split[@]}" --steps 8 --reader threads:2 --threads "$chosen" --no-save \
  --json "$tmp/split_fixed.json" > "$tmp/split_fixed.txt" 2>&1 ||
  { cat "$tmp/split_fixed.txt"; fail "train --threads $chosen"; }
"$stoker" train "$d" --resume "$tmp/split.safetensors" --steps 2 --reader auto --auto-window 4 \
  --no-save \
  --json "$tmp/split_resumed.json" > "$tmp/split_resumed.txt" 2>&1 ||
  { cat "$tmp/split_resumed.txt"; fail "resume of an auto run with a core split"; }
grep -q "^# core split: $chosen compute threads\?, chosen when the run began (kept from " \
  "$tmp/split_resumed.txt" || { cat "$tmp/split_resumed.txt"; fail "the split was not kept"; }
grep -q "^# core split: searched" "$tmp/split_resumed.txt" &&
  fail "a resumed run searched the core split again"
python3 - "$tmp/split_fixed.json" "$tmp/split.json" "$tmp/split_resumed.json" <<'PY'
import json, sys
def run(p):
    d = json.load(open(p))
    return {**d["context"], **d["results"][0]}
f, a, r = (run(p) for p in sys.argv[1:])
assert a["loss"] == f["loss"][:6], (a["loss"], f["loss"])
assert r["first_step"] == 6 and r["loss"] == f["loss"][6:], (r["loss"], f["loss"])
assert r["core_split"] == {"compute_threads": a["core_split"]["compute_threads"], "kept": True}
PY

# bench: auto as one more row beside a fixed reader, the same epoch checksums.
"$stoker" bench "$d" --reader auto,threads:2 --emulate 4000 --batch 4 --size 32 --epochs 6 \
  --auto-window 3 --json "$tmp/bench.json" > "$tmp/bench.txt" 2>/dev/null ||
  { cat "$tmp/bench.txt"; fail "bench --reader auto"; }
grep -q "^# reader auto: chose " "$tmp/bench.txt" || { cat "$tmp/bench.txt"; fail "bench: no choice"; }
python3 - "$tmp/bench.json" <<'PY'
import json, sys
a, f = json.load(open(sys.argv[1]))["results"]
assert a["reader"] == "auto" and f["reader"] == "threads:2"
assert a["epoch_checksums"] == f["epoch_checksums"] and len(a["epoch_checksums"]) == 6
assert a["reader_tuning"]["searches"][0]["finished"], a["reader_tuning"]
PY
# study: auto as one more reader of the sweep, its cell naming the reader it ran last.
"$stoker" study "$d" --reader auto,threads:2 --storage local --consumer emulated:4000 \
  --steps 40 --warmup 2 --batch 4 --size 32 --auto-window 2 --out "$tmp/study" \
  > "$tmp/study.txt" 2>&1 || { cat "$tmp/study.txt"; fail "study --reader auto"; }
python3 - "$tmp/study/study.json" <<'PY'
import json, sys
cells = json.load(open(sys.argv[1]))["results"]
a, f = cells
assert a["status"] == "ok" and a["reader"] == "auto" and a["reader_kind"] == "auto", a
assert a["checksum"] == f["checksum"], (a["checksum"], f["checksum"])
s = a["reader_tuning"]["searches"][0]
assert a["auto_reader"] == s["chosen"]["reader"] and s["finished"], a["reader_tuning"]
assert a["threads"] == int(a["auto_reader"].split(":")[-1]) or a["auto_reader"] == "serial"
PY
grep -q 'data-series="auto"' "$tmp/study/report.html" || fail "the report does not draw auto"
echo "reader auto: train same bits as a fixed reader, resume exact, bad candidate skipped, bench, study: ok"
