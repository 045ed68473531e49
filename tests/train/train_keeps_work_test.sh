#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A training run keeps its work: without --save it writes a checkpoint under runs/ (named at
# the start), a resumed run writes back to its file unless --save names another, --no-save
# keeps none and excludes --save/--save-every, a Ctrl-C's resume hint
# names a file that exists; an empty class folder is warned of; the checkpoint stores the dataset's class names, and eval,
# train --val and train --resume refuse a dataset whose classes differ, naming both (a list
# file from `stoker index --out` keeps the names; one without them is checked by count).
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2
cd "$tmp"  # runs/ would be made here

if ! "$stoker" train --synthetic --arch resnet18 --classes 2 --batch 2 --size 32 --steps 1 \
    > "$tmp/probe.txt" 2>&1; then
  if grep -q "not built in" "$tmp/probe.txt"; then
    . "$(dirname "$0")/../skip_policy.sh"
    skip "this build has no CPU backend (oneDNN 3 not found; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)"
  fi
  cat "$tmp/probe.txt"; fail "synthetic smoke run"
fi
# Random tensors teach nothing: a synthetic run keeps a checkpoint only when --save names one.
[ ! -e runs ] || fail "a synthetic run wrote runs/"
grep -q "^# save: none (--synthetic" "$tmp/probe.txt" || { cat "$tmp/probe.txt"; fail "synthetic save line"; }

"$stoker" gen "$tmp/d" --sizes 40 --classes 2 --per-class 4 --seed 2 > /dev/null 2>&1
# Other classes: 3 of them, named c0..c2 (the same images, so only the names differ).
mkdir -p "$tmp/other"
for k in 0 1 2; do cp -r "$tmp/d/class_000" "$tmp/other/c$k"; done
# The same number of classes under other names: only the names tell (issue 26's silent top-1).
mkdir -p "$tmp/pets" && cp -r "$tmp/d/class_000" "$tmp/pets/cat" && cp -r "$tmp/d/class_001" "$tmp/pets/dog"
common=(--arch resnet18 --size 32 --batch 4 --reader threads:2 --seed 1)

# expect CODE PATTERN ARGS...: stoker ARGS exits CODE and its stderr matches PATTERN (grep -E).

# The default: a new file under runs/ of the current directory, named at the start.
mkdir "$tmp/w"
(cd "$tmp/w" && "$stoker" train "$tmp/d" "${common[@]}" --steps 2 > "$tmp/a.txt" 2>&1) ||
  { cat "$tmp/a.txt"; fail "train without --save"; }
ck=$(sed -n 's/^# save: \(runs\/resnet18-[0-9-]*\.safetensors\) at the end.*/\1/p' "$tmp/a.txt")
[ -n "$ck" ] || { cat "$tmp/a.txt"; fail "no '# save: runs/...' line at the start"; }
[ -f "$tmp/w/$ck" ] || { ls -R "$tmp/w"; fail "$ck was announced but not written"; }
ck="$tmp/w/$ck"
python3 - "$ck" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
assert json.loads(meta["class_names"]) == ["class_000", "class_001"], meta.get("class_names")
assert meta["step"] == "2", meta["step"]
PY

# A resumed run writes back to the file it resumed from (issue 47: --save F, --resume F
# --epochs 10, eval --checkpoint F evaluated the shorter run), said at the start; --save
# NEW leaves F as it was.
step_of() {
  python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"]["step"])' "$1"
}
cp "$ck" "$tmp/r.safetensors"
mkdir "$tmp/r"
(cd "$tmp/r" && "$stoker" train "$tmp/d" --resume "$tmp/r.safetensors" --total-steps 4 \
  --reader threads:2 > "$tmp/r.txt" 2>&1) || { cat "$tmp/r.txt"; fail "resume without --save"; }
grep -q "^# save: $tmp/r.safetensors at the end and on Ctrl-C (the file resumed from" "$tmp/r.txt" ||
  { cat "$tmp/r.txt"; fail "the resumed run does not say it writes back"; }
[ "$(step_of "$tmp/r.safetensors")" = 4 ] || fail "the resumed file is at step $(step_of "$tmp/r.safetensors"), not 4"
[ -z "$(ls -A "$tmp/r")" ] || { ls -R "$tmp/r"; fail "the resumed run wrote elsewhere too"; }
cp "$tmp/r.safetensors" "$tmp/r4.safetensors"
"$stoker" train "$tmp/d" --resume "$tmp/r.safetensors" --total-steps 6 --reader threads:2 \
  --save "$tmp/r6.safetensors" > "$tmp/r6.txt" 2>&1 || { cat "$tmp/r6.txt"; fail "resume --save"; }
cmp -s "$tmp/r.safetensors" "$tmp/r4.safetensors" || fail "--save NEW changed the file resumed from"
[ "$(step_of "$tmp/r6.safetensors")" = 6 ] || fail "--save NEW is not at step 6"

# --no-save: none, said at the start; it excludes --save and --save-every (usage, exit 2).
mkdir "$tmp/n"
(cd "$tmp/n" && "$stoker" train "$tmp/d" "${common[@]}" --steps 1 --no-save > "$tmp/n.txt" 2>&1) ||
  { cat "$tmp/n.txt"; fail "--no-save"; }
