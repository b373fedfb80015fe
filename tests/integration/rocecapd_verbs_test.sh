#!/usr/bin/env bash
# Integration: rocecapd with capture.backend verbs, through softverbs (a drop-in libibverbs.so.1
# over AF_PACKET) on the receiver's veth, with real multicast from `rocecap gen`.
#
# usage: rocecapd_verbs_test.sh MODE ROCECAPD ROCECAP SOFTVERBS_LIB_DIR [FRAMES [RATE]]
#   full      (busy polling) rocecapd stops by itself after exactly the datagrams sent; raw and
#             codifhdr byte-identical to the expected streams, manifest counts equal to the
#             generator's summary (run_check.py, rocecap verify when built), pcap read by tshark.
#   event     the same in poll_mode event (completion channel).
#   trap      full (2000 frames by default) with SOFTVERBS_TRAP=nft: rocecapd's flow rules take
#             the frames from the kernel stack (an nftables ingress drop per rule, as mlx5's
#             steering does): the capture is still byte-exact, the receiver's kernel saw none of
#             the datagrams (IpExt InMcastPkts), and the nft table is gone when rocecapd exits.
#   twodev    two softverbs devices on two veths, 2 groups x 3 antennas each; each link also
#             carries decoy traffic for the other link's groups: every stream byte-identical to
#             its own link's generator (no cross-talk between devices).
#             (Both on MTU 1500 veths with max_frame 1536: at least MTU + 14 + 2 VLAN tags.)
#   (Oversize frames: rocecapd_verbs_recovery_test.sh oversize; each one is a QP recovery.)
#   stall     ring_depth 256; rocecapd's writer thread is frozen (ptrace) for 1.5 s in the
#             traffic: out_of_buffer rises and shows as the manifest's nic_drops, every frame is
#             accounted for (packets + rejected + nic_drops = sent) and the last frame arrives.
#   nocap     without CAP_NET_RAW: a clear error naming it, exit 3, no run directory created.
#   metrics   full (busy polling, 8000 frames per stream: 8 s of traffic) with the metrics
#             endpoint on: scraped twice WHILE the traffic flows (2 s apart), every stream's
#             rocecap_stream_last_packet_timestamp_seconds is set, advances between the scrapes
#             and is within 1.5 s of the scrape, and rocecap_cq_polls_total and
#             rocecap_capture_loop_iterations_total advance: the capture loop publishes the
#             capture-side series during a verbs run, not only at stop. Then as full.
# As root (exits 77 otherwise). KEEP_WORKDIR=1 keeps the files also on success.
# E2E_WITHOUT_TSHARK=1 (for a GPU machine lent without tshark): where tshark is missing, the
# pcap files are left unread by it and the run says so; everything else is checked as usual.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 full|event|trap|twodev|stall|nocap|metrics ROCECAPD ROCECAP SOFTVERBS_LIB_DIR [FRAMES [RATE]]"
mode=${1:?$usage}
ROCECAPD_BIN=${2:?$usage}
ROCECAP=${3:?$usage}
SV_LIB=${4:?$usage}
frames=${5:-6000}
[ "$mode" != trap ] || frames=${5:-2000}
[ "$mode" != metrics ] || frames=${5:-8000}
rate=${6:-1000}
case $mode in full | event | trap | twodev | stall | nocap | metrics) ;; *)
  echo "$usage"
  exit 2
  ;;
esac
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root
[ -e "$SV_LIB/libibverbs.so.1" ] || { echo "FAIL: no softverbs in $SV_LIB"; exit 1; }

e2e_workdir verbs-test

# rocecapd as shipped, with softverbs on the loader path and its device on the receiver veth
# (e2e_softverbs_wrapper); with `real_net` the interfaces' MTUs are the real ones of rocecapd's
# namespace, so capture.max_frame is checked as on hardware.
E2E_BACKEND=verbs
E2E_DEVICE=sv0
E2E_FOREIGN=""  # flow rules deliver only configured (group, port, antenna) streams
E2E_RING_DEPTH=4096

