# SPDX-License-Identifier: Apache-2.0
# The network between the loader and scripts/nfs_serve.sh's server in --netns mode (sourced by
# it, not run): a network namespace of its own joined to this one (the loader's) by a veth
# pair on a private /30, the link shaped with tc (TBF on both ends, since netem may not exist:
# no delay is added) or left unshaped, and measured: round-trip time (ping) and achieved
# bandwidth (iperf3 from the server to the loader, the direction NFS reads go).
#
# Names and addresses: namespace stoker-nfs-N, veth stknfsN (here) and stknfsNs (there),
# 10.213.N.1 (here) and 10.213.N.2 (the server), N in 1..254 chosen where no address or
# route of this machine covers 10.213.N.0/30 and no such namespace exists. Everything made
# is recorded in $state/netns so that link_down (stop, a trap) removes exactly that.
# Needs from the caller: die, $state. STOKER_NFS_TC replaces `tc` for shaping (tests plant a
# failing one with it).

link_prefix=10.213
link_tc=${STOKER_NFS_TC:-tc}

# The rate in bits/s that tc is given for a --link value (1gbit, 25gbit, 500mbit), or 0 for
# unshaped; anything else is a usage error.
link_rate_bits() {
  case "$1" in
    unshaped) echo 0 ;;
    [1-9]*gbit | [1-9]*mbit)
      local n=${1%?bit} unit=${1: -4}
      case "$n" in *[!0-9]*) return 1 ;; esac
      [ "$unit" = gbit ] && echo $((n * 1000000000)) || echo $((n * 1000000)) ;;
    *) return 1 ;;
  esac
}

# True when 10.213.$1.0/30 clashes with something of this machine: an address, or a route
# other than the default one (a VPN's 10.0.0.0/8, say).
link_subnet_taken() {
  ip -o -4 addr show | grep -q " $link_prefix\.$1\." && return 0
  ip -4 route show table all match "$link_prefix.$1.1" 2> /dev/null | grep -vq '^default\|^broadcast\|^local' &&
    return 0
  [ -e "/run/netns/stoker-nfs-$1" ] || ip link show "stknfs$1" > /dev/null 2>&1
}

# Creates the namespace and the veth pair; sets link_ns, link_here, link_there, link_host,
# link_server and writes $state/netns. The namespace is claimed atomically (ip netns add
# fails where another start took the same N first).
link_up() {
  local n tries
  for tries in $(seq 60); do
    n=$((1 + RANDOM % 254))
    link_subnet_taken "$n" && continue
    ip netns add "stoker-nfs-$n" 2> /dev/null && break
    n=""
  done
  [ -n "$n" ] || die "no free 10.213.N.0/30 subnet or namespace name found after $tries tries"
  link_ns=stoker-nfs-$n link_here=stknfs$n link_there=stknfs${n}s
  link_host=$link_prefix.$n.1 link_server=$link_prefix.$n.2
  printf 'netns=%s\nveth=%s\n' "$link_ns" "$link_here" > "$state/netns"
  ip link add "$link_here" type veth peer name "$link_there" netns "$link_ns" ||
    die "cannot create the veth pair $link_here/$link_there"
  ip addr add "$link_host/30" dev "$link_here" &&
    ip link set "$link_here" up &&
    ip -n "$link_ns" addr add "$link_server/30" dev "$link_there" &&
    ip -n "$link_ns" link set "$link_there" up &&
    ip -n "$link_ns" link set lo up || die "cannot configure the veth pair $link_here/$link_there"
}

# TBF at `rate` bits/s on both ends (egress of each side: the server's replies and the
# loader's requests). The bucket holds 4 ms at the rate (at least 256 KB, more than one
# 64 KB GSO segment); a 10 ms queue. A link that cannot be shaped is an error: it must
# never run unshaped under a shaped name. Checked: each qdisc is there with its rate.
link_shape() {
  local rate=$1 burst=$(($1 / 8 / 250))
  [ "$rate" -gt 0 ] || return 0
  [ "$burst" -ge 262144 ] || burst=262144
  local err
  err=$($link_tc qdisc replace dev "$link_here" root tbf rate "$rate" burst "$burst" latency 10ms 2>&1 &&
    $link_tc -n "$link_ns" qdisc replace dev "$link_there" root tbf rate "$rate" burst "$burst" latency 10ms 2>&1) ||
    die "cannot shape the link to $link_name with tc tbf: $err (the link is not used unshaped)"
  tc qdisc show dev "$link_here" | grep -q "tbf .*rate" &&
    tc -n "$link_ns" qdisc show dev "$link_there" | grep -q "tbf .*rate" ||
    die "tc reports no tbf qdisc on $link_here/$link_there after shaping to $link_name"
}

