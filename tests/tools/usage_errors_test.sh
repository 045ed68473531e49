#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `stoker` never accepts nonsense: an option that means nothing to a command is unknown to
# it (and absent from its --help), a value out of range or not in the vocabulary is a usage
# error (exit 2) whose message names the option and what it accepts, and bad input is a
# failure (exit 1) that names the file. Also: gen refuses to write over another dataset,
# list files may name absolute paths, eval uses the checkpoint's image size.
set -euo pipefail
. "$(dirname "$0")/../cli_expect.sh"  # fail, expect CODE PATTERN ARGS...
stoker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # a run without --save keeps its checkpoint under runs/ here
export OMP_NUM_THREADS=2

"$stoker" gen "$tmp/d" --sizes 40 --classes 2 --per-class 3 --seed 2 2>/dev/null


# Options that mean nothing to a command are not theirs: rejected, and not in --help.
ck="$tmp/ck.safetensors"
"$stoker" checkpoint init resnet18 "$ck" --classes 2 > /dev/null
for opt in "--transform center" "--flip 0.5" "--seed 1" "--no-shuffle" "--drop-last" \
    "--no-decode" "--shard-order global" "--shuffle-buffer 10"; do
  # shellcheck disable=SC2086
  expect 2 "${opt%% *}" eval "$tmp/d" --checkpoint "$ck" $opt
  "$stoker" eval --help | grep -c -- "${opt%% *}" >/dev/null && fail "eval --help offers ${opt%% *}"
done
for cmd in train peek; do
  expect 2 "--no-decode" $cmd "$tmp/d" --no-decode
  "$stoker" $cmd --help | grep -c -- "--no-decode" >/dev/null && fail "$cmd --help offers --no-decode"
done
expect 2 "--drop-last" train "$tmp/d" --drop-last
for opt in "--reader serial" "--transform center" "--flip 0" "--epochs 2" "--no-shuffle"; do
  # shellcheck disable=SC2086
  expect 2 "train: ${opt%% *} means nothing with --synthetic" train --synthetic $opt
done
for opt in --dtype --layout --prefetch; do
  expect 2 -- "$opt" peek "$tmp/d" $opt 1
done
"$stoker" bench --help | grep -c -- "--no-decode" >/dev/null || fail "bench --help lost --no-decode"

# Ranges and vocabularies: exit 2, naming the option and what it accepts.
# The options several commands share have one bound each, whatever the command
# (tools/options/command_options.h): the study's were unchecked until it ran (exit 1).
for cmd in train study; do
  expect 2 "--steps: '0' is not an integer from 1 to 1073741824" $cmd "$tmp/d" --steps 0
done
for cmd in train bench study; do
  expect 2 "--warmup: '1073741825' is not an integer from 0 to 1073741824" $cmd "$tmp/d" \
    --warmup 1073741825
  expect 2 "--warmup: '-1' is not an integer from 0 to 1073741824" $cmd "$tmp/d" --warmup -1
done
# An older name is checked as its option, and named by its current name.
expect 2 "--warmup: '-1' is not an integer from 0" train "$tmp/d" --timing-warmup -1
expect 2 "--steps: '0' is not an integer from 1" study "$tmp/d" --iterations 0
expect 2 "not expected: --timing-warmup" bench "$tmp/d" --timing-warmup 1
expect 2 "--epochs: '0' is not an integer from 1" train "$tmp/d" --epochs 0
expect 2 "--epochs: '-1' is not an integer from 1" train "$tmp/d" --epochs -1
expect 2 "--epochs: '-1' is not an integer from 1" bench "$tmp/d" --epochs -1
expect 2 "--seed: '-1' is not an integer >= 0" train "$tmp/d" --seed -1
expect 2 "--seed: '-1' is not an integer >= 0" bench "$tmp/d" --seed -1
expect 2 "--seed: '-1' is not an integer >= 0" gen "$tmp/x" --seed -1
# A mistyped subcommand or option gets the nearest name (issue 47).
expect 2 "'bnech' is not a subcommand: did you mean 'bench'\? \(they are: gen, bench," bnech "$tmp/d"
expect 2 "'--reder' is not an option of bench: did you mean '--reader'\?" bench "$tmp/d" --reder serial
expect 2 "'--epoch' is not an option of train: did you mean '--epochs'\?" train "$tmp/d" --epoch 2
expect 2 "'ini' is not a checkpoint subcommand: did you mean 'init'\?" checkpoint ini
expect 2 "'zzzzzz' is not a subcommand \(they are:" zzzzzz
expect 2 "--batch: '0' is not an integer from 1 to" bench "$tmp/d" --batch 0
expect 2 "--batch: 'x' is not an integer" train "$tmp/d" --batch x
expect 2 "--size: '0' is not an integer from 8 to 8192" bench "$tmp/d" --size 0
expect 2 "--size: '8x9000' is not an integer from 8 to 8192" bench "$tmp/d" --size 8x9000
expect 2 "--std: '1,0,1': expected three positive numbers" bench "$tmp/d" --std 1,0,1
expect 2 "--flip: '2' is not a number >= 0 and <= 1" bench "$tmp/d" --flip 2
expect 2 "--reader: unknown reader 'garbage': expected serial, threads:N" bench "$tmp/d" \
  --reader serial,garbage