if [ "$mode" = nocap ]; then
  trap _e2e_finish_workdir EXIT # no namespaces in this mode: no netns_down
  WRAP_PREFIX="setpriv --inh-caps=-net_raw --ambient-caps=-net_raw --bounding-set=-net_raw"
  e2e_softverbs_wrapper sv0=lo
  E2E_IFACE=lo E2E_OUT=$work/out
  e2e_config "$work/run.yaml"
  rc=0
  "$ROCECAPD" --config "$work/run.yaml" 2>"$work/rocecapd.log" || rc=$?
  cat "$work/rocecapd.log"
  [ "$rc" = 3 ] || { echo "FAIL: exit $rc without CAP_NET_RAW (expected 3, cannot start)"; exit 1; }
  grep -q "cannot start: capture.backend verbs needs CAP_NET_RAW" "$work/rocecapd.log" ||
    { echo "FAIL: the error does not name CAP_NET_RAW"; exit 1; }
  [ ! -e "$work/out/e2e" ] || { echo "FAIL: the run directory was created before the check"; exit 1; }
  passed=1
  exit 0
fi

# Manifest restricted to one interface's streams, so run_check compares it with that link's
# generator summary alone.
split_manifest() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
src, iface, dst = sys.argv[1:]
m = json.load(open(src))
m["streams"] = [s for s in m["streams"] if s["interface"] == iface]
m["interfaces"] = [i for i in m["interfaces"] if i["name"] == iface]
m["rejected"] = m["interfaces"][0]["rejected"]
json.dump(m, open(dst, "w"))
PY
}

