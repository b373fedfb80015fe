#!/usr/bin/env bash
# shellcheck disable=SC2034  # NETNS_* and E2E_* are read by netns.sh and e2e_lib.sh
# Integration: rocecapd (backend pcap, live) joins and captures 64 multicast groups on one
# interface. Linux lets one socket hold at most net.ipv4.igmp_max_memberships groups (20 by
# default, also in a new network namespace); beyond that IP_ADD_MEMBERSHIP fails with ENOBUFS,
# so the groups must be spread over several sockets (capture/net/multicast_join.cpp).
#
# `rocecap gen` sends a few clean CODIF frames to each of 64 groups from one antenna; rocecapd
# stops after exactly that many datagrams. Checked: every group is in the receiver's
# /proc/net/igmp while capturing, the manifest counts of all 64 streams equal the generator's
# summary and every stream's raw/codifhdr file is byte-identical to the expected stream
# (run_check.py), and `rocecap verify` accepts the run.
# usage: rocecapd_many_groups_test.sh ROCECAPD ROCECAP [GROUPS [FRAMES_PER_STREAM]]
# As root (exits 77 otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP [GROUPS [FRAMES]]}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP [GROUPS [FRAMES]]}
groups=${3:-64}
frames=${4:-20}
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root

work=$(mktemp -d /tmp/rocecap-many-groups.XXXXXX)
passed=0
finish() {
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
NETNS_CMD_TIMEOUT=100
NETNS_MAX_SECONDS=150 # below the ctest TIMEOUT
NETNS_ANTENNA_ADDRS=192.0.2.11
netns_up
netns_on_exit finish

# 239.17.1.0:37000 ... one port per group, so every group is its own stream.
E2E_GROUPS=$(python3 -c "import sys; n=int(sys.argv[1]); print(','.join(f'239.17.{1 + i // 256}.{i % 256}:{37000 + i}' for i in range(n)))" "$groups")
E2E_SOURCES=192.0.2.11
E2E_FOREIGN=""
E2E_GEN=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames"
  --payload-bytes "$E2E_PAYLOAD" --nchan 2 --nbits 4 --complex --epoch 52 --start-seconds 1000
  --station AT --thread-id 100 --group-id 7 --seed "$E2E_SEED")
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/reference.pcap" --summary "$work/reference.json" >/dev/null
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$work/reference.json")
[ "$total" = $((groups * frames)) ] || { echo "FAIL: the generator plans $total datagrams, not $((groups * frames))"; exit 1; }

E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_PACKETS=$total E2E_FORMATS="raw, codifhdr"
e2e_config "$work/run.yaml"
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
netns_on_exit "kill $E2E_PID 2>/dev/null"

# Every group is held on the receiver's veth (printed in network byte order, as hex words).
joined=$(netns_exec_receiver cat /proc/net/igmp | python3 -c '
import socket, struct, sys
iface, groups = sys.argv[1], sys.argv[2].split(",")
want = {"%08X" % struct.unpack("=I", socket.inet_aton(g.split(":")[0]))[0] for g in groups}
dev, held = None, set()
for line in sys.stdin:
    if line[:1] not in ("\t", " "):
        f = line.split()
        dev = f[1].rstrip(":") if len(f) > 1 else None
    elif dev == iface:
        held.add(line.split()[0])
print(len(want & held))' "$NETNS_RECEIVER_IF" "$E2E_GROUPS")
echo "receiver holds $joined of $groups groups on $NETNS_RECEIVER_IF"
[ "$joined" = "$groups" ] || { echo "FAIL: only $joined of $groups groups joined"; exit 1; }

netns_exec_sender "$ROCECAP" "${E2E_GEN[@]}" --interface "$NETNS_SENDER_IF" --rate 2000 \
  --summary "$work/sent.json" >/dev/null 2>"$work/gen.err" || {
  echo "FAIL: rocecap gen failed:"
  cat "$work/gen.err"
  exit 1
}
if ! e2e_wait_exit "$E2E_PID" 30; then
  echo "FAIL: rocecapd had not seen all $total datagrams 30 s after the traffic ended:"
  tail -20 "$work/rocecapd.log"
  exit 1
fi
[ "$E2E_RC" = 0 ] || { echo "FAIL: rocecapd exited $E2E_RC:"; cat "$work/rocecapd.log"; exit 1; }

manifest=$work/out/e2e/manifest.json
streams=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['streams']))" "$manifest")
[ "$streams" = "$groups" ] || { echo "FAIL: the manifest has $streams streams, not $groups"; exit 1; }
python3 "$here/run_check.py" expect --summary "$work/reference.json" \
  --reference-pcap "$work/reference.pcap" --manifest "$manifest"
e2e_verify "$manifest" "$work/reference.json"
echo "ok: $groups groups on one interface, $total datagrams, every stream's files and counts"
passed=1
