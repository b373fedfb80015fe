#!/usr/bin/env bash
# Integration: rocecapd (backend pcap, live) captures `rocecap gen` multicast over a veth.
#
# In a sender namespace `rocecap gen` sends 3 antennas x 2 groups of CODIF frames with drops,
# swaps, duplicates, bad sync words, truncated and invalid frames and foreign copies; in the
# receiver namespace rocecapd joins the groups and writes raw, codifhdr and pcap files. The
# expectation comes from the generator itself: the same arguments and seed with --pcap give the
# datagrams that were sent (the live summary must equal that run's).
#
# usage: rocecapd_live_test.sh MODE ROCECAPD ROCECAP [FRAMES_PER_STREAM [RATE_PER_STREAM]]
#   full     rocecapd stops by itself after exactly the datagrams sent (run.packets); raw and
#            codifhdr byte-identical to the expected time-aligned streams, manifest counts
#            equal to the summary's (run_check.py), pcap output read by tshark (pcap_check.py).
#   rotate   the same with output.rotate 8 MiB: many files of each format; every pcap file read
#            by tshark to its end, counts, UDP lengths, timestamps non-decreasing per file.
#   sigterm  SIGTERM while traffic flows: exit 0, manifest state stopped and consistent with the
#            files (whole frames, packets vs raw frames incl. fill), raw and codifhdr files the
#            expected streams up to each stream's last frame, pcap files readable to the end.
# As root (exits 77 otherwise). KEEP_WORKDIR=1 keeps the files also on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 full|rotate|sigterm ROCECAPD ROCECAP [FRAMES_PER_STREAM [RATE_PER_STREAM]]"
mode=${1:?$usage}
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${2:?$usage}
ROCECAP=${3:?$usage}
frames=${4:-34000}
rate=${5:-4000}
case $mode in full | rotate | sigterm) ;; *)
  echo "$usage"
  exit 2
  ;;
esac
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed (scripts/install-deps.sh)"; exit 1; }

e2e_workdir live-test
NETNS_CMD_TIMEOUT=200
NETNS_MAX_SECONDS=280 # below the ctest TIMEOUT (300): teardown always gets to run
netns_up

e2e_gen_args "$frames"
# What will be sent, datagram for datagram: the reference for every check below.
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/reference.pcap" --summary "$work/reference.json" >/dev/null
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$work/reference.json")

E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out
[ "$mode" = sigterm ] || E2E_PACKETS=$total # stops by itself once everything has arrived
[ "$mode" = rotate ] && E2E_ROTATE=8MiB
e2e_config "$work/run.yaml"
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
# The background job is coreutils `timeout` around `ip netns exec`, which execs rocecapd: the
# daemon is timeout's child. Signals go to the daemon alone: timeout forwards a SIGTERM to its
# child and to its whole process group, so rocecapd would get it twice (handled now, but this
# test is about one SIGTERM; rocecapd_stop_test.sh sends two). The exit status is read through
# the wrapper, which exits with its command's status (124 only when its own time limit ran
# out, 128+n when the command died by signal n).
wrapper=$E2E_PID
rocecapd=$(pgrep -P "$wrapper" -x rocecapd) || {
  echo "FAIL: no rocecapd under the namespace wrapper (pid $wrapper):"
  ps -o pid,ppid,comm --ppid "$wrapper" || true
  exit 1
}
netns_on_exit "kill $rocecapd 2>/dev/null"

gen_live() {
  netns_exec_sender "$ROCECAP" "${E2E_GEN[@]}" --interface "$NETNS_SENDER_IF" --rate "$rate" \
    --summary "$work/sent.json" >/dev/null 2>"$work/gen.err"
}

if [ "$mode" = sigterm ]; then
  gen_live &
  gen_pid=$!
  # Stop the daemon while frames are still flowing (the traffic lasts frames/rate seconds).
  sleep 3
  echo "SIGTERM to rocecapd 3 s into the traffic"
  kill -TERM "$rocecapd"
  e2e_wait_exit "$wrapper" 30
  kill -0 "$gen_pid" 2>/dev/null || { echo "FAIL: the traffic had ended before SIGTERM"; exit 1; }
  wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
else
  start=$(date +%s.%N)
  gen_live || { echo "FAIL: rocecap gen exited $?:"; cat "$work/gen.err"; exit 1; }
  echo "gen: $total datagrams in $(echo "$(date +%s.%N) - $start" | bc) s"
  if ! e2e_wait_exit "$wrapper" 30; then
    kill -TERM "$rocecapd"
    e2e_wait_exit "$wrapper" 30 || true
    echo "FAIL: rocecapd had not seen all $total datagrams 30 s after the traffic ended:"
    grep -E "status|stream|NIC|drop" "$work/rocecapd.log" | tail -20
    python3 "$here/run_check.py" expect --summary "$work/reference.json" \
      --reference-pcap "$work/reference.pcap" --manifest "$work/out/e2e/manifest.json" || true
    exit 1
  fi
  # The live run sent exactly what the reference describes.
  python3 - "$work/reference.json" "$work/sent.json" <<'PY'
import json, sys
ref, sent = (json.load(open(p)) for p in sys.argv[1:])
for k in ("output", "pcap_file", "interface", "seconds"):
    ref.pop(k, None); sent.pop(k, None)
if ref != sent:
    sys.exit("FAIL: the live generator's summary differs from the --pcap reference run's")
PY
fi
echo "rocecapd exited $E2E_RC: $(grep -o 'stopping: [^;]*' "$work/rocecapd.log")"
if [ "$E2E_RC" = 124 ]; then
  echo "FAIL: the namespace wrapper's time limit ($NETNS_CMD_TIMEOUT s) ran out"
  exit 1
fi
if [ "$E2E_RC" != 0 ]; then
  echo "FAIL: rocecapd exited $E2E_RC:"
  cat "$work/rocecapd.log"
  exit 1
fi

manifest=$work/out/e2e/manifest.json
case $mode in
  full)
    python3 "$here/run_check.py" expect --summary "$work/reference.json" \
      --reference-pcap "$work/reference.pcap" --manifest "$manifest"
    python3 "$here/pcap_check.py" --manifest "$manifest" --summary "$work/reference.json"
    e2e_verify "$manifest" "$work/reference.json"
    ;;
  rotate)
    python3 - "$manifest" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
pcaps = sum(len(i["files"]) for i in m["interfaces"])
raws = [sum(1 for f in s["files"] if f["format"] == "raw") for s in m["streams"]]
print(f"rotation at 8 MiB: {pcaps} pcap files, raw files per stream {raws}")
if pcaps < 10 or min(raws) < 2:
    sys.exit("FAIL: too few files: rotation did not happen")
PY
    python3 "$here/pcap_check.py" --manifest "$manifest" --summary "$work/reference.json"
    python3 "$here/run_check.py" expect --summary "$work/reference.json" \
      --reference-pcap "$work/reference.pcap" --manifest "$manifest"
    e2e_verify "$manifest" "$work/reference.json"
    ;;
  sigterm)
    grep -q "stopping: SIGTERM" "$work/rocecapd.log" || { echo "FAIL: no SIGTERM stop in the log"; exit 1; }
    python3 "$here/run_check.py" consistent --manifest "$manifest" --frame-bytes "$E2E_FRAME_BYTES"
    python3 "$here/run_check.py" expect --partial --summary "$work/reference.json" \
      --reference-pcap "$work/reference.pcap" --manifest "$manifest"
    python3 "$here/pcap_check.py" --manifest "$manifest"
    ;;
esac
passed=1