twodev() {
  local a=$NETNS_RECEIVER_IF b=vr2$$ sa=$NETNS_SENDER_IF sb=vs2$$ x
  ip -n "$NETNS_SENDER" link add "$sb" mtu 1500 type veth peer name "$b" mtu 1500 netns "$NETNS_RECEIVER"
  ip -n "$NETNS_SENDER" addr add 192.0.2.201/24 dev "$sb"
  ip -n "$NETNS_RECEIVER" addr add 192.0.2.202/24 dev "$b"
  ip -n "$NETNS_SENDER" link set "$sb" up
  ip -n "$NETNS_RECEIVER" link set "$b" up
  local ga="239.17.0.1:36001,239.17.0.2:36002" gb="239.17.0.3:36003,239.17.0.4:36004"
  for x in a b; do
    E2E_GROUPS=$([ $x = a ] && echo "$ga" || echo "$gb")
    E2E_SEED=$([ $x = a ] && echo 20261121 || echo 777)
    e2e_gen_args "$frames"
    eval "GEN_$x=(\"\${E2E_GEN[@]}\")"
    "$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/reference_$x.pcap" --summary "$work/reference_$x.json" >/dev/null
  done
  local total
  total=$(python3 -c "import json,sys; print(sum(json.load(open(p))['datagrams'] for p in sys.argv[1:]))" \
    "$work/reference_a.json" "$work/reference_b.json")
  local n=0 src
  {
    echo "run: { name: e2e, duration: 120s, packets: $total }"
    echo "capture:"
    echo "  backend: verbs"
    echo "  poll_mode: event"
    echo "  payload_memory: host"
    echo "  ring_depth: 2048"
    echo "  max_frame: 1536"
    echo "  interfaces:"
    echo "    - { name: $a, device: sv0, groups: [${ga//,/, }] }"
    echo "    - { name: $b, device: sv1, groups: [${gb//,/, }] }"
    echo "streams:"
    echo "  format: codif"
    echo "  antennas:"
    for src in ${E2E_SOURCES//,/ }; do n=$((n + 1)); echo "    - { name: ant$n, source: $src }"; done
    echo "output: { directory: $work/out, formats: [raw, codifhdr, pcap] }"
    echo "metrics: { enabled: false }"
  } >"$work/run.yaml"
  e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
  local pid=$E2E_PID
  netns_on_exit "kill $pid 2>/dev/null"
  # Each link: its own streams, plus a decoy (other seed, other station) for the other link's
  # groups, which no QP of this link's device may receive.
  netns_exec_sender "$ROCECAP" "${GEN_a[@]}" --interface "$sa" --rate "$rate" --summary "$work/sent_a.json" >/dev/null &
  local g1=$!
  netns_exec_sender "$ROCECAP" "${GEN_b[@]}" --interface "$sb" --rate "$rate" --summary "$work/sent_b.json" >/dev/null &
  local g2=$!
  netns_exec_sender "$ROCECAP" gen --groups "$gb" --sources "$E2E_SOURCES" --frames 500 --payload-bytes "$E2E_PAYLOAD" \
    --station XX --seed 5 --interface "$sa" --rate 500 >/dev/null
  netns_exec_sender "$ROCECAP" gen --groups "$ga" --sources "$E2E_SOURCES" --frames 500 --payload-bytes "$E2E_PAYLOAD" \
    --station XX --seed 6 --interface "$sb" --rate 500 >/dev/null
  wait "$g1" && wait "$g2" || { echo "FAIL: rocecap gen failed"; exit 1; }
  e2e_wait_exit "$pid" 30 || { tail -20 "$work/rocecapd.log"; echo "FAIL: rocecapd did not see all $total datagrams"; exit 1; }
  [ "$E2E_RC" = 0 ] || { cat "$work/rocecapd.log"; echo "FAIL: rocecapd exited $E2E_RC"; exit 1; }
  for x in a b; do
    local ifn=$([ $x = a ] && echo "$a" || echo "$b")
    split_manifest "$work/out/e2e/manifest.json" "$ifn" "$work/out/e2e/manifest_$x.json"
    python3 "$here/run_check.py" expect --summary "$work/reference_$x.json" \
      --reference-pcap "$work/reference_$x.pcap" --manifest "$work/out/e2e/manifest_$x.json"
  done
}

# NIC drops visible in the manifest (equal to the device's out_of_buffer counter), no frame
# counted twice, and capture recovered: every stream's last frame (sent after the stall) arrived.
# Not asserted: packets + rejected + nic_drops = sent. softverbs' AF_PACKET ring (8 blocks,
# 1 ms retire) also loses frames, uncounted, when its engine thread is starved on a loaded host.
stall_check() {
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys
m, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
total, oob = int(sys.argv[3]), int(open(sys.argv[4]).read())
nic = sum(i["nic_drops"] for i in m["interfaces"])
packets = sum(s["packets"] for s in m["streams"])
rejected = sum(m["rejected"].values())
print(f"stall: {nic} NIC drops (out_of_buffer {oob}), {packets} packets, {rejected} rejected, "
      f"{total} sent")
fails = []
if nic == 0:
    fails.append("nic_drops is 0 although the writer was stalled with a 256-slot ring")
if nic != oob:
    fails.append(f"manifest nic_drops {nic} != out_of_buffer {oob}")
if packets + rejected + nic > total:
    fails.append(f"packets {packets} + rejected {rejected} + nic_drops {nic} > sent {total}")
last = {(s["group"], s["port"], s["source"]): s["last_frame"]["index"] for s in m["streams"]}
for s in ref["streams"]:
    want = s["first_index"] + s["frames"] - 1
    while want in s["dropped"] or want in s["bad_sync"] or want in s["truncated"]:
        want -= 1
    got = last.get((s["group"], s["port"], s["source"]))
    if got != want:
        fails.append(f"{s['group']} {s['source']}: last frame {got}, sent {want}: not recovered")
if m["state"] != "stopped":
    fails.append(f"state {m['state']}")
if fails:
    sys.exit("FAIL: " + "; ".join(fails))
PY
  python3 "$here/run_check.py" consistent --manifest "$1" --frame-bytes "$E2E_FRAME_BYTES"
}

NETNS_CMD_TIMEOUT=200
NETNS_MAX_SECONDS=280
[ "$mode" != twodev ] || NETNS_MTU=1500
netns_up
[ "$mode" != trap ] || WRAP_PREFIX=SOFTVERBS_TRAP=nft
if [ "$mode" = twodev ]; then
  e2e_softverbs_wrapper "sv0=$NETNS_RECEIVER_IF,sv1=vr2$$" real_net
else
  e2e_softverbs_wrapper "sv0=$NETNS_RECEIVER_IF" real_net
fi
# full polls busily (the default); the other modes sleep on the completion channel.
case $mode in full | trap | metrics) E2E_POLL_MODE=busy_poll ;; *) E2E_POLL_MODE=event ;; esac

if [ "$mode" = twodev ]; then
  twodev
  passed=1
  exit 0
fi

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/reference.pcap" --summary "$work/reference.json" >/dev/null
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$work/reference.json")

E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_PACKETS=$total
if [ "$mode" = stall ]; then
  E2E_PACKETS="" E2E_RING_DEPTH=256
fi
e2e_config "$work/run.yaml"
metrics_port=9464  # inside the receiver namespace, where nothing else listens
[ "$mode" != metrics ] ||
  sed -i "s/^  enabled: false$/  listen: 127.0.0.1:$metrics_port/" "$work/run.yaml"
