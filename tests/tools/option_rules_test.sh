#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One set of rules for options and exit codes (issue 26): an option that would do nothing in
# the combination given is refused with exit 2 naming it; contradictions of values are usage
# errors (2), not failures (1); CLI11's own parse errors carry the `stoker: usage error`
# prefix; flags show no "{false}" in --help; the built-in datasets default to the XDG cache.
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export OMP_NUM_THREADS=2

"$stoker" gen "$tmp/d" --sizes 40 --classes 2 --per-class 3 --seed 2 > /dev/null 2>&1

# expect CODE PATTERN ARGS...: stoker ARGS exits CODE and its stderr matches PATTERN (grep -E).
d="$tmp/d"

# Idle options: refused before any work, naming the option and what makes it idle.
expect 2 "bench: --flip means nothing with --transform center" bench "$d" --transform center --flip 1
expect 2 "train: --jitter means nothing with --transform center" train "$d" --transform center --jitter 0.4,0.4,0.4,0.1
expect 2 "peek: --grayscale means nothing with --transform center-crop" peek "$d" --transform center-crop --grayscale 0.2
expect 2 "bench: --size means nothing with --no-decode" bench "$d" --no-decode --size 64
expect 2 "bench: --transform means nothing with --no-decode" bench "$d" --no-decode --transform crop
expect 2 "train: --milestones means nothing with --schedule cosine" train "$d" --schedule cosine --milestones 3
expect 2 "train: --milestones means nothing with --schedule cosine" train "$d" --milestones 3
expect 2 "train: --min-lr means nothing with --schedule step" train "$d" --schedule step --min-lr 0.001
expect 2 "train: --lars-eta means nothing with --optimizer sgd" train "$d" --lars-eta 0.01
# ... and the combinations that do something still run.
"$stoker" bench "$d" --transform center --reader serial --max-batches 1 --batch 2 > /dev/null 2>&1 ||
  fail "bench --transform center"
"$stoker" bench "$d" --no-decode --reader serial --max-batches 1 --batch 2 > /dev/null 2>&1 ||
  fail "bench --no-decode"

# Usage, not failure: exit 2 for what the command line asks.
expect 2 "--keep 0: expected at least 1" train "$d" --keep 0
expect 2 "--save-every -1" train "$d" --save-every -1
expect 2 "--val-every needs --val" train "$d" --val-every 2
expect 2 "--save-every with --synthetic needs --save" train --synthetic --save-every 2
expect 2 "steps 0..5 go past the end of the learning-rate schedule \(3 steps\)" train "$d" --steps 5 --total-steps 3 --no-save --batch 2 --arch resnet18 --size 32
expect 2 "--input '0': expected a side" model resnet18 --input 0
expect 2 "--input '224x0'" model resnet18 --input 224x0
expect 2 "--shard-size 10 is too small: at least 1024 bytes" pack "$d" --out "$tmp/p" --shard-size 10
expect 2 "--shard-order sequential needs a packed shard dataset .*/d is not one" bench "$d" --shard-order sequential
grep -q "^# stoker" "$tmp/out.txt" && fail "bench printed its context before refusing --shard-order"
expect 2 "--shard-order sequential needs a packed shard dataset" train "$d" --shard-order sequential --no-save
"$stoker" pack "$d" --out "$tmp/p" > /dev/null 2>&1 || fail "pack"
expect 2 "already holds a packed dataset" pack "$d" --out "$tmp/p"
# A resumed run told to end before where it is.
"$stoker" train "$d" --arch resnet18 --size 32 --batch 2 --steps 3 --reader serial \
  --save "$tmp/r.safetensors" > /dev/null 2>&1 || fail "train for --resume"
expect 2 "--total-steps 2 ends before the run in .*r.safetensors, at step 3" \
  train "$d" --resume "$tmp/r.safetensors" --total-steps 2 --no-save

# checkpoint info --check reads the class count from the file unless told.
"$stoker" checkpoint init resnet18 "$tmp/c5.safetensors" --classes 5 > /dev/null
"$stoker" checkpoint info "$tmp/c5.safetensors" --check resnet18 > "$tmp/info.txt" 2>&1 ||
  { cat "$tmp/info.txt"; fail "checkpoint info --check on a 5-class file"; }
