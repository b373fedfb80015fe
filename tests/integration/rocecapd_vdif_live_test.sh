#!/usr/bin/env bash
# Integration: rocecapd (backend pcap, live) captures `rocecap gen --format vdif` over a veth
# (doc/vdif.md). Two sources, each one flow carrying VDIF threads 0 and 1 with VTP sequence
# numbers, 1000 frames per second (the run crosses second boundaries), with drops, swaps,
# duplicates, lying length fields, truncated and invalid frames. rocecapd records each thread as
# its own stream. The expectation is the generator itself: the same arguments and seed with
# --pcap give the datagrams that were sent; every raw file must equal, byte for byte, what a
# VDIF reader written from the specification (vdif_check.py) builds from those datagrams.
# With SOFTVERBS_LIB_DIR: backend verbs through softverbs (one thread per flow, as the verbs
# backend requires), rocecapd's other capture defaults (ring depth, split, max_frame): the
# verbs path's VDIF fast lane (Ingest::on_slot). There each flow's VTP counts are checked too:
# out of order = duplicated + late frames, so a rejected frame's number is not counted twice.
#
# usage: rocecapd_vdif_live_test.sh ROCECAPD ROCECAP [FRAMES_PER_STREAM [RATE_PER_STREAM
#        [SOFTVERBS_LIB_DIR]]]
# As root (exits 77 otherwise). KEEP_WORKDIR=1 keeps the files also on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 ROCECAPD ROCECAP [FRAMES_PER_STREAM [RATE_PER_STREAM [SOFTVERBS_LIB_DIR]]]"
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?$usage}
ROCECAP=${2:?$usage}
frames=${3:-3000}
rate=${4:-2000}
SV_LIB=${5:-}
ROCECAPD_BIN=$ROCECAPD # e2e_softverbs_wrapper runs it with softverbs
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root

e2e_workdir vdif-live
NETNS_CMD_TIMEOUT=100
NETNS_MAX_SECONDS=150 # below the ctest TIMEOUT (180): teardown always gets to run
netns_up
backend=pcap threads=0,1 device=""
if [ -n "$SV_LIB" ]; then
  [ -e "$SV_LIB/libibverbs.so.1" ] || { echo "FAIL: no softverbs in $SV_LIB"; exit 1; }
  e2e_softverbs_wrapper "sv0=$NETNS_RECEIVER_IF" real_net
  backend=verbs threads=0 device=", device: sv0"
fi

fps=1000
gen=(gen --format vdif --frames-per-second $fps --vtp --threads "$threads" --start-seconds 5000
  --start-frame 990 --groups 239.17.0.1:36001 --sources 192.0.2.11,192.0.2.12 --frames "$frames"
  --payload-bytes 1024 --nchan 2 --nbits 4 --station VL --seed 31 --drop 0.003 --swap 0.003
  --duplicate 0.003 --bad-sync 0.002 --truncate 0.002 --invalid 0.003)
"$ROCECAP" "${gen[@]}" --pcap "$work/reference.pcap" --summary "$work/reference.json" >/dev/null
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$work/reference.json")

cat >"$work/run.yaml" <<YAML
run: { name: vdif, duration: 90s, packets: $total }
capture:
  backend: $backend
  poll_mode: event
  payload_memory: host
  interfaces: [ { name: $NETNS_RECEIVER_IF$device, groups: [239.17.0.1:36001] } ]
streams:
  format: vdif
  frames_per_second: $fps
  vtp: true
  threads: [$threads]
  antennas: [ { name: st1, source: 192.0.2.11 }, { name: st2, source: 192.0.2.12 } ]
output: { directory: $work/out, formats: [raw, vdifhdr, pcap] }
metrics: { enabled: false }
logging: { level: info }
YAML
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
wrapper=$E2E_PID
netns_exec_sender "$ROCECAP" "${gen[@]}" --interface "$NETNS_SENDER_IF" --rate "$rate" \
  --summary "$work/sent.json" >/dev/null 2>"$work/gen.err" || {
  echo "FAIL: rocecap gen failed:"
  cat "$work/gen.err"
  exit 1
}
if ! e2e_wait_exit "$wrapper" 30; then
  echo "FAIL: rocecapd had not seen all $total datagrams 30 s after the traffic ended:"
  tail -20 "$work/rocecapd.log"
  exit 1
fi
[ "$E2E_RC" = 0 ] || { echo "FAIL: rocecapd exited $E2E_RC:"; cat "$work/rocecapd.log"; exit 1; }

streams=()
for src in 192.0.2.11:st1 192.0.2.12:st2; do
  for t in ${threads//,/ }; do
    # One listed thread: its files are named after the antenna alone.
    suffix=$([ "$threads" = 0 ] && echo "" || echo "_t$t")
    streams+=(--stream "239.17.0.1:36001,${src%%:*},$t=$work/out/vdif/239.17.0.1_36001_${src##*:}$suffix.0000.vdif")
  done
done
python3 "$here/vdif_check.py" --pcap "$work/reference.pcap" --fps $fps --vtp "${streams[@]}"
# Exact counts per stream, from the summary: received = sent - lying - truncated; duplicates,
# late (swapped) and invalid as generated; lost = fill frames.
python3 - "$work/out/vdif/manifest.json" "$work/reference.json" "$threads" <<'PY'
import json, sys
m, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
one_thread = sys.argv[3] == "0"
want = {(st["source"], st["thread"]): st for st in s["streams"]}
assert len(m["streams"]) == (2 if one_thread else 4), len(m["streams"])
for ms in m["streams"]:
    g = want[(ms["source"], ms["thread"])]
    bad = len(g["bad_sync"]) + len(g["truncated"])
    assert ms["packets"] == g["datagrams"] - bad, (ms, g["datagrams"], bad)
    assert ms["duplicate"] == len(g["duplicated"]) and ms["late"] == len(g["swapped"]), ms
    assert ms["invalid"] == len(g["invalid"]) and ms["lost"] == ms["fill_frames"], ms
    if one_thread:  # the flow is the stream: a late or repeated number is a late or duplicate frame
        assert ms["vtp"]["out_of_order"] == ms["duplicate"] + ms["late"], ms
bad = sum(len(g["bad_sync"]) + len(g["truncated"]) for g in s["streams"])
assert m["rejected"].get("vdif_size_mismatch", 0) == bad, (m["rejected"], bad)
print("live counts ok:", [(ms["antenna"], ms["thread"], ms["packets"], ms["lost"]) for ms in m["streams"]])
PY
# The project's own checker agrees (counters, raw and vdifhdr files against the generator).
"$ROCECAP" verify --manifest "$work/out/vdif/manifest.json" --expect "$work/reference.json"
passed=1
echo "PASS"
