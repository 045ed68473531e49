#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `stoker qualify` end to end on tiny data (issue 42): the search's invariants in qualify.json
# (the answer is the largest N that held, N + 1 was tried and failed unless the cap was
# reached, each step's runs and accelerators counted), an accelerator slow enough to be fed up
# to the cap and one too fast for any, both modes, local and local-cold, NFS over loopback and
# behind a link shaped to 100 Mbit/s (its measured bandwidth recorded), a `train --json`
# result as the profile, the report, an interrupt (exit 130, finished steps kept, our NFS
# servers stopped) and the usage errors (exit 2) before any work.
# Needs root and NFS-Ganesha for the NFS part (scripts/deps.sh --test; skips otherwise).
set -euo pipefail
stoker=$1
py=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
serve="$here/../../scripts/nfs_serve.sh"
. "$here/../skip_policy.sh"
tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2> /dev/null || true
  for s in "$tmp"/*/nfs/nfs-*; do
    [ -d "$s" ] && "$serve" stop --state "$s" > /dev/null 2>&1 || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 32,48 --classes 2 --per-class 16 --seed 5 > /dev/null 2>&1
# A step's window must reach 0.5 s to judge it (common/measures.h).
common=(--batch 4 --size 16 --seconds 0.5 --reader threads:2)

# The search's invariants, over every result of a qualify.json. $2: the answer every search
# must give ("cap": the dataset's cap; a number), or "any".
check() {
  "$py" - "$1" "$2" << 'PY'
import json, sys
q = json.load(open(sys.argv[1]))
want = sys.argv[2]
ctx = q["context"]
assert ctx["tool"] == "stoker qualify" and ctx["status"] == "complete", ctx["status"]
assert ctx["au_target"] == 0.9
for e in q["results"]:
    where = f'{e["dataset"]} {e["storage"]} {e["mode"]}'
    assert e["status"] == "ok", (where, e.get("error"))
    steps = e["steps"]
    held = [s["accelerators"] for s in steps if s["held"]]
    failed = [s["accelerators"] for s in steps if not s["held"]]
    n = e["accelerators"]
    assert n == max(held, default=0), (where, n, held)
    # 32 images in batches of 4: each accelerator needs a full batch of every epoch.
    cap = 32 // 4
    if e["bound"] == "max":
        assert n in (cap, ctx.get("max_accelerators")) and not failed, (where, steps)
    else:
        assert n + 1 in failed, (where, "N + 1 never tried", steps)
        assert e["bound"] in ("link", "server", "decode", "cpu", "latency"), e["bound"]
    if want == "cap":
        assert n == min(cap, ctx["max_accelerators"]), (where, n)
    elif want != "any":
        assert n == int(want), (where, n, want)
    for s in steps:
        assert len(s["runs"]["au_min"]) == ctx["repeats"], s
        assert len(s["per_accelerator_au"]) == s["accelerators"], s
        assert min(s["per_accelerator_au"]) == s["au_min"], s
        assert s["au_min"] <= s["au_median"] + 1e-12, s
        assert s["images_per_s"] > 0 and s["read_mb_per_s"] > 0, s
        if s["held"]:
            assert s["au_min"] >= 0.9 and "not_enough_data" not in s, s
        else:
            assert "bound" in s, s
    if e["storage"].startswith("nfs@") or e["storage"] == "nfs":
        assert e["caches"] == {"client": "none", "server": "cold"}, e["caches"]
    elif e["storage"] != "nfs-url":
        assert e["caches"]["server"] == "none", e["caches"]
    one = [s for s in steps if s["accelerators"] == 1][0]
    assert e["cores_per_accelerator"] > 0, e
PY
}

# 1. An accelerator at 100 img/s: tiny images feed as many as --max-accelerators allows,
# in both modes, warm and cold. 2. One at 10^7 img/s: none, with the bound named.
"$stoker" qualify "$tmp/d/32px" --accelerator 100 --storage local,local-cold --mode decode,read \
  "${common[@]}" --repeats 1 --max-accelerators 4 --out "$tmp/q1" > "$tmp/q1.txt" 2>&1 || fail "q1 exited $?: $(tail -5 "$tmp/q1.txt")"
check "$tmp/q1/qualify.json" cap || fail "q1: $(cat "$tmp/q1.txt")"
grep -q '4+ (max' "$tmp/q1.txt" || fail "q1: no answer line: $(tail -6 "$tmp/q1.txt")"
"$stoker" qualify "$tmp/d/32px" --accelerator 10000000 --mode read "${common[@]}" --repeats 1 \
  --out "$tmp/q2" > "$tmp/q2.txt" 2>&1 || fail "q2 exited $?: $(tail -5 "$tmp/q2.txt")"
check "$tmp/q2/qualify.json" 0 || fail "q2: $(cat "$tmp/q2.txt")"

# 3. A measured trainer as the profile: its rate and its name.
"$stoker" train --synthetic --arch resnet18 --classes 2 --steps 3 --batch 2 --size 32 --json "$tmp/t.json" \
  > /dev/null 2>&1 || fail "train --json"
# Its rate set to 100 img/s, so the steps' length does not follow this machine's speed.
"$py" -c "import json,sys; d=json.load(open(sys.argv[1])); d['results'][0]['images_per_s']=100.0; json.dump(d,open(sys.argv[1],'w'))" "$tmp/t.json"
"$stoker" qualify "$tmp/d/48px" --accelerator "$tmp/t.json" --mode read "${common[@]}" \
  --repeats 1 --max-accelerators 2 \
  --out "$tmp/q3" > "$tmp/q3.txt" 2>&1 || fail "q3 exited $?: $(tail -5 "$tmp/q3.txt")"
check "$tmp/q3/qualify.json" any || fail "q3"
"$py" - "$tmp/q3/qualify.json" "$tmp/t.json" << 'PY'
import json, sys
q, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a = q["context"]["accelerator"]
assert abs(a["images_per_s"] - t["results"][0]["images_per_s"]) < 1e-6 * a["images_per_s"], a
assert a["from"] == sys.argv[2] and a["name"].startswith("cpu resnet18 "), a
PY
"$stoker" report "$tmp/q3/qualify.json" -o - | grep -q 'The answer: accelerators fed' ||
  fail "stoker report did not render the qualification"

# 4. Usage errors, before any work: exit 2, naming what is wrong.
expect_usage() {  # TEXT ARGS...
  local text=$1 rc=0
  shift
  "$stoker" qualify "$@" > "$tmp/u.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "exit $rc, not 2, for $*: $(cat "$tmp/u.txt")"
  grep -q -- "$text" "$tmp/u.txt" || fail "no '$text' for $*: $(cat "$tmp/u.txt")"
}
expect_usage "'disk' is none of" "$tmp/d/32px" --storage disk --out "$tmp/u1"
expect_usage "'both' is neither" "$tmp/d/32px" --mode both --out "$tmp/u1"
expect_usage "nope.json: cannot open" "$tmp/d/32px" --accelerator "$tmp/nope.json" --out "$tmp/u1"
expect_usage "--seconds must be above 0" "$tmp/d/32px" --seconds 0 --out "$tmp/u1"
expect_usage "holds a result already (qualify.json)" "$tmp/d/32px" --out "$tmp/q1"
[ ! -e "$tmp/u1/qualify.json" ] || fail "a refused run wrote a result"

# 5. NFS: over loopback, and behind a link shaped to 100 Mbit/s (measured, recorded). Where
# no server can run, the searches fail with the reason and the command exits 1.
rc=0
"$stoker" qualify "$tmp/d/32px" --accelerator 100 --storage nfs,nfs@100mbit --mode read \
  "${common[@]}" --repeats 2 --max-accelerators 2 --out "$tmp/n1" > "$tmp/n1.txt" 2>&1 || rc=$?
if grep -q 'cannot run here' "$tmp/n1.txt"; then
  [ "$rc" = 1 ] || fail "no NFS server, yet exit $rc"
  skip "no NFS server can run here: $(grep -m1 'cannot run here' "$tmp/n1.txt")"
fi
[ "$rc" = 0 ] || fail "n1 exited $rc: $(tail -8 "$tmp/n1.txt")"
check "$tmp/n1/qualify.json" 2 || fail "n1"
"$py" - "$tmp/n1/qualify.json" << 'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert r[0]["storage"] == "nfs" and r[0]["link"] is None, r[0].get("link")
link = r[1]["link"]
assert r[1]["storage"] == "nfs@100mbit" and link["shaping"] == "tbf both ends", link
assert 50e6 < link["bandwidth_bits_per_s"] <= 1.2 * 100e6, link
assert link["rtt_ms_avg"] > 0, link
PY
[ -z "$(pgrep -f "$tmp/n1/nfs" || true)" ] || fail "an NFS server of n1 is still running"
# A dataset given as a URL is read from its own server, whatever --storage says.
url=$("$serve" start "$tmp/d/32px" --port auto --mount-port auto --state "$tmp/srv/nfs/nfs-0" 2> /dev/null |
  grep '^nfs://') || fail "nfs_serve.sh start"
"$stoker" qualify "$url" --accelerator 100 --storage local,nfs@1gbit --mode read "${common[@]}" \
  --repeats 1 --max-accelerators 2 --out "$tmp/n2" > "$tmp/n2.txt" 2>&1 || fail "n2 exited $?: $(tail -5 "$tmp/n2.txt")"
"$serve" stop --state "$tmp/srv/nfs/nfs-0" > /dev/null 2>&1
check "$tmp/n2/qualify.json" 2 || fail "n2"
"$py" - "$tmp/n2/qualify.json" << 'PY'
import json, sys
q = json.load(open(sys.argv[1]))
r = q["results"]
assert [e["storage"] for e in r] == ["nfs-url"], [e["storage"] for e in r]
assert r[0]["caches"]["server"] == "as the server keeps it", r[0]["caches"]
assert q["context"]["datasets"][0]["root"].startswith("nfs://"), q["context"]["datasets"]
PY

# 6. Interrupted mid-search (SIGINT): exit 130, what finished kept, the servers stopped.
"$stoker" qualify "$tmp/d/32px" --accelerator 100 --storage nfs --mode read --batch 4 --size 16 \
  --seconds 2 --repeats 2 --out "$tmp/i1" > "$tmp/i1.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q '^32px ' "$tmp/i1.txt" 2> /dev/null && break
  sleep 0.2
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" = 130 ] || fail "interrupt: exit $rc: $(tail -5 "$tmp/i1.txt")"
"$py" -c "import json,sys; q=json.load(open(sys.argv[1])); assert q['context']['status']=='interrupted'; assert q['results'][0]['steps'], q" "$tmp/i1/qualify.json" || fail "interrupted result"
[ -s "$tmp/i1/report.html" ] || fail "no report after the interrupt"
[ -z "$(pgrep -f "$tmp/i1/nfs" || true)" ] || fail "the interrupted run left its NFS server"
echo "qualify: ok"
