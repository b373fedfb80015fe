#!/usr/bin/env bash
# rocecap demo: a real capture of generated CODIF multicast, verified byte for byte.
#
# As root on a fresh Debian 12 machine (network namespaces need root):
#   sudo scripts/demo.sh
# It installs the dependencies (scripts/install-deps.sh), builds what it needs into build/demo,
# then builds two network namespaces joined by a veth pair (tests/integration/netns.sh): in the
# sender one `rocecap gen` multicasts 3 antennas x 2 groups of CODIF frames (8298-byte
# packets, a few seeded impairments); in the receiver one a client joins the groups (IGMP) and
# tcpdump captures them. The capture stays in the run directory; check_capture compares it with
# the generator's summary (every datagram, header field and payload byte), and
# `rocecap inspect` describes it. Exits non-zero on any failure; the namespaces are always
# removed. Traffic never leaves the namespaces.
#
# Environment: DEMO_DIR (run directory, default ./demo-run), DEMO_FRAMES (per stream, 20000),
# DEMO_RATE (frames/s per stream, 1000: 50 MB/s in all), DEMO_SEED (1), BUILD_DIR (build/demo).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
frames=${DEMO_FRAMES:-20000}
rate=${DEMO_RATE:-1000}
seed=${DEMO_SEED:-1}
build_dir=${BUILD_DIR:-$root/build/demo}
groups=239.17.0.1:36001,239.17.0.2:36002

step() { printf '\n== %s\n' "$*"; }
die() {
  echo "demo: FAILED: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root: the demo builds network namespaces (sudo $0)"
run_dir=$(mkdir -p "${DEMO_DIR:-./demo-run}" && cd "${DEMO_DIR:-./demo-run}" && pwd)

step "1/6 dependencies (scripts/install-deps.sh)"
bash "$root/scripts/install-deps.sh"

step "2/6 build (rocecap, check_capture) in $build_dir"
mkdir -p "$(dirname "$build_dir")"
ROCECAP_BUILD_TARGETS="rocecap check_capture" bash "$root/scripts/build.sh" "$build_dir" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCECAP_BUILD_BENCH=OFF
rocecap=$build_dir/tools/rocecap
check_capture=$build_dir/tests/integration/check_capture
[ -x "$rocecap" ] || die "$rocecap was not built"
[ -x "$check_capture" ] || die "$check_capture was not built"

step "3/6 network namespaces"
# shellcheck source=../tests/integration/netns.sh
source "$root/tests/integration/netns.sh"
# shellcheck source=../tests/integration/capture_lib.sh
source "$root/tests/integration/capture_lib.sh"
NETNS_CMD_TIMEOUT=$((frames / rate + 120))
NETNS_MAX_SECONDS=$((NETNS_CMD_TIMEOUT + 120))
CAPTURE_BUFFER_KIB=262144 # 256 MiB: tcpdump shares the CPU with the generator here
netns_up
echo "sender $NETNS_SENDER ($NETNS_SENDER_IF: antennas $NETNS_ANTENNA_ADDRS, foreign $NETNS_FOREIGN_ADDR)"
echo "receiver $NETNS_RECEIVER ($NETNS_RECEIVER_IF: $NETNS_RECEIVER_ADDR), veth MTU $NETNS_MTU"

pcap=$run_dir/capture.pcap
summary=$run_dir/gen-summary.json
rm -f "$pcap" "$summary" "$run_dir"/*.log "$run_dir"/*.txt

step "4/6 capture: tcpdump and an IGMP join in the receiver namespace"
capture_start_tcpdump "$pcap" "$run_dir/tcpdump.log" || die "tcpdump did not start"
capture_join 239.17.0.1 239.17.0.2 || die "could not join the groups"
echo "tcpdump listening on $NETNS_RECEIVER_IF; joined 239.17.0.1 239.17.0.2"

step "5/6 rocecap gen: 3 antennas x 2 groups, $frames frames per stream at $rate frames/s each"
netns_exec_sender "$rocecap" gen --groups "$groups" --sources "${NETNS_ANTENNA_ADDRS// /,}" \
  --frames "$frames" --rate "$rate" --interface "$NETNS_SENDER_IF" --payload-bytes 8192 \
  --station AT --seed "$seed" --drop 0.001 --swap 0.001 --duplicate 0.001 --invalid 0.001 \
  --bad-sync 0.0005 --foreign "$NETNS_FOREIGN_ADDR" --foreign-prob 0.0005 \
  --summary "$summary" 2>"$run_dir/gen.log" || {
  cat "$run_dir/gen.log" >&2
  die "rocecap gen failed"
}
python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n = lambda key: sum(len(st[key]) for st in s["streams"])
print(f"sent {s['datagrams']} datagrams ({s['bytes'] / 1e6:.1f} MB of UDP payload) in "
      f"{s['seconds']:.1f} s over {len(s['streams'])} streams; impairments: {n('dropped')} dropped, "
      f"{n('swapped')} swapped pairs, {n('duplicated')} duplicated, {n('invalid')} invalid, "
      f"{n('bad_sync')} bad sync, {sum(len(f['indices']) for f in s['foreign'])} foreign copies")
PY
capture_wait_quiet "$pcap"
capture_stop_tcpdump "$run_dir/tcpdump.log" || die "tcpdump did not stop cleanly"
echo "tcpdump: $CAPTURE_PACKETS packets captured, $CAPTURE_KERNEL_DROPS dropped by kernel"
[ "$CAPTURE_KERNEL_DROPS" = 0 ] ||
  die "tcpdump dropped $CAPTURE_KERNEL_DROPS packets (machine too busy): retry with a lower DEMO_RATE"
netns_down

step "6/6 verify the capture against the generator's summary"
"$check_capture" --pcap "$pcap" --summary "$summary" | tee "$run_dir/check.txt" ||
  die "the capture does not match what was sent (see above)"
# `rocecap inspect` lands separately: use it when this build lists it.
if "$rocecap" --help 2>/dev/null | grep -E '^ +inspect( |$)' >/dev/null; then
  echo
  "$rocecap" inspect "$pcap" | tee "$run_dir/inspect.txt" || die "rocecap inspect failed"
else
  echo "(rocecap inspect is not in this build yet: skipped)"
fi

step "done"
echo "capture:  $pcap ($(du -h "$pcap" | cut -f1), $CAPTURE_PACKETS packets)"
echo "summary:  $summary"
echo "verified: $run_dir/check.txt"
if [ -f "$run_dir/inspect.txt" ]; then echo "inspect:  $run_dir/inspect.txt"; fi
echo "read it:  tshark -r $pcap -c 5"
