#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Local against NFS, told apart (issue 47): a stopped server with explicit ports gives a hint,
# not "lost the connection"; probe prints the same rows for a local path and an nfs:// URL,
# each naming its storage and cache, and says loudly that NFS cannot be cold; bench rows
# name their storage; a server dying mid-bench keeps the partial row, marked incomplete.
# The last three need a local NFS-Ganesha (scripts/nfs_serve.sh: root), else skip.
set -euo pipefail
stoker=$1
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
serve="$here/../../scripts/nfs_serve.sh"
. "$here/../skip_policy.sh"
tmp=$(mktemp -d)
trap '"$serve" stop --state "$tmp/nfs" > /dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Nothing listens on the port (the README's ?nfsport=&mountport= form): a hint, exit 1.
port=$("$python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
rc=0
"$stoker" bench "nfs://127.0.0.1/data?nfsport=$port&mountport=$port" --reader serial \
  > "$tmp/o.txt" 2> "$tmp/e.txt" || rc=$?
[ $rc = 1 ] || fail "no server: exit $rc: $(cat "$tmp/e.txt")"
grep -q "no NFS server answered at 127.0.0.1" "$tmp/e.txt" || fail "no hint: $(cat "$tmp/e.txt")"
grep -q "scripts/nfs_serve.sh starts one" "$tmp/e.txt" || fail "no hint: $(cat "$tmp/e.txt")"
! grep -q "lost the connection" "$tmp/e.txt" || fail "misleading: $(cat "$tmp/e.txt")"

"$stoker" gen "$tmp/d" --sizes 64 --classes 2 --per-class 30 --seed 4 > /dev/null 2>&1
rc=0
url=$("$serve" start "$tmp/d" --port auto --mount-port auto --state "$tmp/nfs" 2> "$tmp/serve.txt") || rc=$?
[ $rc = 77 ] && skip "no NFS server here: $(cat "$tmp/serve.txt")"
[ $rc = 0 ] || fail "nfs_serve: $(cat "$tmp/serve.txt")"
nfs=$url  # one size: gen writes the classes straight into d

# probe: the same rows by default, each naming storage and cache; NFS warmed, said loudly.
"$stoker" probe "$tmp/d" --json "$tmp/pl.json" > "$tmp/pl.txt" 2>&1
"$stoker" probe "$nfs" --json "$tmp/pn.json" > "$tmp/pn.txt" 2>&1
grep -q '^# WARNING: nfs:// cannot be probed cold' "$tmp/pn.txt" || fail "no warning: $(cat "$tmp/pn.txt")"
"$python" - "$tmp/pl.json" "$tmp/pn.json" <<'PY'
import json, sys
loc, nfs = (json.load(open(p)) for p in sys.argv[1:3])
rows = lambda d: [(r["order"], r["reader"].replace("source:uring", "source:X").replace("source:nfs", "source:X").replace("source:pread", "source:X")) for r in d["results"]]
assert rows(loc) == rows(nfs), (rows(loc), rows(nfs))
assert {(r["storage"], r["page_cache"]) for r in loc["results"]} == {("local", "cold")}, loc
assert {(r["storage"], r["page_cache"]) for r in nfs["results"]} == {("nfs", "warm")}, nfs
PY
grep -Eq '^nfs +warm +shuffled +serial' "$tmp/pn.txt" || fail "probe row: $(cat "$tmp/pn.txt")"
grep -Eq '^local +cold +shuffled +serial' "$tmp/pl.txt" || fail "probe row: $(cat "$tmp/pl.txt")"

# bench: a local path and its nfs:// twin, both "d", told apart by their storage column.
"$stoker" bench "$tmp/d" "$nfs" --reader serial --batch 8 --size 32 --json "$tmp/b.json" \
  > "$tmp/b.txt" 2>&1
grep -Eq '^d +local +serial' "$tmp/b.txt" || fail "bench rows: $(cat "$tmp/b.txt")"
grep -Eq '^d +nfs +serial' "$tmp/b.txt" || fail "bench rows: $(cat "$tmp/b.txt")"
grep -q 'through the NFS server: its page cache is warm' "$tmp/b.txt" || fail "nfs not warmed"
"$python" -c "import json; r=json.load(open('$tmp/b.json'))['results']; \
assert [(x['storage'], x['page_cache']) for x in r] == [('local','warm'), ('nfs','warm')], r"

# The server dies mid-run: the rows so far and the partial one are kept, exit 1.
"$stoker" bench "$nfs" --reader serial --batch 2 --size 32 --epochs 50 --emulate 40 \
  --json "$tmp/k.json" > "$tmp/k.txt" 2> "$tmp/k.err" &
pid=$!
sleep 3
"$serve" stop --state "$tmp/nfs" > /dev/null 2>&1
rc=0
wait $pid || rc=$?
[ $rc = 1 ] || fail "server killed: exit $rc: $(cat "$tmp/k.txt" "$tmp/k.err")"
grep -q '^# INCOMPLETE: the row above covers the first' "$tmp/k.txt" || fail "no partial row: $(cat "$tmp/k.txt")"
grep -q 'marked incomplete' "$tmp/k.err" || fail "error: $(cat "$tmp/k.err")"
"$python" - "$tmp/k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
assert d["context"]["incomplete"] is True, d["context"]
assert r["incomplete"] and r["images"] > 0 and r["storage"] == "nfs", r
PY
echo "ok: NFS hint, probe rows alike, bench storage column, partial row kept"
