#!/usr/bin/env bash
# Integration: `rocecap gen` multicast captured by a real client.
#
# In a sender namespace, `rocecap gen` sends 3 antennas x 2 groups of CODIF frames with every
# impairment (seeded) over a veth; in the receiver namespace a joiner holds the IGMP
# memberships and tcpdump writes a pcap. check_capture then requires the capture to equal the
# generator's own summary: every datagram, header field and payload byte, and the IGMP joins.
#
# usage: capture_tcpdump_test.sh ROCECAP CHECK_CAPTURE [GEN_FRAME_OPTIONS...]
#   (as root; exits 77 otherwise). GEN_FRAME_OPTIONS replace the default CODIF frame options
#   (layout, sizes, ids, time) given to `rocecap gen`.
# KEEP_WORKDIR=1 keeps the pcap and logs also on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rocecap=${1:?usage: $0 ROCECAP CHECK_CAPTURE}
check_capture=${2:?usage: $0 ROCECAP CHECK_CAPTURE}
shift 2
frame_options=("$@")
if [ ${#frame_options[@]} -eq 0 ]; then
  frame_options=(--nchan 4 --nbits 4 --complex --epoch 52 --start-seconds 1000 --station AT
    --thread-id 100 --group-id 7)
fi
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=capture_lib.sh
source "$here/capture_lib.sh"
netns_require_root
for tool in tcpdump python3; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed (scripts/install-deps.sh)"; exit 1; }
done

work=$(mktemp -d /tmp/rocecap-capture-test.XXXXXX)
passed=0
finish() {
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work (pcap, summary, logs)" >&2
  fi
}
NETNS_CMD_TIMEOUT=120
NETNS_MAX_SECONDS=240 # below the ctest TIMEOUT (300): teardown always gets to run
netns_up
netns_on_exit finish

groups=239.17.0.1:36001,239.17.0.2:36002
capture_start_tcpdump "$work/capture.pcap" "$work/tcpdump.log"
capture_join 239.17.0.1 239.17.0.2

echo "gen: 3 antennas x 2 groups, 3000 frames per stream at 1000 frames/s per stream, ${frame_options[*]}"
netns_exec_sender "$rocecap" gen --groups "$groups" --sources "${NETNS_ANTENNA_ADDRS// /,}" \
  --frames 3000 --rate 1000 --interface "$NETNS_SENDER_IF" --seed 20261121 \
  "${frame_options[@]}" \
  --drop 0.004 --drop-every 1000 --swap 0.004 --duplicate 0.004 --bad-sync 0.004 \
  --truncate 0.004 --invalid 0.004 --foreign "$NETNS_FOREIGN_ADDR" --foreign-prob 0.004 \
  --summary "$work/summary.json" >"$work/gen.out" 2>"$work/gen.err" || {
  echo "FAIL: rocecap gen exited $?:"
  cat "$work/gen.err"
  exit 1
}

capture_wait_quiet "$work/capture.pcap"
capture_stop_tcpdump "$work/tcpdump.log"
echo "tcpdump: $CAPTURE_PACKETS packets captured, $CAPTURE_KERNEL_DROPS dropped by kernel"
if [ "$CAPTURE_KERNEL_DROPS" != 0 ]; then
  echo "FAIL: tcpdump reports $CAPTURE_KERNEL_DROPS packets dropped by the kernel: the capture is incomplete"
  exit 1
fi

"$check_capture" --pcap "$work/capture.pcap" --summary "$work/summary.json"

# The same capture against a summary that claims one more frame was dropped must fail, naming
# that frame: the check above could not have passed by accident.
victim=$(python3 - "$work/summary.json" "$work/tampered.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
st = s["streams"][0]
taken = set(st["dropped"] + st["duplicated"] + st["bad_sync"] + st["truncated"] + st["invalid"]
            + st["swapped"] + [i + 1 for i in st["swapped"]])
victim = next(i for i in range(st["first_index"], st["first_index"] + st["frames"]) if i not in taken)
st["dropped"].append(victim)
st["datagrams"] -= 1
s["datagrams"] -= 1
json.dump(s, open(sys.argv[2], "w"))
print(victim)
PY
)
set +e
"$check_capture" --pcap "$work/capture.pcap" --summary "$work/tampered.json" >"$work/tampered.out"
rc=$?
set -e
if [ "$rc" != 1 ] || ! grep -q "does not list: $victim(intact)" "$work/tampered.out"; then
  echo "FAIL: check_capture accepted a summary with frame $victim wrongly marked dropped (exit $rc):"
  cat "$work/tampered.out"
  exit 1
fi
echo "check_capture rejects a tampered summary (frame $victim): ok"
passed=1
