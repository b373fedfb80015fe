# shellcheck shell=bash
# shellcheck disable=SC2034  # the NETNS_* variables are read by the sourcing script
# Network-namespace harness for rocecap's integration tests and demo. Source it, do not run it.
#
#   source tests/integration/netns.sh
#   netns_require_root            # exits 77 (ctest SKIPPED) when namespaces cannot be made
#   netns_up                      # two namespaces joined by a veth pair; installs EXIT, INT
#                                 # and TERM traps that tear down (register your own cleanup
#                                 # with netns_on_exit, not with trap); fails (set -e) on error
#   netns_exec_sender   CMD...    # runs CMD in the sender namespace, under a timeout; its
#                                 # exit status (124: timed out); stdin is /dev/null
#   netns_exec_receiver CMD...    # same in the receiver namespace
#   netns_bg_sender / netns_bg_receiver CMD...   # same, in the background; pid in NETNS_BG_PID
#   netns_on_exit 'shell code'    # extra cleanup, run (last registered first) before teardown
#   netns_down                    # idempotent; runs by itself on EXIT, INT and TERM
#
# Topology (traffic never leaves the two namespaces; nothing is added to the caller's namespace
# except for the moment the veth pair is created and moved):
#
#   [ $NETNS_SENDER ]  $NETNS_SENDER_IF  <-- veth, MTU $NETNS_MTU -->  $NETNS_RECEIVER_IF  [ $NETNS_RECEIVER ]
#     $NETNS_SENDER_ADDR/24                                             $NETNS_RECEIVER_ADDR/24
#     + each of $NETNS_ANTENNA_ADDRS, + $NETNS_FOREIGN_ADDR
#     route 224.0.0.0/4 dev $NETNS_SENDER_IF                            route 224.0.0.0/4 too
#
# Variables read by netns_up (set them before calling it; defaults in brackets):
#   NETNS_RECEIVER_ADDR   receiver's address [192.0.2.100]
#   NETNS_SENDER_ADDR     sender's primary address [192.0.2.1]
#   NETNS_ANTENNA_ADDRS   space-separated antenna source addresses on the sender
#                         [192.0.2.11 192.0.2.12 192.0.2.13]
#   NETNS_FOREIGN_ADDR    one more sender address that belongs to no stream [192.0.2.99]
#   NETNS_PREFIXLEN       prefix length of every address above [24]
#   NETNS_MTU             veth MTU [9000]
#   NETNS_CMD_TIMEOUT     seconds any netns_exec_*/netns_bg_* command may run [300]
#   NETNS_MAX_SECONDS     watchdog: after this many seconds from netns_up, every process in the
#                         namespaces is killed and the script gets SIGTERM (so it tears down)
#                         [900]; keep it below any outer timeout. If the script is killed
#                         outright (SIGKILL skips traps) the watchdog removes the namespaces.
# Variables set by netns_up (unique per run: they contain the shell's pid $$):
#   NETNS_SENDER, NETNS_RECEIVER         namespace names (rcs<pid>, rcr<pid>)
#   NETNS_SENDER_IF, NETNS_RECEIVER_IF   veth names inside them (vs<pid>, vr<pid>)
# Multicast and IGMP are left at the kernel's defaults (IGMPv3 reports, no forced version);
# IPv6 is disabled in both namespaces so no MLD/RS chatter appears on the veth.

: "${NETNS_RECEIVER_ADDR:=192.0.2.100}"
: "${NETNS_SENDER_ADDR:=192.0.2.1}"
: "${NETNS_ANTENNA_ADDRS:=192.0.2.11 192.0.2.12 192.0.2.13}"
: "${NETNS_FOREIGN_ADDR:=192.0.2.99}"
: "${NETNS_PREFIXLEN:=24}"
: "${NETNS_MTU:=9000}"
: "${NETNS_CMD_TIMEOUT:=300}"
: "${NETNS_MAX_SECONDS:=900}"

NETNS_SENDER=""
NETNS_RECEIVER=""
NETNS_SENDER_IF=""
NETNS_RECEIVER_IF=""
NETNS_BG_PID=""
_netns_cleanups=()
_netns_watchdog_pid=""
_netns_torn_down=0

# The stderr the script started with: teardown may run inside a command whose stderr is
# redirected to a log file, and its messages belong on the terminal.
exec {_netns_log_fd}>&2
netns_log() { echo "netns: $*" >&"$_netns_log_fd"; }

# Exits 77 (the ctest skip code) when this shell cannot create network namespaces.
netns_require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root (network namespaces)" >&2
    exit 77
  fi
  if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
    echo "SKIP: 'ip netns' is not usable here" >&2
    exit 77
  fi
}

netns_on_exit() { _netns_cleanups+=("$1"); }

# Start time of process $1 (clock ticks since boot), empty when it is gone: tells our shell
# from a later process that reuses its pid.
_netns_start_time() { cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null || true; }

_netns_ip_s() { ip -n "$NETNS_SENDER" "$@"; }
_netns_ip_r() { ip -n "$NETNS_RECEIVER" "$@"; }

_netns_trap_signal() {
  local code=$1
  trap - INT TERM
  netns_log "signal received (or the watchdog fired): tearing down"
  netns_down
  exit "$code"
}

