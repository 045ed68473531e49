#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/nfs_serve.sh --netns (issue 42): NFS-Ganesha in a network namespace of its own behind
# a veth pair shaped to 1 Gb/s; the measured bandwidth near 1 Gb/s and the round-trip time
# reported (link.json); `stoker probe` reads through it, also cold on the server's side
# (--server-cold); a link that cannot be shaped is an
# error, never unshaped; and nothing it made is left (namespace, veth, ganesha) after a
# SIGTERM to a --foreground harness, after a SIGTERM mid-start, or after a failed start.
# Needs root (skips otherwise, through the skip policy).
set -euo pipefail
stoker=$1
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
serve="$here/../../scripts/nfs_serve.sh"
. "$here/../skip_policy.sh"
tmp=$(mktemp -d)
harness=""
trap '[ -z "$harness" ] || kill -TERM $harness 2> /dev/null || true; wait 2> /dev/null || true
  for s in "$tmp"/s*; do [ -d "$s" ] && "$serve" stop --state "$s" > /dev/null 2>&1 || true; done
  rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# What a state directory recorded is gone: the namespace, its veth, its ganesha.
check_gone() {  # NETNS VETH GANESHA_PID WHEN
  ! ip netns list | grep -q "^$1\b" || fail "$4: namespace $1 left"
  ! ip link show "$2" > /dev/null 2>&1 || fail "$4: veth $2 left"
  if [ -n "$3" ] && kill -0 "$3" 2> /dev/null; then
    [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$3/stat")" = Z ] || fail "$4: ganesha.nfsd $3 left"
  fi
}
# Waits (at most 40 s) until FILE is non-empty (with a third argument -e: exists) or process
# PID has ended.
wait_for() {
  for _ in $(seq 400); do
    [ "${3:--s}" "$1" ] && return 0
    kill -0 "$2" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}

"$stoker" gen "$tmp/d" --sizes 64 --classes 2 --per-class 40 --seed 4 > /dev/null 2>&1

# Usage errors: an unknown rate, --link without --netns.
rc=0; "$serve" start "$tmp/d" --netns --link fast > /dev/null 2> "$tmp/u.txt" || rc=$?
[ $rc = 2 ] || fail "--link fast: exit $rc: $(cat "$tmp/u.txt")"
rc=0; "$serve" start "$tmp/d" --link 1gbit > /dev/null 2> "$tmp/u.txt" || rc=$?
[ $rc = 2 ] || fail "--link without --netns: exit $rc: $(cat "$tmp/u.txt")"

# The server in its namespace, link shaped to 1 Gb/s, in the foreground.
"$serve" start "$tmp/d" --netns --link 1gbit --state "$tmp/s1" --foreground > "$tmp/url.txt" \
  2> "$tmp/serve.txt" &
harness=$!
if ! wait_for "$tmp/url.txt" $harness; then
  rc=0; wait $harness || rc=$?
  harness=""
  [ $rc = 77 ] && skip "no NFS server in a namespace here: $(cat "$tmp/serve.txt")"
  fail "nfs_serve --netns: exit $rc: $(cat "$tmp/serve.txt")"
fi
url=$(cat "$tmp/url.txt")
"$python" - "$tmp/s1/link.json" "$url" << 'PY'
import json, sys
link = json.load(open(sys.argv[1]))
url = sys.argv[2]
assert link["link"] == "1gbit" and link["rate_bits_per_s"] == 1e9, link
assert link["shaping"] == "tbf both ends", link
bw = link["bandwidth_bits_per_s"]
assert 0.6e9 <= bw <= 1.1e9, f"measured {bw / 1e6:.0f} Mbit/s on a 1 Gb/s link"
assert 0 < link["rtt_ms_min"] <= link["rtt_ms_avg"] <= link["rtt_ms_max"] < 50, link
assert link["server_address"].startswith("10.213."), link
assert url.startswith(f"nfs://{link['server_address']}/"), (url, link)
PY
grep -q '^bandwidth_bits_per_s=[0-9]' <("$serve" link --state "$tmp/s1") || fail "link: no bandwidth"
ns=$(sed -n 's/^netns=//p' "$tmp/s1/link.env")
veth=$(sed -n 's/^veth=//p' "$tmp/s1/link.env")
gpid=$(tr -dc 0-9 < "$tmp/s1/ganesha.pid")
ip netns pids "$ns" | grep -qx "$gpid" || fail "ganesha.nfsd $gpid is not in namespace $ns"
! ss -ltnH "( sport = :2049 )" | grep -q "10.213." || fail "the server listens in this namespace"