expect 2 "--reader: unknown reader 'garbage': expected serial" train "$tmp/d" --reader garbage
expect 2 "--reader: unknown reader 'garbage': expected serial" eval "$tmp/d" --checkpoint "$ck" \
  --reader garbage
expect 2 "--dtype: unknown output type 'f16': expected f32 .* or u8" bench "$tmp/d" --dtype f16
expect 2 "--transform: unknown transform 'x': expected" train "$tmp/d" --transform x
expect 2 "--on-error: .*expected skip or fail" bench "$tmp/d" --on-error maybe
expect 2 "--source: unknown source 'tape'" bench "$tmp/d" --source tape
# A reader that keeps reads in flight refuses a named synchronous source (never swaps it).
expect 2 "reader uring:8:2 keeps reads in flight and needs an asynchronous source.*the pread source" \
  bench "$tmp/d" --reader uring:8:2 --source pread
expect 2 "reader uring:4:1 .*the pread source" train "$tmp/d" --reader uring:4:1 --source pread \
  --steps 1
expect 2 "--arch: model 'resnet19': expected resnet18" train "$tmp/d" --arch resnet19
expect 2 "--backend: unknown backend 'tpu': expected cpu or cuda" train "$tmp/d" --backend tpu
expect 2 "--precision: unknown precision 'f8'" train "$tmp/d" --precision f8
expect 2 "--conv-algo: unknown convolution algorithm 'fastest': expected heuristic, exhaustive" \
  train "$tmp/d" --conv-algo fastest
expect 2 "--schedule: unknown learning-rate schedule 'linear'" train "$tmp/d" --schedule linear
expect 2 "--momentum: '1.5' is not a number >= 0 and <= 1" train "$tmp/d" --momentum 1.5
expect 2 "--lr: '-0.1' is not a number >= 0" train "$tmp/d" --lr -0.1
expect 2 "--milestones: '-3' is not an integer" train "$tmp/d" --milestones 10 -3
expect 2 "--threads: '0' is not an integer from 1" train "$tmp/d" --threads 0
expect 2 "--trace-steps: .*expected A:B" train "$tmp/d" --trace-steps 5
expect 2 "--decode: unknown decode 'tpu': expected cpu, gpu or auto" train "$tmp/d" --decode tpu
expect 2 "--decode gpu: the cpu backend trains on the CPU \\(GPU decode feeds --backend cuda\\): add --backend cuda" train "$tmp/d" --decode gpu
expect 2 "--decode gpu: reader processes:2 decodes in other processes" train "$tmp/d" \
  --decode gpu --backend cuda --reader processes:2
expect 2 "train: --decode-memory means nothing with --decode cpu" train "$tmp/d" --decode-memory 64
expect 2 "train: --decode-arena means nothing with --decode cpu" train "$tmp/d" --decode-arena 64
expect 2 "study: --decode gpu decodes for cuda:ARCH consumers" study "$tmp/d" --decode gpu \
  --consumer cpu:resnet18 --out "$tmp/st"
expect 2 "--decode: unknown decode 'x' in 'cpu,x'" study "$tmp/d" --decode cpu,x
expect 2 "--decode: unknown decode 'auto': expected cpu or gpu" bench "$tmp/d" --decode auto
expect 2 "--decode: 'gpu' given twice in 'gpu,gpu'" study "$tmp/d" --decode gpu,gpu
for opt in "--decode gpu" "--decode-arena 64" "--decode-memory 64"; do
  # shellcheck disable=SC2086
  expect 2 "train: ${opt%% *} means nothing with --synthetic" train --synthetic $opt
done
expect 2 "--quality: '101' is not an integer from 1 to 100" gen "$tmp/x" --quality 101
expect 2 "--pattern: unknown pattern 'noise': expected photo or index" gen "$tmp/x" --pattern noise
expect 2 "--classes: '0' is not an integer from 1" model resnet18 --classes 0
expect 2 "--depth: '0': expected requests in flight" probe "$tmp/d" --depth 1,0
expect 2 "--emulate 'fast': expected the preset resnet50-h100" bench "$tmp/d" --emulate fast
expect 2 "--init and --resume exclude each other" train "$tmp/d" --init "$ck" --resume "$ck"
expect 2 "not both" train "$tmp/d" --synthetic
expect 2 "bench: --direct means nothing with --reader serial" bench "$tmp/d" --reader serial --direct
# Every form --emulate's help offers is accepted.
for e in resnet50-h100 1786 1786img/s 224ms/400; do
  "$stoker" bench "$tmp/d" --reader serial --batch 2 --size 16 --max-batches 1 --emulate "$e" \
    > /dev/null 2>&1 || fail "--emulate $e refused"