# With E2E_GPU_CONSUMER (rocecap_gpu_power, tests/consumers/rocecapd_consumers_gpu_test.sh): a
# consumer reads every stream in GPU memory through the consumer socket; capture starts once it
# is attached (wait_for), and the frame data starts in the payload slot (header_split 106).
if [ -n "${E2E_GPU_CONSUMER:-}" ]; then
  sed -i "s/^capture:$/capture:\n  header_split: 106/" "$work/run.yaml"
  printf 'consumers:\n  socket: %s\n  wait_for: 1\n  wait_time: 30s\n' "$work/consumers.sock" >>"$work/run.yaml"
fi
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
rocecapd=$E2E_PID
netns_on_exit "kill $rocecapd 2>/dev/null"
if [ -n "${E2E_GPU_CONSUMER:-}" ]; then
  # A unix socket path is reached from any network namespace: the consumer runs here.
  timeout 120 "$E2E_GPU_CONSUMER" --socket "$work/consumers.sock" --nchan 2 --nbits 4 --complex \
    >"$work/gpu_power.txt" 2>"$work/gpu_power.err" &
  gpu_consumer=$!
  netns_on_exit "kill $gpu_consumer 2>/dev/null"
  for _ in $(seq 300); do
    grep -q "consumers: 1 attached; capture starts" "$work/rocecapd.log" && break
    sleep 0.1
  done
  grep -q "consumers: 1 attached; capture starts" "$work/rocecapd.log" ||
    { cat "$work/gpu_power.err"; echo "FAIL: the GPU consumer did not attach"; exit 1; }
fi
grep -q "RDMA device sv0" "$work/rocecapd.log" || { cat "$work/rocecapd.log"; echo "FAIL: not on verbs"; exit 1; }

# Multicast datagrams the receiver's kernel IP stack took in; softverbs' nft tables there.
mcast_in() {
  ip netns exec "$NETNS_RECEIVER" awk '/^IpExt:/ { if (!c) { for (i = 1; i <= NF; i++)
    if ($i == "InMcastPkts") c = i } else print $c }' /proc/net/netstat
}
sv_tables() { ip netns exec "$NETNS_RECEIVER" nft list tables | grep -c softverbs_ || true; }
mcast_before=$(mcast_in)
if [ "$mode" = trap ] && [ "$(sv_tables)" != 1 ]; then
  ip netns exec "$NETNS_RECEIVER" nft list ruleset
  echo "FAIL: SOFTVERBS_TRAP=nft: expected one softverbs nft table in the receiver namespace"
  exit 1
fi

# The metrics text of rocecapd in the receiver namespace into each file given, 2 s apart (the
# scrape's wall-clock time, Unix seconds, as its first line). One process for all: on a loaded
# 2-core host starting ip netns exec and python3 took 3 s, and a second start let the traffic
# end before the second scrape.
scrape() {
  ip netns exec "$NETNS_RECEIVER" python3 - "$metrics_port" "$@" <<'PY'
import sys, time, urllib.request
port, outs = sys.argv[1], sys.argv[2:]
for i, out in enumerate(outs):
    if i:
        time.sleep(2)
    t = time.time()
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    open(out, "w").write(f"{t}\n{text}")
PY
}

# Both scrapes taken while the generator still sends (its summary, written at its end, is not
# there yet at the second): the capture-side series advance.
metrics_check() {
  python3 - "$1" "$2" <<'PY'
import re, sys
def load(path):
    lines = open(path).read().splitlines()
    t, series = float(lines[0]), {}
    for line in lines[1:]:
        m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line)
        if m:
            series[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return t, series
(t1, a), (t2, b) = load(sys.argv[1]), load(sys.argv[2])
fails = []
def pick(s, name):
    return {k[1]: v for k, v in s.items() if k[0] == name}
last1, last2 = pick(a, "rocecap_stream_last_packet_timestamp_seconds"), pick(b, "rocecap_stream_last_packet_timestamp_seconds")
if len(last2) != 6:
    fails.append(f"{len(last2)} streams with rocecap_stream_last_packet_timestamp_seconds, expected 6")
for labels, v2 in sorted(last2.items()):
    v1 = last1.get(labels, 0.0)
    print(f"last packet {labels}: {v1:.3f} -> {v2:.3f} (scrapes at {t1:.3f}, {t2:.3f})")
    if v1 <= 0:
        fails.append(f"{labels}: last packet time {v1} at the first scrape, during traffic")
    elif v2 <= v1:
        fails.append(f"{labels}: last packet time did not advance ({v1} -> {v2})")
    elif abs(t2 - v2) > 1.5:
        fails.append(f"{labels}: last packet time {v2} is {t2 - v2:.2f} s from the scrape")
for name in ("rocecap_cq_polls_total", "rocecap_capture_loop_iterations_total"):
    s1, s2 = pick(a, name), pick(b, name)
    if not s2:
        fails.append(f"{name} missing")
    for labels, v2 in s2.items():
        v1 = s1.get(labels, 0.0)
        print(f"{name}{labels}: {v1:.0f} -> {v2:.0f}")
        if not v2 > v1 > 0:
            fails.append(f"{name}{labels}: {v1} -> {v2}, not advancing during traffic")
if fails:
    sys.exit("FAIL: " + "; ".join(fails))
print("metrics advance during the verbs run")
PY
}

