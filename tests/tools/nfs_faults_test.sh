#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NFS faults mid-run, end to end (issue 42), each bounded in time (a hang fails, not waits):
#  1. NFS-Ganesha SIGKILLed mid-bench (the one of this test's state directory): exit 1, an
#     error naming the server (host:port) and the file being read, the partial row kept.
#  2. The link to a server in its own namespace (nfs_serve.sh --netns) down for 3 s mid-run:
#     TCP retransmits, the run completes with every image, and the stall is said on stderr.
#  3. The link down for longer than the client's 10 s: exit 1 after about 10 s, an error
#     saying so and naming the server and the file, the partial row kept.
# Needs root and NFS-Ganesha (scripts/nfs_serve.sh), else skips through the skip policy.
set -euo pipefail
stoker=$1
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
serve="$here/../../scripts/nfs_serve.sh"
. "$here/../skip_policy.sh"
tmp=$(mktemp -d)
veth=""
trap '[ -z "$veth" ] || ip link set "$veth" up 2> /dev/null || true
  for s in "$tmp"/s*; do [ -d "$s" ] && "$serve" stop --state "$s" > /dev/null 2>&1 || true; done
  rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$stoker" gen "$tmp/d" --sizes 64 --classes 2 --per-class 30 --seed 4 > /dev/null 2>&1

# bench NAME URL EPOCHS: stoker bench in the background, killed after 60 s (a hang).
bench() {
  timeout -s KILL 60 "$stoker" bench "$2" --reader serial --batch 2 --size 32 --epochs "$3" \
    --emulate 40 --json "$tmp/$1.json" > "$tmp/$1.txt" 2> "$tmp/$1.err" &
  pid=$!
}
# finished NAME RC: bench's exit status was RC (137: killed by the timeout, a hang).
finished() {
  local rc=0
  wait $pid || rc=$?
  [ $rc != 137 ] || fail "$1: still running after 60 s (a hang): $(tail -3 "$tmp/$1.err")"
  [ $rc = "$2" ] || fail "$1: exit $rc, expected $2: $(cat "$tmp/$1.txt" "$tmp/$1.err")"
}
# kept NAME: the JSON holds the partial row, marked incomplete, with some images.
kept() {
  "$python" - "$tmp/$1.json" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
assert d["context"]["incomplete"] is True, d["context"]
assert r["incomplete"] and r["images"] > 0 and r["storage"] == "nfs", r
PY
}

# 1. The server SIGKILLed mid-run.
rc=0
url=$("$serve" start "$tmp/d" --port auto --mount-port auto --state "$tmp/s1" 2> "$tmp/serve.txt") || rc=$?
[ $rc = 77 ] && skip "no NFS server here: $(cat "$tmp/serve.txt")"
[ $rc = 0 ] || fail "nfs_serve: $(cat "$tmp/serve.txt")"
port=$(echo "$url" | sed 's/.*nfsport=\([0-9]*\).*/\1/')
gpid=$(tr -dc 0-9 < "$tmp/s1/ganesha.pid")
[ "$(cat "/proc/$gpid/comm")" = ganesha.nfsd ] || fail "pid $gpid is not ganesha.nfsd"
bench k "$url" 50
sleep 2
kill -KILL "$gpid"
finished k 1
grep -q "lost the connection to the NFS server: .*(NFS server 127.0.0.1:$port, while reading nfs://127.0.0.1$tmp/d/class_00[01]/img_[0-9]*.jpg?nfsport=$port" \
  "$tmp/k.err" || fail "killed server: $(cat "$tmp/k.err")"
grep -q '^# INCOMPLETE: the row above covers the first' "$tmp/k.txt" || fail "no partial row: $(cat "$tmp/k.txt")"
kept k

# 2. and 3. need a server in a namespace of its own, behind a veth pair.
rc=0
url=$("$serve" start "$tmp/d" --netns --link unshaped --state "$tmp/s2" 2> "$tmp/serve2.txt") || rc=$?
[ $rc = 77 ] && skip "no NFS server in a namespace here: $(cat "$tmp/serve2.txt")"
[ $rc = 0 ] || fail "nfs_serve --netns: $(cat "$tmp/serve2.txt")"
veth=$(sed -n 's/^veth=//p' "$tmp/s2/link.env")
server=$(sed -n 's/^server_address=//p' "$tmp/s2/link.env")

# 2. Down for 3 s: waited out (TCP retransmits within the client's 10 s), said, all read.
bench b "$url" 6
sleep 2
ip link set "$veth" down
sleep 3
ip link set "$veth" up
finished b 0
grep -q "the NFS server $server:2049 answered again after [0-9.]* s of silence, while reading nfs://$server$tmp/d/.*stall 1 of this connection" \
  "$tmp/b.err" || fail "no stall said: $(cat "$tmp/b.err")"
"$python" -c "import json; d=json.load(open('$tmp/b.json')); r=d['results'][0]; \
assert 'incomplete' not in d['context'] and 'incomplete' not in r, d; assert r['images'] == 360, r"

# 3. Down for longer than the client waits: a clear error after 10 s, not a hang.
bench l "$url" 50
sleep 2
ip link set "$veth" down
start=$SECONDS
finished l 1
took=$((SECONDS - start))
ip link set "$veth" up
[ $took -ge 9 ] && [ $took -le 20 ] || fail "link down: failed after $took s, expected about 10"
grep -q "no answer from the NFS server for 10 s .*(NFS server $server:2049, while reading nfs://$server$tmp/d/class_00[01]/img_[0-9]*.jpg" \
  "$tmp/l.err" || fail "link down: $(cat "$tmp/l.err")"
kept l
echo "ok: server SIGKILLed and link down past 10 s are errors naming server and file, rows kept; a 3 s outage waited out and said"
