#!/usr/bin/env bash
# rocecap demo, the README's first command: a real capture by rocecapd of generated CODIF
# multicast, checked against what was sent.
#
# As root on a fresh Debian 12 machine (network namespaces need root):
#   bash scripts/demo.sh
# It installs the dependencies (scripts/install-deps.sh), builds rocecapd and rocecap into
# build/demo, then builds two network namespaces joined by a veth pair (tests/integration/
# netns.sh). In the receiver namespace rocecapd runs a run file written here (backend pcap on the
# veth: it joins the groups, so the kernel sends IGMP reports, and captures through libpcap);
# in the sender namespace `rocecap gen` multicasts 3 antennas x 2 groups of CODIF frames
# (8298-byte packets, a few seeded impairments). rocecapd is stopped with SIGTERM, as systemd
# would, and its raw, codifhdr and pcap files and manifest are checked against the
# generator's summary. Exits non-zero on any failure; the namespaces are always removed and
# traffic never leaves them.
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

step "1/7 dependencies (scripts/install-deps.sh)"
bash "$root/scripts/install-deps.sh"

step "2/7 build (rocecapd, rocecap) in $build_dir"
mkdir -p "$(dirname "$build_dir")"
ROCECAP_BUILD_TARGETS="rocecapd rocecap" bash "$root/scripts/build.sh" "$build_dir" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCECAP_BUILD_BENCH=OFF
rocecapd=$build_dir/daemon/rocecapd
rocecap=$build_dir/tools/rocecap
for bin in "$rocecapd" "$rocecap"; do [ -x "$bin" ] || die "$bin was not built"; done

step "3/7 network namespaces"
# shellcheck source=../tests/integration/netns.sh
source "$root/tests/integration/netns.sh"
NETNS_CMD_TIMEOUT=$((frames / rate + 120))
NETNS_MAX_SECONDS=$((NETNS_CMD_TIMEOUT + 120))
netns_up
echo "sender $NETNS_SENDER ($NETNS_SENDER_IF: antennas $NETNS_ANTENNA_ADDRS, foreign $NETNS_FOREIGN_ADDR)"
echo "receiver $NETNS_RECEIVER ($NETNS_RECEIVER_IF: $NETNS_RECEIVER_ADDR), veth MTU $NETNS_MTU"

out=$run_dir/out
summary=$run_dir/gen-summary.json
rm -rf "$out" "$summary" "$run_dir"/*.log "$run_dir"/*.txt
read -r a1 a2 a3 <<<"$NETNS_ANTENNA_ADDRS"
cat >"$run_dir/run.yaml" <<YAML
# Written by scripts/demo.sh: capture the demo's 6 streams on the receiver veth.
run:
  name: demo
capture:
  backend: pcap
  ring_depth: 4096
  interfaces:
    - name: $NETNS_RECEIVER_IF
      groups: [239.17.0.1:36001, 239.17.0.2:36002]
streams:
  format: codif
  antennas:
    - { name: ak01, source: $a1 }
    - { name: ak02, source: $a2 }
    - { name: ak03, source: $a3 }
output:
  directory: $out
  formats: [raw, codifhdr, pcap]
  rotate: 1GiB
metrics:
  enabled: false
YAML

step "4/7 rocecapd --check-config, then rocecapd in the receiver namespace"
"$rocecapd" --check-config "$run_dir/run.yaml" || die "the run file does not check"
netns_bg_receiver "$rocecapd" --config "$run_dir/run.yaml" 2>"$run_dir/rocecapd.log"
daemon_pid=$NETNS_BG_PID
for _ in $(seq 100); do
  grep -q "capturing" "$run_dir/rocecapd.log" && break
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q "capturing" "$run_dir/rocecapd.log" || {
  cat "$run_dir/rocecapd.log" >&2
  die "rocecapd did not start"
}
grep "capturing" "$run_dir/rocecapd.log"

step "5/7 rocecap gen: 3 antennas x 2 groups, $frames frames per stream at $rate frames/s each"
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

step "6/7 stop rocecapd (SIGTERM, as systemctl stop does)"
sleep 1
# $daemon_pid is the timeout(1) wrapper; signal rocecapd itself (its child), so the exit status
# that comes back is rocecapd's own.
pkill -TERM -P "$daemon_pid"
rc=0
wait "$daemon_pid" || rc=$?
tail -n 12 "$run_dir/rocecapd.log"
[ "$rc" = 0 ] || die "rocecapd exited with $rc (log: $run_dir/rocecapd.log)"
netns_down
manifest=$out/demo/manifest.json

step "7/7 check the files against the generator's summary"
if "$rocecap" --help 2>/dev/null | grep -qE '^ +verify( |$)'; then
  "$rocecap" verify --manifest "$manifest" --expect "$summary" | tee "$run_dir/verify.txt" ||
    die "the files do not match what was sent (see above)"
else
  echo "(rocecap verify is not in this build: comparing manifest counts only)"
  python3 - "$manifest" "$summary" <<'PY' | tee "$run_dir/verify.txt"
import json, sys
m, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
sent = {(x["group"], x["port"], x["source"]): x for x in s["streams"]}
bad = 0
for st in m["streams"]:
    g = sent[(st["group"], st["port"], st["source"])]
    placed = st["packets"] - st["duplicate"] - st["late_dropped"]
    expect = g["frames"] - len(g["dropped"]) - len(g["bad_sync"]) - len(g["truncated"])
    ok = placed == expect and st["duplicate"] == len(g["duplicated"])
    bad += not ok
    print(f"{st['group']}:{st['port']} {st['antenna']}: {placed} frames placed (expected {expect}), "
          f"{st['lost']} lost, {st['duplicate']} duplicate, {st['late']} late, "
          f"{st['invalid']} invalid: {'OK' if ok else 'MISMATCH'}")
print("rejected:", m["rejected"])
sys.exit(1 if bad else 0)
PY
fi

step "done"
echo "run file: $run_dir/run.yaml"
echo "files:    $out/demo/"
ls -l "$out/demo/"
echo "manifest: $manifest"
echo "log:      $run_dir/rocecapd.log"
echo "read it:  tshark -r $out/demo/$NETNS_RECEIVER_IF.0000.pcap -c 5; build/demo/tools/rocecap inspect $out/demo/239.17.0.1_36001_ak01.0000.codif"