done

# gen: the same options again keep the dataset; other options are refused unless --force.
before=$(cat "$tmp/d/stoker-gen.json")
"$stoker" gen "$tmp/d" --sizes 40 --classes 2 --per-class 3 --seed 2 > /dev/null 2>&1 ||
  fail "gen with the same options"
expect 2 "'$tmp/d' holds a dataset made with other options \(.*seed 2 \(asked 7\).*--force" \
  gen "$tmp/d" --sizes 40 --classes 2 --per-class 3 --seed 7
[ "$(cat "$tmp/d/stoker-gen.json")" = "$before" ] || fail "refused gen rewrote stoker-gen.json"
grep -q 'gen \[' "$tmp/err.txt" && fail "refused gen drew a progress line first"
mkdir -p "$tmp/mine/photos" && echo keep > "$tmp/mine/photos/note.txt"
expect 2 "'$tmp/mine' is not empty and holds no stoker-gen.json" gen "$tmp/mine" --classes 1 \
  --per-class 1 --sizes 16
"$stoker" gen "$tmp/mine" --classes 1 --per-class 1 --sizes 16 --force > /dev/null 2>&1 ||
  fail "gen --force"
[ -f "$tmp/mine/photos/note.txt" ] && [ -f "$tmp/mine/stoker-gen.json" ] || fail "gen --force layout"
# An interrupted gen (only the partial record) is finished by the same command.
"$stoker" gen "$tmp/p" --sizes 16 --classes 1 --per-class 2 > /dev/null 2>&1
mv "$tmp/p/stoker-gen.json" "$tmp/p/stoker-gen.partial.json"
"$stoker" gen "$tmp/p" --sizes 16 --classes 1 --per-class 2 > /dev/null 2>&1 ||
  fail "gen does not finish its own interrupted run"

# List files: absolute paths are taken as they are; relative ones under the list's folder.
mkdir -p "$tmp/lists"
{ echo "$tmp/d/class_000/img_000000.jpg 0"; echo "$tmp/d/class_001/img_000001.jpg 1"; } \
  > "$tmp/lists/abs.txt"
"$stoker" bench "$tmp/lists/abs.txt" --reader serial --batch 2 --size 16 > "$tmp/out.txt" 2>&1 ||
  { cat "$tmp/out.txt"; fail "list file with absolute paths"; }
grep -q "abs.txt: 2 images, 2 classes" "$tmp/out.txt" || fail "absolute list: $(cat "$tmp/out.txt")"

# A file where a dataset is expected: named, and no raw bytes on the terminal.
expect 1 "img_000000.jpg' is not a list file .*binary data" bench "$tmp/d/class_000/img_000000.jpg"
LC_ALL=C grep -q '[^[:print:][:space:]]' "$tmp/err.txt" && fail "raw bytes in: $(cat -v "$tmp/err.txt")"
printf '\x89PNG\r\n\x1a\n' > "$tmp/fake.png"
expect 1 "fake.png' is not a list file" bench "$tmp/fake.png"
# An empty dataset names its folder.
mkdir -p "$tmp/empty/cat" "$tmp/empty/dog"
expect 1 "dataset '$tmp/empty' holds no images: nothing to sample \(its 2 class directories" \
  bench "$tmp/empty" --reader serial

# Versions in the JSON context are strings, all of them.
"$stoker" bench "$tmp/d" --reader serial --batch 2 --size 16 --json "$tmp/b.json" > /dev/null 2>&1
python3 - "$tmp/b.json" <<'PY'
import json, sys
libs = json.load(open(sys.argv[1]))["context"]["libraries"]
assert libs and all(isinstance(v, str) for v in libs.values()), libs
PY

# eval evaluates at the image size the checkpoint was trained at, and says so.
if "$stoker" train --synthetic --arch resnet18 --classes 2 --batch 2 --size 32 --steps 1 \
    --save "$tmp/t32.safetensors" > "$tmp/out.txt" 2>&1; then
  "$stoker" eval "$tmp/d" --checkpoint "$tmp/t32.safetensors" --batch 2 --json "$tmp/e.json" \
    > "$tmp/eval.txt" 2>/dev/null || fail "eval"
  grep -q "^# input: 32x32 centre crop of a 36 resize (the checkpoint's size)" "$tmp/eval.txt" ||
    fail "eval size line: $(cat "$tmp/eval.txt")"
  "$stoker" eval "$tmp/d" --checkpoint "$tmp/t32.safetensors" --batch 2 --size 40 \
    > "$tmp/eval.txt" 2>/dev/null || fail "eval --size"
  grep -q "^# input: 40x40 .*(--size size)" "$tmp/eval.txt" || fail "eval --size line"
elif grep -q "not built in" "$tmp/out.txt"; then
  echo "note: no CPU backend in this build: eval's image size not checked"
else
  cat "$tmp/out.txt"; fail "synthetic train"
fi
echo "usage_errors: all checks passed"
