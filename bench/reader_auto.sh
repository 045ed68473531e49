#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `--reader auto` against every fixed reader it could have chosen and the default (issue 43),
# side by side in one run: each case's readers interleaved within a round, the order rotated
# from round to round (drift hits them all alike), medians over its rounds. Auto's rate counts its search: it is the whole run's (train
# leaves out its first step, every reader's set-up, alike). Prints one table per case and
# writes every run's JSON and a summary (summary.json) under --out.
#   bench/reader_auto.sh DATA256 DATA1024 [--out DIR] [--cases a,b] [--build DIR] [--scale X]
#                        [--rounds N]
# Cases (name: command; rounds; readers):
#   emulate-800    bench DATA256 --emulate 800, 3 epochs of batch 32; 3 rounds; all
#   emulate-2500   the same at 2500 img/s (more than the loader gives on 2 cores)
#   r18-64-256     train DATA256 --arch resnet18 --size 64 --batch 32, 200 steps; 2 rounds; all
#   r18-112-1024   train DATA1024 --arch resnet18 --size 112 --batch 32, 120 steps; 1 round; all
#   r50-224-1024   train DATA1024 --arch resnet50 --size 224 --batch 16, 60 steps; 1 round;
#                  auto, the default and the fewer-core readers only (a compute-bound step)
# "all" is auto and reader_candidates(cpus): serial, threads:, processes: and uring:8N:N for
# N = 1, 2, 4, ... cpus. The train cases add the core splits auto could choose: READER@tC,
# READER with --threads C, for C below cpus down to half of them (tools/train/core_split.h).
# Auto's train rate counts its core split's search too (on scratch, before the loop that
# train's images/s covers): the run's measured time plus the search's seconds.
# --scale X multiplies steps and epochs (a quick rehearsal: 0.2); --rounds N gives every case N
# rounds instead of its own count.
set -euo pipefail
usage="usage: bench/reader_auto.sh DATA256 DATA1024 [--out DIR] [--cases a,b] [--build DIR] [--scale X] [--rounds N]"
d256=${1:?$usage}
d1024=${2:?$usage}
shift 2
out=out/bench-reader-auto cases=emulate-800,emulate-2500,r18-64-256,r18-112-1024,r50-224-1024
build=build scale=1 rounds=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
stoker=$build/tools/stoker
cpus=$(nproc)
counts="" n=1
while [ "$n" -lt "$cpus" ]; do counts="$counts $n"; n=$((n * 2)); done
counts="$counts $cpus"
all="auto serial"
for k in threads processes; do for n in $counts; do all="$all $k:$n"; done; done
for n in $counts; do all="$all uring:$((8 * n)):$n"; done
fewer="auto serial"
for n in $counts; do fewer="$fewer threads:$n"; done
# The core splits below every core (down to half), with the fewer-core readers.
splits=""
for ((c = cpus - 1; c >= (cpus + 1) / 2 && c >= 1; c--)); do
  for n in $counts; do splits="$splits threads:$n@t$c"; done
done
mkdir -p "$out"
n_of() { awk -v x="$1" -v s="$scale" 'BEGIN { v = int(x * s + 0.5); print (v < 1 ? 1 : v) }'; }
epochs=$(n_of 3)

# run CASE ROUND READER: one run, its JSON at $out/CASE-READER-ROUND.json.
run() {
  local c=$1 r=$2 reader=${3%@t*} f threads=()
  [ "$reader" != "$3" ] && threads=(--threads "${3##*@t}")
  f="$out/$c-$(name_of "$3")-$r.json"
  case "$c" in
    emulate-*)
      "$stoker" bench "$d256" --reader "$reader" --emulate "${c#emulate-}" --epochs "$epochs" \
        --batch 32 --json "$f" > /dev/null 2>&1 ;;
    r18-64-256)
      "$stoker" train "$d256" --arch resnet18 --size 64 --batch 32 --steps "$(n_of 200)" \
        --warmup 1 --reader "$reader" "${threads[@]}" --no-save --json "$f" > /dev/null 2>&1 ;;
    r18-112-1024)
      "$stoker" train "$d1024" --arch resnet18 --size 112 --batch 32 --steps "$(n_of 120)" \
        --warmup 1 --reader "$reader" "${threads[@]}" --no-save --json "$f" > /dev/null 2>&1 ;;
    r50-224-1024)
      "$stoker" train "$d1024" --arch resnet50 --size 224 --batch 16 --steps "$(n_of 60)" \
        --warmup 1 --reader "$reader" "${threads[@]}" --no-save --json "$f" > /dev/null 2>&1 ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
}
name_of() { local x=${1//:/_}; echo "${x//@/_}"; }
rounds_of() {
  [ -n "$rounds" ] && { echo "$rounds"; return; }
  case "$1" in emulate-*) echo 3 ;; r18-64-256) echo 2 ;; *) echo 1 ;; esac
}
readers_of() {
  case "$1" in r50-*) echo "$fewer $splits" ;; r18-*) echo "$all $splits" ;; *) echo "$all" ;; esac
}