grep -q "^# matches resnet18 with 5 classes" "$tmp/info.txt" || fail "no 'matches ... 5 classes'"
expect 1 "fc.bias" checkpoint info "$tmp/c5.safetensors" --check resnet18 --classes 7

# gen --force over a larger dataset leaves only what its stoker-gen.json describes.
"$stoker" gen "$tmp/g" --sizes 16 --classes 3 --per-class 4 > /dev/null 2>&1
touch "$tmp/g/notes.txt"
"$stoker" gen "$tmp/g" --sizes 16 --classes 2 --per-class 2 --force > /dev/null 2>&1 || fail "gen --force"
[ "$(find "$tmp/g" -name '*.jpg' | wc -l)" = 4 ] && [ ! -e "$tmp/g/class_002" ] ||
  { find "$tmp/g" | sort; fail "gen --force left stale images"; }
[ -e "$tmp/g/notes.txt" ] || fail "gen --force removed a file it did not write"

# Ctrl-C during bench's implicit gen stops the gen (exit 130), not after all of it.
XDG_CACHE_HOME="$tmp/xdg" "$stoker" bench --reader serial --max-batches 1 > "$tmp/b.out" 2> "$tmp/b.err" &
pid=$!
for _ in $(seq 300); do grep -q "^# no dataset given" "$tmp/b.out" 2>/dev/null && break; sleep 0.1; done
grep -q "^# no dataset given: using the built-in default in $tmp/xdg/stoker/default" "$tmp/b.out" ||
  { kill $pid; fail "bench does not say where the default dataset goes: $(cat "$tmp/b.out")"; }
sleep 0.3
kill -INT $pid
rc=0; wait $pid || rc=$?
[ "$rc" = 130 ] || fail "bench interrupted in its gen: exit $rc: $(tail -3 "$tmp/b.err")"
[ ! -e "$tmp/xdg/stoker/default/1024px/stoker-gen.json" ] || fail "the gen ran to its end after Ctrl-C"
grep -q "interrupted while writing" "$tmp/b.err" || fail "no interrupt message: $(cat "$tmp/b.err")"

# eval's progress line counts the bytes it read (it said "0.0 MB").
"$stoker" gen "$tmp/big" --sizes 400 --classes 2 --per-class 4 > /dev/null 2>&1
"$stoker" checkpoint init resnet18 "$tmp/c2.safetensors" --classes 2 > /dev/null
"$stoker" eval "$tmp/big" --checkpoint "$tmp/c2.safetensors" --batch 4 --size 32 > /dev/null 2> "$tmp/e.err" ||
  fail "eval: $(cat "$tmp/e.err")"
grep -Eq "8/8 images +0\.[1-9][0-9]* MB|8/8 images +[1-9][0-9.]* MB" "$tmp/e.err" ||
  fail "eval's progress line: $(cat "$tmp/e.err")"

# CLI11's parse errors speak as ours do.
expect 2 "^stoker: usage error: The following argument was not expected: --flip" \
  eval "$d" --checkpoint "$tmp/r.safetensors" --flip
for sub in pack train; do
  "$stoker" $sub --help > "$tmp/help.txt"
  grep -q "{false}" "$tmp/help.txt" && fail "stoker $sub --help shows {false}: $(grep '{false}' "$tmp/help.txt")"
done

# The built-in datasets go to the XDG cache directory, not the current one.
# (--help read whole, then searched: grep -q would end the pipe early, SIGPIPE under pipefail)
XDG_CACHE_HOME="$tmp/xdg" "$stoker" bench --help > "$tmp/help.txt"
grep -q -- "--default-root.*$tmp/xdg/stoker/default" "$tmp/help.txt" ||
  fail "bench's default root is not under \$XDG_CACHE_HOME"
env -u XDG_CACHE_HOME HOME=/home/someone "$stoker" study --help > "$tmp/help.txt"
grep -q -- "--data-root.*/home/someone/.cache/stoker/study-quick" "$tmp/help.txt" ||
  fail "study's data root is not ~/.cache/stoker"
echo PASS
