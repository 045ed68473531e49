#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local NFS server for tests and benchmarks: NFS-Ganesha (VFS FSAL) on 127.0.0.1 exporting
# one directory read-only over NFSv3 (and v4), with its config, log and pid under a state
# directory. Not a production setup: no Kerberos, no locking, no UDP, root squash off.
#
#   scripts/nfs_serve.sh start DIR [--port N|auto] [--mount-port N|auto] [--state SDIR]
#                                  [--timeout S] [--netns [--link RATE]] [--foreground]
#       Starts the server, waits until it is up (at most S s, default 30) and
#       prints the export's URL: nfs://127.0.0.1/<abs DIR>?nfsport=N&mountport=M
#       (a file below DIR is nfs://127.0.0.1/<abs DIR>/<file>?nfsport=N&mountport=M).
#       Defaults: --port 2049 --mount-port 20048 --state /tmp/stoker-nfs-<port>; `auto`
#       picks a free port.
#       --netns: the server runs in a network namespace of its own, joined to this one by a
#       veth pair (10.213.N.1 here, 10.213.N.2 the server's, which the URL names), the link
#       shaped by --link: 1gbit, 10gbit, 25gbit (any Ngbit or Nmbit: tc tbf on both ends) or
#       unshaped (the default). Its round-trip time and bandwidth are measured and written
#       to SDIR/link.env (key=value) and SDIR/link.json (default SDIR: a new /tmp/stoker-nfs-netns.*).
#       --foreground: stays until SIGTERM/SIGINT (or the server dies), then removes it all.
#   scripts/nfs_serve.sh stop [--state SDIR | --port N]
#       Stops that server (SIGTERM, then SIGKILL after 10 s), and rpcbind if a start started
#       it and no other server runs; with --netns, the namespace and the veth pair too.
#   scripts/nfs_serve.sh url [--state SDIR | --port N]     prints a running server's URL.
#   scripts/nfs_serve.sh link [--state SDIR]     prints a --netns server's link.env.
#
# Exit status: 0 ok; 77 the server cannot run here (not root, NFS-Ganesha or rpcbind not
# installed, for --netns ip, tc, ping or iperf3 missing: scripts/deps.sh --test); 2 usage;
# 1 any other failure (port in use, server died, not ready in time, a link that cannot be
# set up or shaped), with the reason and the end of the server's log on stderr. A start that
# fails or is interrupted (SIGTERM, SIGINT, SIGHUP) removes whatever it had made.
set -euo pipefail

die() { echo "nfs_serve: $*" >&2; exit 1; }
cannot() { echo "nfs_serve: cannot run an NFS server here: $*" >&2; exit 77; }
usage() { sed -n '7,29p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[ $# -ge 1 ] || usage
cmd=$1; shift
dir="" port=2049 mount_port=20048 state="" timeout=30 netns="" link_name="" foreground=""
[ "$cmd" = start ] && { [ $# -ge 1 ] || usage; dir=$1; shift; }
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=$2; shift 2 ;;
    --mount-port) mount_port=$2; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --netns) netns=1; shift ;;
    --link) link_name=$2; shift 2 ;;
    --foreground) foreground=1; shift ;;
    *) usage ;;
  esac
done
[ -z "$link_name" ] || [ -n "$netns" ] || usage  # --link shapes --netns's link
[ -n "$netns" ] && [ -z "$link_name" ] && link_name=unshaped
. "$(dirname "$0")/nfs_link.sh"
if [ -n "$netns" ]; then
  link_rate=$(link_rate_bits "$link_name") || {
    echo "nfs_serve: --link '$link_name': expected 1gbit, 10gbit, 25gbit, another Ngbit or Nmbit, or unshaped" >&2
    exit 2
  }
fi

# The server's network namespace, once --netns made one ("": this one).
server_ns=""
in_ns() { if [ -n "$server_ns" ]; then ip netns exec "$server_ns" "$@"; else "$@"; fi; }
port_in_use() { in_ns ss -ltnH "( sport = :$1 )" 2>/dev/null | grep -q .; }
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 40000))
    port_in_use "$p" || { echo "$p"; return; }
  done
  die "no free TCP port found"
}
# A live process (not a zombie awaiting its reaper); with $2, also named $2 (pid reuse).
alive() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
  [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ] || return 1
  [ -z "${2:-}" ] || [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}
pid_of() { [ -s "$1" ] && tr -dc 0-9 < "$1" || true; }

if [ "$cmd" = start ]; then
  [ "$port" = auto ] && port=$(free_port)
  [ "$mount_port" = auto ] && { mount_port=$(free_port); [ "$mount_port" != "$port" ] || mount_port=$(free_port); }