# Round-trip time (20 pings, 10 ms apart) and the bandwidth iperf3 achieves in 3 s from the
# server's side to this one (-R; the first second, slow start and the full bucket, left
# out). Written to $state/link.env (key=value) and $state/link.json. A shaped link that
# carries more than 1.2x its rate is not shaped: an error.
link_measure() {
  local ping_out rtt iperf_out mbits
  ping_out=$(ping -n -q -c 20 -i 0.01 -W 2 "$link_server" 2>&1) ||
    die "ping across the veth pair to $link_server failed: $ping_out"
  # "rtt min/avg/max/mdev = 0.031/0.045/0.090/0.012 ms"
  rtt=$(echo "$ping_out" | sed -n 's|.*= \([0-9.]*\)/\([0-9.]*\)/\([0-9.]*\)/\([0-9.]*\) ms.*|\1 \2 \3 \4|p')
  [ -n "$rtt" ] || die "cannot read ping's round-trip times: $ping_out"
  set -- $rtt
  local rtt_min=$1 rtt_avg=$2 rtt_max=$3 rtt_mdev=$4
  ip netns exec "$link_ns" iperf3 -s -1 -B "$link_server" -p 5201 > "$state/iperf3-server.log" 2>&1 &
  local iperf_pid=$!
  for _ in $(seq 50); do
    ip netns exec "$link_ns" ss -ltnH "( sport = :5201 )" | grep -q . && break
    sleep 0.1
  done
  iperf_out=$(iperf3 -c "$link_server" -p 5201 -R -t 4 -O 1 -f m 2>&1) || {
    kill "$iperf_pid" 2> /dev/null || true
    die "iperf3 across the link failed: $iperf_out"
  }
  wait "$iperf_pid" 2> /dev/null || true
  # "[  5]   0.00-3.00  sec   336 MBytes   940 Mbits/sec                  receiver"
  mbits=$(echo "$iperf_out" | awk '/receiver/ { print $(NF-2); exit }')
  case "$mbits" in '' | *[!0-9.]*) die "cannot read iperf3's bandwidth: $iperf_out" ;; esac
  local bits
  bits=$(awk -v m="$mbits" 'BEGIN { printf "%.0f", m * 1e6 }')
  if [ "$link_rate" -gt 0 ] && awk -v b="$bits" -v r="$link_rate" 'BEGIN { exit !(b > 1.2 * r) }'; then
    die "the link shaped to $link_name carried $mbits Mbit/s: it is not shaped (tc tbf without effect)"
  fi
  cat > "$state/link.env" << EOF
link=$link_name
shaping=$([ "$link_rate" -gt 0 ] && echo "tbf both ends" || echo none)
rate_bits_per_s=$link_rate
netns=$link_ns
veth=$link_here
client_address=$link_host
server_address=$link_server
rtt_ms_min=$rtt_min
rtt_ms_avg=$rtt_avg
rtt_ms_max=$rtt_max
rtt_ms_mdev=$rtt_mdev
rtt_tool=ping -c 20 -i 0.01
bandwidth_bits_per_s=$bits
bandwidth_tool=iperf3 -R -t 4 -O 1 (server to client, 1 TCP stream, first second omitted)
EOF
  awk -F= 'BEGIN { print "{" } NR > 1 { print "," }
    { v = substr($0, length($1) + 2)
      if (v ~ /^[0-9]+(\.[0-9]+)?$/) printf "  \"%s\": %s", $1, v
      else printf "  \"%s\": \"%s\"", $1, v }
    END { print "\n}" }' "$state/link.env" > "$state/link.json"
  echo "nfs_serve: link $link_name ($(sed -n 's/^shaping=//p' "$state/link.env")) $link_host <-> $link_server in namespace $link_ns: rtt avg $rtt_avg ms (min $rtt_min, max $rtt_max), $mbits Mbit/s measured (iperf3, server to client)" >&2
}

# Removes what $state/netns records: every process in the namespace (TERM, then KILL after
# 10 s), the namespace (its end of the veth pair with it) and this end if still there.
link_down() {
  [ -s "$state/netns" ] || return 0
  local ns veth pids
  ns=$(sed -n 's/^netns=//p' "$state/netns")
  veth=$(sed -n 's/^veth=//p' "$state/netns")
  if [ -n "$ns" ] && [ -e "/run/netns/$ns" ]; then
    pids=$(ip netns pids "$ns" 2> /dev/null || true)
    [ -z "$pids" ] || kill -TERM $pids 2> /dev/null || true
    for _ in $(seq 100); do
      pids=$(ip netns pids "$ns" 2> /dev/null || true)
      [ -n "$pids" ] || break
      sleep 0.1
    done
    [ -z "$pids" ] || kill -KILL $pids 2> /dev/null || true
    for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2> /dev/null)" ] && break; sleep 0.1; done
    ip netns del "$ns" 2> /dev/null || true
  fi
  [ -z "$veth" ] || ! ip link show "$veth" > /dev/null 2>&1 || ip link del "$veth" 2> /dev/null || true
  rm -f "$state/netns"
}
