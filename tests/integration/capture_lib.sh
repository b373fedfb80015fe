# shellcheck shell=bash
# Real capture clients in the receiver namespace of netns.sh: tcpdump writing a pcap, and a
# joiner holding IGMP memberships. Source after netns.sh and call after netns_up.
#
#   capture_start_tcpdump PCAP LOG   # tcpdump -w PCAP in the receiver ns; returns once listening
#   capture_join GROUP...            # joins the groups on $NETNS_RECEIVER_ADDR; returns once joined
#   capture_wait_quiet PCAP          # waits until PCAP stops growing (bounded)
#   capture_stop_tcpdump LOG         # SIGINT, wait; sets CAPTURE_PACKETS and CAPTURE_KERNEL_DROPS
# Functions print "FAIL: ..." and return 1 on failure.

CAPTURE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CAPTURE_TCPDUMP_PID=""
CAPTURE_PACKETS=""
CAPTURE_KERNEL_DROPS=""
: "${CAPTURE_BUFFER_KIB:=65536}" # tcpdump -B: kernel capture buffer, KiB

# Polls `test_cmd` every 0.1 s for at most `seconds`; 0 when it succeeded.
capture_poll() {
  local seconds=$1 i
  shift
  for ((i = 0; i < seconds * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

_capture_listening() { grep -q "listening on" "$1" 2>/dev/null || ! kill -0 "$2" 2>/dev/null; }

capture_start_tcpdump() {
  local pcap=$1 log=$2
  # -B: kernel buffer in KiB (64 MiB by default); -U/--immediate-mode: every packet reaches
  # the file at once, so nothing waits in a half-filled block when tcpdump is stopped.
  # -Z root: Debian's tcpdump otherwise drops to user tcpdump, who may not write here.
  # The file name ends in .pcap: AppArmor's tcpdump profile allows writing such files.
  # Nanosecond timestamps in the file, as rocecap's own pcap output has.
  netns_bg_receiver tcpdump -i "$NETNS_RECEIVER_IF" -w "$pcap" -B "$CAPTURE_BUFFER_KIB" \
    -U --immediate-mode --time-stamp-precision=nano -n -Z root 'udp or igmp' 2>"$log"
  CAPTURE_TCPDUMP_PID=$NETNS_BG_PID
  if ! capture_poll 15 _capture_listening "$log" "$CAPTURE_TCPDUMP_PID" ||
    ! kill -0 "$CAPTURE_TCPDUMP_PID" 2>/dev/null; then
    echo "FAIL: tcpdump did not start listening on $NETNS_RECEIVER_IF:" >&2
    cat "$log" >&2
    return 1
  fi
}

capture_join() {
  local log
  log=$(mktemp)
  netns_bg_receiver python3 "$CAPTURE_LIB_DIR/mcast_join.py" --max-seconds "$NETNS_CMD_TIMEOUT" \
    "$NETNS_RECEIVER_ADDR" "$@" >"$log" 2>&1
  local pid=$NETNS_BG_PID
  if ! capture_poll 15 grep -q '^joined' "$log"; then
    echo "FAIL: could not join $* on $NETNS_RECEIVER_ADDR:" >&2
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  netns_on_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
}

_capture_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

capture_wait_quiet() {
  local pcap=$1 last=-1 now i
  for ((i = 0; i < 150; i++)); do
    now=$(_capture_size "$pcap")
    [ "$now" = "$last" ] && return 0
    last=$now
    sleep 0.5
  done
  echo "capture: $pcap still growing after 75 s; stopping anyway" >&2
}

capture_stop_tcpdump() {
  local log=$1
  kill -INT "$CAPTURE_TCPDUMP_PID" 2>/dev/null || true
  if ! capture_poll 20 _capture_gone "$CAPTURE_TCPDUMP_PID"; then
    echo "FAIL: tcpdump did not stop within 20 s of SIGINT" >&2
    return 1
  fi
  wait "$CAPTURE_TCPDUMP_PID" 2>/dev/null || true
  CAPTURE_PACKETS=$(sed -n 's/^\([0-9]*\) packets\{0,1\} captured$/\1/p' "$log")
  CAPTURE_KERNEL_DROPS=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel$/\1/p' "$log")
  if [ -z "$CAPTURE_PACKETS" ] || [ -z "$CAPTURE_KERNEL_DROPS" ]; then
    echo "FAIL: tcpdump printed no capture statistics:" >&2
    cat "$log" >&2
    return 1
  fi
}

_capture_gone() { ! kill -0 "$1" 2>/dev/null; }