fi
if [ -z "$state" ]; then
  if [ "$cmd" = start ] && [ -n "$netns" ]; then state=$(mktemp -d /tmp/stoker-nfs-netns.XXXXXX)
  else state=/tmp/stoker-nfs-$port; fi
fi
lock=/tmp/stoker-nfs-start.lock        # one start-up at a time (see below)
rpcbind_pid=/tmp/stoker-nfs-rpcbind.pid  # the rpcbind this harness started, if any

stop_server() {
  local pid rpid netns_server=""
  [ -s "$state/netns" ] && netns_server=1
  pid=$(pid_of "$state/ganesha.pid")
  if alive "$pid" ganesha.nfsd; then
    kill -TERM "$pid"
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      echo "nfs_serve: ganesha.nfsd $pid ignored SIGTERM for 10 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$state/ganesha.pid" "$state/url"
  # A --netns server's rpcbind is its own, inside its namespace: gone with it.
  if [ -n "$netns_server" ]; then
    link_down
    rm -f "$state/link.env" "$state/link.json"
    return 0
  fi
  # rpcbind is one per machine: the last server to stop stops it, if this harness started
  # it (whichever start did: servers started in parallel share it), under the start-up lock
  # so that no start is between finding it and registering with it. Zombies do not count:
  # where PID 1 does not reap, dead servers linger as ganesha.nfsd.
  exec 9> "$lock"
  flock -w 30 9 || true
  rpid=$(pid_of "$rpcbind_pid")
  local others="" p
  for p in $(pgrep -x ganesha.nfsd || true); do alive "$p" && others=1; done
  if alive "$rpid" rpcbind && [ -z "$others" ]; then
    kill -TERM "$rpid" 2>/dev/null || true
    rm -f "$rpcbind_pid"
  fi
  exec 9>&-
}

case "$cmd" in
  stop)
    [ -d "$state" ] || die "no state directory $state (was a server started with --state or --port?)"
    stop_server
    exit 0 ;;
  url)
    pid=$(pid_of "$state/ganesha.pid")
    alive "$pid" ganesha.nfsd && [ -s "$state/url" ] || die "no server running with state $state"
    cat "$state/url"
    exit 0 ;;
  link)
    [ -s "$state/link.env" ] || die "no --netns server's link measured in $state"
    cat "$state/link.env"
    exit 0 ;;
  start) ;;
  *) usage ;;
esac

[ "$(id -u)" -eq 0 ] || cannot "NFS-Ganesha needs root here (uid $(id -u))"
tools="ganesha.nfsd rpcbind rpcinfo ss"
[ -z "$netns" ] || tools="$tools ip tc ping iperf3 unshare"
for tool in $tools; do
  command -v "$tool" > /dev/null || [ -x "/usr/sbin/$tool" ] ||
    cannot "'$tool' not found (Debian: scripts/deps.sh --test installs nfs-ganesha, nfs-ganesha-vfs, rpcbind, iproute2, iputils-ping, iperf3)"
done
export PATH="$PATH:/usr/sbin:/sbin"
[ -d "$dir" ] || die "export directory '$dir' does not exist"
dir=$(cd "$dir" && pwd -P)
case "$port$mount_port" in *[!0-9]*) die "ports must be numbers or 'auto' (got $port, $mount_port)" ;; esac

mkdir -p "$state"
old=$(pid_of "$state/ganesha.pid")
if alive "$old" ganesha.nfsd; then
  die "a server from $state is still running (pid $old, $(cat "$state/url" 2>/dev/null)); stop it first: $0 stop --state $state"
fi
rm -f "$state/ganesha.pid" "$state/url" "$state/link.env" "$state/link.json"  # a previous run's leftovers
link_down  # a --netns start killed before its trap could run