# The loader reads through the link.
"$stoker" probe "$url" --reader serial --depth 1,32 --json "$tmp/p.json" > "$tmp/p.txt" 2>&1 ||
  fail "probe over the link: $(cat "$tmp/p.txt")"
"$python" -c "import json; r=json.load(open('$tmp/p.json'))['results']; \
assert len(r) == 6 and all(x['storage'] == 'nfs' for x in r), r; \
assert all(x['images'] == 80 for x in r), r"

# Cold on both sides: the server's files evicted here before each run, said in the JSON.
"$stoker" probe "$url" --server-cold --reader serial --depth 1 --json "$tmp/c.json" \
  > "$tmp/c.txt" 2>&1 || fail "probe --server-cold: $(cat "$tmp/c.txt")"
! grep -q 'could not be evicted' "$tmp/c.txt" || fail "not evicted: $(cat "$tmp/c.txt")"
"$python" -c "import json; d=json.load(open('$tmp/c.json')); r=d['results']; \
assert d['context']['caches'] == {'client': 'none', 'server': 'cold'}, d['context']; \
assert all(x['page_cache'] == 'cold' and x['caches']['server'] == 'cold' for x in r), r"
rc=0; "$stoker" probe "$tmp/d" --server-cold > "$tmp/c2.txt" 2>&1 || rc=$?
[ $rc = 2 ] || fail "--server-cold of a local path: exit $rc: $(cat "$tmp/c2.txt")"

# SIGTERM to the harness: all gone.
kill -TERM $harness
rc=0; wait $harness || rc=$?
harness=""
[ $rc = 143 ] || fail "SIGTERM: harness exit $rc"
check_gone "$ns" "$veth" "$gpid" "after SIGTERM"

# A link that cannot be shaped is an error, and leaves nothing behind.
before=$(ip netns list | grep -o '^stoker-nfs-[0-9]*' | sort || true)
rc=0
STOKER_NFS_TC=false "$serve" start "$tmp/d" --netns --link 1gbit --state "$tmp/s2" \
  > "$tmp/o2.txt" 2> "$tmp/e2.txt" || rc=$?
[ $rc = 1 ] || fail "tc failing: exit $rc: $(cat "$tmp/e2.txt")"
grep -q 'cannot shape the link to 1gbit' "$tmp/e2.txt" || fail "tc failing: $(cat "$tmp/e2.txt")"
[ ! -s "$tmp/o2.txt" ] || fail "tc failing, yet a URL: $(cat "$tmp/o2.txt")"
after=$(ip netns list | grep -o '^stoker-nfs-[0-9]*' | sort || true)
[ "$before" = "$after" ] || fail "tc failing: namespaces left: $after (before: $before)"
[ ! -e "$tmp/s2/netns" ] || fail "tc failing: $(cat "$tmp/s2/netns") still recorded"

# SIGTERM mid-start (the server up, the link being measured): all gone.
"$serve" start "$tmp/d" --netns --link 1gbit --state "$tmp/s3" > "$tmp/o3.txt" 2> "$tmp/e3.txt" &
harness=$!
wait_for "$tmp/s3/iperf3-server.log" $harness -e || fail "no measurement: $(cat "$tmp/e3.txt")"
ns=$(sed -n 's/^netns=//p' "$tmp/s3/netns")
veth=$(sed -n 's/^veth=//p' "$tmp/s3/netns")
gpid=$(tr -dc 0-9 < "$tmp/s3/ganesha.pid")
kill -TERM $harness
rc=0; wait $harness || rc=$?
harness=""
[ $rc = 143 ] || fail "SIGTERM mid-start: exit $rc: $(cat "$tmp/e3.txt")"
[ ! -s "$tmp/o3.txt" ] || fail "SIGTERM mid-start, yet a URL: $(cat "$tmp/o3.txt")"
check_gone "$ns" "$veth" "$gpid" "after SIGTERM mid-start"
echo "ok: 1gbit link measured, probe through it, cleaned up after SIGTERM, mid-start and a failed tc"