netns_up() {
  set -e
  NETNS_SENDER="rcs$$"
  NETNS_RECEIVER="rcr$$"
  NETNS_SENDER_IF="vs$$"
  NETNS_RECEIVER_IF="vr$$"
  _netns_torn_down=0
  trap 'netns_down' EXIT
  trap '_netns_trap_signal 130' INT
  trap '_netns_trap_signal 143' TERM

  ip netns add "$NETNS_SENDER"
  ip netns add "$NETNS_RECEIVER"
  local ns
  for ns in "$NETNS_SENDER" "$NETNS_RECEIVER"; do
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  done
  # Created directly inside the namespaces: the caller's namespace never holds the pair.
  ip link add "$NETNS_SENDER_IF" mtu "$NETNS_MTU" netns "$NETNS_SENDER" type veth \
    peer name "$NETNS_RECEIVER_IF" mtu "$NETNS_MTU" netns "$NETNS_RECEIVER"

  _netns_ip_r addr add "$NETNS_RECEIVER_ADDR/$NETNS_PREFIXLEN" dev "$NETNS_RECEIVER_IF"
  _netns_ip_s addr add "$NETNS_SENDER_ADDR/$NETNS_PREFIXLEN" dev "$NETNS_SENDER_IF"
  local a
  for a in $NETNS_ANTENNA_ADDRS $NETNS_FOREIGN_ADDR; do
    _netns_ip_s addr add "$a/$NETNS_PREFIXLEN" dev "$NETNS_SENDER_IF"
  done
  _netns_ip_s link set "$NETNS_SENDER_IF" up
  _netns_ip_r link set "$NETNS_RECEIVER_IF" up
  _netns_ip_s route add 224.0.0.0/4 dev "$NETNS_SENDER_IF"
  # The receiver needs a multicast route too: joins and IGMP reports go out of its veth.
  _netns_ip_r route add 224.0.0.0/4 dev "$NETNS_RECEIVER_IF"

  # Watchdog: a hung step cannot outlive NETNS_MAX_SECONDS (the TERM trap tears down), and
  # namespaces of a script killed outright (SIGKILL skips traps) are removed within a second.
  local me
  me=$(_netns_start_time $$)
  (
    trap - EXIT INT TERM
    # Hold no descriptor of the caller's: a test runner waits for its pipes to close.
    exec {_netns_log_fd}>&- </dev/null >/dev/null 2>&1
    for ((i = 0; i < NETNS_MAX_SECONDS; i++)); do
      sleep 1
      if [ "$(_netns_start_time $$)" != "$me" ]; then
        _netns_kill_inside "$NETNS_SENDER"
        _netns_kill_inside "$NETNS_RECEIVER"
        ip netns del "$NETNS_SENDER"
        ip netns del "$NETNS_RECEIVER"
        exit 0
      fi
    done
    # bash runs its TERM trap only once the foreground command returns: end that first.
    _netns_kill_inside "$NETNS_SENDER"
    _netns_kill_inside "$NETNS_RECEIVER"
    kill -TERM $$
  ) &
  _netns_watchdog_pid=$!
  netns_log "up: $NETNS_SENDER($NETNS_SENDER_IF) <-> $NETNS_RECEIVER($NETNS_RECEIVER_IF)"
}

# Run as a background job plus `wait`: bash runs a TERM/INT trap only after the foreground
# command returns, but interrupts `wait` at once, so a stop request tears down immediately.
# (Hence the command's stdin is /dev/null.)
netns_exec_sender() {
  timeout --kill-after=5 "$NETNS_CMD_TIMEOUT" ip netns exec "$NETNS_SENDER" "$@" &
  _netns_wait $!
}

netns_exec_receiver() {
  timeout --kill-after=5 "$NETNS_CMD_TIMEOUT" ip netns exec "$NETNS_RECEIVER" "$@" &
  _netns_wait $!
}

_netns_wait() {
  local rc=0
  wait "$1" || rc=$?
  return "$rc"
}

# Background variants; every process inside our namespaces is killed at teardown anyway.
# The command itself (not a subshell around it) is the background job, so NETNS_BG_PID is
# timeout's pid and signals sent to it (SIGINT to stop tcpdump) reach the command.
netns_bg_sender() {
  timeout --kill-after=5 "$NETNS_CMD_TIMEOUT" ip netns exec "$NETNS_SENDER" "$@" &
  NETNS_BG_PID=$!
}

netns_bg_receiver() {
  timeout --kill-after=5 "$NETNS_CMD_TIMEOUT" ip netns exec "$NETNS_RECEIVER" "$@" &
  NETNS_BG_PID=$!
}

# Kills the processes still inside namespace $1 (only ours: the namespace is ours).
_netns_kill_inside() {
  local ns=$1 pids i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] && return 0
    if [ "$i" -lt 5 ]; then
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
    else
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
    sleep 0.2
  done
}

netns_down() {
  [ "$_netns_torn_down" = 1 ] && return 0
  _netns_torn_down=1
  set +e
  local i
  for ((i = ${#_netns_cleanups[@]} - 1; i >= 0; i--)); do
    eval "${_netns_cleanups[i]}"
  done
  _netns_cleanups=()
  if [ -n "$_netns_watchdog_pid" ]; then
    pkill -TERM -P "$_netns_watchdog_pid" 2>/dev/null
    kill "$_netns_watchdog_pid" 2>/dev/null
    wait "$_netns_watchdog_pid" 2>/dev/null
    _netns_watchdog_pid=""
  fi
  local ns
  for ns in "$NETNS_SENDER" "$NETNS_RECEIVER"; do
    [ -n "$ns" ] || continue
    _netns_kill_inside "$ns"
    # Deleting a namespace destroys its end of the veth, and with it the peer.
    ip netns del "$ns" 2>/dev/null
  done
  [ -n "$NETNS_SENDER" ] && netns_log "down: $NETNS_SENDER $NETNS_RECEIVER removed"
  return 0
}