helpers=()
if [ "$mode" = metrics ]; then
  (sleep 2.5 && scrape "$work/scrape1.txt" "$work/scrape2.txt" && [ ! -e "$work/sent.json" ] ||
    { echo "FAIL: a scrape failed, or the traffic had ended at the second scrape"; exit 1; }) &
  helpers+=($!)
fi
if [ "$mode" = stall ]; then
  daemon=$(pgrep -P "$rocecapd")
  (sleep 2 && python3 "$here/freeze_thread.py" "$daemon" rc-writer 1.5) &
  helpers+=($!)
fi
netns_exec_sender "$ROCECAP" "${E2E_GEN[@]}" --interface "$NETNS_SENDER_IF" --rate "$rate" \
  --summary "$work/sent.json" >/dev/null 2>"$work/gen.err" ||
  { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
for p in "${helpers[@]}"; do wait "$p" || { echo "FAIL: helper $p failed"; exit 1; }; done
[ "$mode" != metrics ] || metrics_check "$work/scrape1.txt" "$work/scrape2.txt"
if [ "$mode" = stall ]; then
  sleep 2
  kill -TERM "$rocecapd"
  e2e_wait_exit "$rocecapd" 30
  stall_check "$work/out/e2e/manifest.json" "$work/reference.json" "$total" \
    "$work/sysfs/class/infiniband/sv0/ports/1/hw_counters/out_of_buffer"
  passed=1
  exit 0
fi
if ! e2e_wait_exit "$rocecapd" 30; then
  kill -TERM "$rocecapd"
  e2e_wait_exit "$rocecapd" 30 || true
  echo "FAIL: rocecapd had not seen all $total datagrams 30 s after the traffic ended:"
  tail -20 "$work/rocecapd.log"
  exit 1
fi
echo "rocecapd exited $E2E_RC: $(grep -o 'stopping: [^;]*' "$work/rocecapd.log" || true)"
[ "$E2E_RC" = 0 ] || { cat "$work/rocecapd.log"; echo "FAIL: rocecapd exited $E2E_RC"; exit 1; }
manifest=$work/out/e2e/manifest.json
python3 "$here/run_check.py" expect --summary "$work/reference.json" \
  --reference-pcap "$work/reference.pcap" --manifest "$manifest"
# GPU machines lent for a short device run may lack tshark (and its 160 MB of libraries): there,
# and only when asked, the pcap files go unread by tshark and the run says so.
if [ "${E2E_WITHOUT_TSHARK:-0}" = 1 ] && ! command -v tshark >/dev/null; then
  echo "NOTE: pcap files not read by tshark (E2E_WITHOUT_TSHARK=1 and no tshark here)"
else
  python3 "$here/pcap_check.py" --manifest "$manifest" --summary "$work/reference.json"
fi
e2e_verify "$manifest" "$work/reference.json"
if [ -n "${E2E_GPU_CONSUMER:-}" ]; then
  rc=0
  wait "$gpu_consumer" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/gpu_power.err"; echo "FAIL: rocecap_gpu_power exited $rc"; exit 1; }
  /usr/bin/python3 "$here/../consumers/gpu_power_check.py" "$work/gpu_power.txt" "$work/out/e2e" \
    "$E2E_FRAME_BYTES" || exit 1
fi
if [ "$mode" = trap ]; then
  seen=$(($(mcast_in) - mcast_before))
  echo "trap: the receiver's kernel took in $seen multicast datagrams of the $total sent"
  [ "$seen" = 0 ] || { echo "FAIL: the kernel saw frames that rocecapd's flow rules trap"; exit 1; }
  [ "$(sv_tables)" = 0 ] || { echo "FAIL: softverbs' nft table outlived rocecapd"; exit 1; }
fi
passed=1