# From here on, a failure or a signal removes what this start made.
started=""
on_exit() {
  local rc=$?
  [ -n "$started" ] && [ -z "$foreground" ] && return
  trap - EXIT INT TERM HUP
  stop_server > /dev/null 2>&1 || true
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

if [ -n "$netns" ]; then
  link_up
  link_shape "$link_rate"
  server_ns=$link_ns
  bind_addr=$link_server
else
  bind_addr=127.0.0.1
  for p in "$port" "$mount_port"; do
    if port_in_use "$p"; then
      die "TCP port $p is in use ($(ss -ltnpH "( sport = :$p )" | grep -o 'users:.*' | head -1)); stop that server ($0 stop --port $p) or choose another (--port/--mount-port, or auto)"
    fi
  done

  # One start-up at a time on this machine: each server (re)registers NFS v3 with the one
  # rpcbind, and two registering at once fail ("Cannot register NFS V3 on TCP"), as tests
  # run in parallel do. Once up, servers coexist (clients name the ports). The children
  # must not inherit the lock's descriptor, or it would be held as long as they run.
  exec 9> "$lock"
  flock -w "$timeout" 9 || die "another nfs_serve.sh start held $lock for ${timeout}s"

  # Ganesha registers its programs with rpcbind and will not start without one.
  if ! rpcinfo -p 127.0.0.1 > /dev/null 2>&1; then
    setsid rpcbind -f < /dev/null > "$state/rpcbind.log" 2>&1 9>&- &
    echo $! > "$rpcbind_pid"
    for _ in $(seq 50); do rpcinfo -p 127.0.0.1 > /dev/null 2>&1 && break; sleep 0.1; done
    rpcinfo -p 127.0.0.1 > /dev/null 2>&1 || die "rpcbind did not start: $(tail -5 "$state/rpcbind.log")"
  fi
fi

cat > "$state/ganesha.conf" << EOF
# Written by scripts/nfs_serve.sh: one read-only VFS export of $dir on $bind_addr.
NFS_CORE_PARAM {
  Protocols = 3, 4;
  Bind_addr = $bind_addr;
  NFS_Port = $port;
  MNT_Port = $mount_port;
  Enable_UDP = false;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  # Several instances may run at once (tests in parallel): keep their names apart.
  Dbus_Name_Prefix = stoker$port;
}
NFSV4 {
  # Nothing to recover on a fresh read-only server: no 90 s grace period at start.
  Graceless = true;
  RecoveryRoot = $state/recovery;
}
EXPORT {
  Export_Id = 1;
  Path = $dir;
  Pseudo = $dir;
  Protocols = 3, 4;
  Access_Type = RO;
  Squash = No_Root_Squash;
  SecType = sys;
  FSAL { Name = VFS; }
}
EOF
: > "$state/ganesha.log"
ganesha=(ganesha.nfsd -F -f "$state/ganesha.conf" -L "$state/ganesha.log" -p "$state/ganesha.pid")
if [ -n "$netns" ]; then
  # In its namespace, with an rpcbind of its own: a private /run hides this machine's
  # rpcbind socket (/run/rpcbind.sock), through which Ganesha would otherwise register
  # with, and later unregister from, the loopback servers' rpcbind.
  setsid ip netns exec "$server_ns" unshare --mount --propagation private bash -c '
    mount -t tmpfs stoker-nfs-run /run && mkdir -p /run/ganesha || exit 1
    rpcbind -f < /dev/null > "$0/rpcbind.log" 2>&1 &
    for _ in $(seq 50); do rpcinfo -p 127.0.0.1 > /dev/null 2>&1 && break; sleep 0.1; done
    exec "$@"' "$state" "${ganesha[@]}" < /dev/null > "$state/ganesha.out" 2>&1 9>&- &
else
  setsid "${ganesha[@]}" < /dev/null > "$state/ganesha.out" 2>&1 9>&- &
fi
pid=$!
echo "$pid" > "$state/ganesha.pid"  # also written by ganesha once it has read its config

# Ready once it says so and both ports listen (rpcinfo -n would ask rpcbind, not the port).
deadline=$((SECONDS + timeout))
until grep -q 'NFS SERVER INITIALIZED' "$state/ganesha.log" && port_in_use "$port" &&
  port_in_use "$mount_port"; do
  if ! alive "$pid"; then
    rm -f "$state/ganesha.pid"
    die "ganesha.nfsd exited during start-up; end of $state/ganesha.log:
$(grep -v ':DBUS :\|krb5\|keytab\|credentials for principal' "$state/ganesha.log" | tail -8)
$(tail -3 "$state/ganesha.out")"
  fi
  if [ $SECONDS -ge $deadline ]; then
    die "ganesha.nfsd (pid $pid) not answering on $bind_addr:$port/$mount_port after ${timeout}s; see $state/ganesha.log"
  fi
  sleep 0.2
done
[ -n "$netns" ] || exec 9>&-  # registered: the next start may go
[ -z "$netns" ] || link_measure
url="nfs://$bind_addr$dir?nfsport=$port&mountport=$mount_port"
echo "$url" > "$state/url"
echo "$url"
started=1
[ -z "$netns" ] || [ -n "$foreground" ] || echo "nfs_serve: state in $state (stop: $0 stop --state $state)" >&2
[ -n "$foreground" ] || exit 0

# --foreground: until a signal (the EXIT trap then removes everything) or the server's end.
while alive "$pid" ganesha.nfsd; do sleep 0.5; done
die "ganesha.nfsd (pid $pid) exited; end of $state/ganesha.log:
$(tail -5 "$state/ganesha.log")"