# rotated RNUM LIST...: the list started at item RNUM-1, so no reader always runs first in a
# round (the VM's speed drifts over minutes: whoever runs first would carry it).
rotated() {
  local k=$1
  shift
  local n=$# a=("$@")
  for ((i = 0; i < n; i++)); do echo "${a[$(((i + k - 1) % n))]}"; done
}

for c in ${cases//,/ }; do
  for r in $(seq "$(rounds_of "$c")"); do
    # shellcheck disable=SC2046
    for reader in $(rotated "$r" $(readers_of "$c")); do
      echo "# $(date -u +%H:%M:%S) $c round $r: $reader" >&2
      run "$c" "$r" "$reader" || echo "# $c $reader round $r failed" >&2
    done
  done
done

python3 - "$out" "$cases" "$cpus" "$all" "$fewer" "$splits" << 'PY'
import json, os, re, statistics, sys
out, cases, cpus, every, fewer, splits = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split(), sys.argv[6].split()
default = f"threads:{cpus}"
summary = {}

def rate(r):
    """The run's images/s, with auto's core split search (seconds before the loop) counted."""
    split = r.get("core_split") or {}
    ips, extra = r["images_per_s"], split.get("seconds", 0)
    if not extra or not ips:
        return ips
    images = max(r["steps"] - 1, 1) * r["global_batch"]  # --warmup 1: the window's images
    return images / (images / ips + extra)

for c in cases:
    readers = (fewer if c.startswith("r50-") else every) + (splits if c.startswith("r") else [])
    rows = {}
    for reader in readers:
        runs = []
        for name in sorted(os.listdir(out)):
            stem = re.sub(r"[:@]", "_", reader)
            if re.fullmatch(re.escape(f"{c}-{stem}-") + r"[0-9]+\.json", name):
                d = json.load(open(os.path.join(out, name)))
                r = {**d.get("context", {}), **d["results"][0]}
                t = r.get("reader_tuning") or {}
                split = r.get("core_split") or {}
                runs.append({"images_per_s": rate(r), "split_s": split.get("seconds", 0),
                             "split": split.get("compute_threads"),
                             "chose": (t.get("chosen") or {}).get("reader"),
                             "search_steps": sum(s["steps"] for s in t.get("searches", [])),
                             "tried": [f"{x['reader']}:{x.get('verdict', 'skipped')}:{x.get('steps', 0)}"
                                       for s in t.get("searches", []) for x in s["tried"]]})
        if runs:
            rows[reader] = {"median": statistics.median(x["images_per_s"] for x in runs), "runs": runs}
    fixed = {k: v for k, v in rows.items() if k != "auto"}
    if not fixed or "auto" not in rows:
        continue
    best = max(fixed, key=lambda k: fixed[k]["median"])
    a = rows["auto"]["median"]
    summary[c] = {"rows": rows, "best_fixed": best, "auto_over_best": a / fixed[best]["median"],
                  "auto_over_default": a / fixed[default]["median"] if default in fixed else None}
    print(f"\n{c}: img/s of the whole run, median of {len(rows['auto']['runs'])} (runs)")
    for k, v in rows.items():
        mark = " <- best fixed" if k == best else (" <- default" if k == default else "")
        print(f"  {k:<14} {v['median']:9.1f}   {' '.join('%.1f' % x['images_per_s'] for x in v['runs'])}{mark}")
    for x in rows["auto"]["runs"]:
        print(f"  auto chose {x['chose']} after {x['search_steps']} search steps: {' '.join(x['tried'])}"
              + (f"; core split {x['split']} threads ({x['split_s']:.1f} s on scratch)" if x["split"] else ""))
    s = summary[c]
    print(f"  auto / best fixed ({best}) = {s['auto_over_best']:.3f}; auto / default = "
          f"{s['auto_over_default']:.3f}" if s["auto_over_default"] else "")
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