grep -q "^# save: none (--no-save)" "$tmp/n.txt" || { cat "$tmp/n.txt"; fail "--no-save not said"; }
[ -z "$(ls -A "$tmp/n")" ] || { ls -R "$tmp/n"; fail "--no-save wrote something"; }
expect 2 "--no-save and --save" train "$tmp/d" --no-save --save "$tmp/x.safetensors"
expect 2 "--save-every with --no-save" train "$tmp/d" --no-save --save-every 2
expect 2 "--keep 0: expected at least 1" train "$tmp/d" --keep 0
expect 2 "--save-every -1" train "$tmp/d" --save-every -1
expect 2 "--val-every needs --val" train "$tmp/d" --val-every 2

# Ctrl-C without --save: the hint names the default file, which exists, and resumes.
mkdir "$tmp/c"
(cd "$tmp/c" && exec "$stoker" train "$tmp/d" "${common[@]}" --steps 100000 > "$tmp/c.out" 2> "$tmp/c.err") &
pid=$!
for _ in $(seq 600); do grep -q "^# run:" "$tmp/c.out" 2>/dev/null && break; sleep 0.1; done
sleep 0.3; kill -INT $pid
set +e; wait $pid; rc=$?; set -e; pid=""
[ "$rc" = 130 ] || { cat "$tmp/c.out" "$tmp/c.err"; fail "SIGINT: exit $rc, expected 130"; }
hinted=$(sed -n 's/.*--resume \(runs\/[^`]*\)` continues it exactly.*/\1/p' "$tmp/c.err")
[ -n "$hinted" ] || { cat "$tmp/c.err"; fail "no resume hint after SIGINT"; }
[ -f "$tmp/c/$hinted" ] || { ls -R "$tmp/c"; fail "the hint names $hinted, which does not exist"; }

# Class names: another dataset's are refused by eval, --val and --resume, naming both.
expect 1 "eval: .*other has 3 classes: c0, c1, c2 but .*resnet18-.*safetensors was trained on 2 classes: class_000, class_001; label 0 is 'class_000' there and 'c0' here" \
  eval "$tmp/other" --checkpoint "$ck" --size 32 --batch 4
expect 1 "eval: .*pets has 2 classes: cat, dog but .* was trained on 2 classes: class_000, class_001; label 0 is 'class_000' there and 'cat' here" \
  eval "$tmp/pets" --checkpoint "$ck" --size 32 --batch 4
expect 1 "train: --val: .*other has 3 classes.* but .*/d was trained on 2 classes" \
  train "$tmp/d" "${common[@]}" --steps 1 --no-save --val "$tmp/other"
expect 1 "train: --resume: .*other has 3 classes.* but .*safetensors was trained on 2 classes" \
  train "$tmp/other" --resume "$ck" --steps 1 --no-save --total-steps 9
# An empty class folder: its label is kept (one more output), and train, its --val and eval
# say so, as bench does (issue 47: train was silent; torchvision's ImageFolder refuses it).
mkdir -p "$tmp/e/zz_empty" && cp -r "$tmp/d/class_000" "$tmp/d/class_001" "$tmp/e/"
"$stoker" train "$tmp/e" "${common[@]}" --steps 1 --no-save --val "$tmp/e" > "$tmp/e.txt" 2>&1 ||
  { cat "$tmp/e.txt"; fail "train with an empty class"; }
warned="^# warning: 1 class directory of $tmp/e holds no image (first: zz_empty): its label is kept"
[ "$(grep -c "$warned" "$tmp/e.txt")" = 2 ] || { cat "$tmp/e.txt"; fail "train (and its --val) did not warn of the empty class"; }
"$stoker" bench "$tmp/e" --reader serial --size 32 > "$tmp/eb.txt" 2>&1 || fail "bench with an empty class"
grep -q "$warned" "$tmp/eb.txt" || { cat "$tmp/eb.txt"; fail "bench did not warn of the empty class"; }
# The same names pass: the folder, its list file with names, and one without (by count).
"$stoker" eval "$tmp/d" --checkpoint "$ck" --batch 4 > /dev/null 2>&1 || fail "eval, same folder"
"$stoker" index "$tmp/d" --out "$tmp/d/list.txt" > /dev/null
grep -q "^# class 1 class_001$" "$tmp/d/list.txt" || { head -3 "$tmp/d/list.txt"; fail "no class names in the list file"; }
"$stoker" eval "$tmp/d/list.txt" --checkpoint "$ck" --batch 4 > /dev/null 2>&1 || fail "eval, the list file"
grep -v "^#" "$tmp/d/list.txt" > "$tmp/d/bare.txt"
"$stoker" eval "$tmp/d/bare.txt" --checkpoint "$ck" --batch 4 > /dev/null 2>&1 || fail "eval, a list without names"
sed 's/^# class 1 class_001$/# class 1 dog/' "$tmp/d/list.txt" > "$tmp/d/renamed.txt"
expect 1 "label 1 is 'class_001' there and 'dog' here" eval "$tmp/d/renamed.txt" --checkpoint "$ck" --batch 4
echo "PASS"
