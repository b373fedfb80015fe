#!/usr/bin/env bash
# Consumers end to end: a consumer too slow for the stream (lossy mode) loses frames, never
# the capture, and never reads a torn frame.
#
# A paced replay (capture.replay_pace: recorded, `rocecap gen --rate`) of 3 antennas x 2 groups
# with impairments; a small ring (capture.ring_depth), consumers.keep and consumers.log_frames,
# so that slots and descriptors are reused soon after they are published. python_all_streams.py
# reads one stream and sleeps after every frame, so it falls behind: frames are overwritten
# under it (Missed), some while it copies them (torn: counted missed, never returned).
# Checks: rocecapd exit 0 and its capture is that of the same replay without consumers (every
# manifest counter, ring_full_drops 0, every raw file's sha256); the consumer missed frames
# (missed > 0), read + missed = the raw file's frames, and every frame it got is byte for byte
# the raw file's frame at that frame index (consumer_check.py frames).
#
# usage: rocecapd_consumers_slow_test.sh ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]"
ROCECAPD=${1:?$usage}
ROCECAP=${2:?$usage}
: "${3:?$usage}" # POWER_STAGE: not used here
frames=${4:-6000}
rate=2000 # frames per second per stream: a 3 s replay
# shellcheck source=consumers_lib.sh
source "$here/consumers_lib.sh"
cons_init consumers-slow-test
start=$SECONDS

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --rate "$rate" --pcap "$work/sent.pcap" \
  --summary "$work/summary.json" >/dev/null

export E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_FORMATS=raw
export E2E_REPLAY_PACE=recorded E2E_RING_DEPTH=512
sock=$work/consumers.sock
stream=ant1@239.17.0.1:36001
CONS_YAML="consumers:
  socket: $sock
  streams: [$stream]
  keep: 16
  hold_frames: 16
  log_frames: 1024
  wait_for: 1
  wait_time: 20s"
E2E_OUT=$work/out cons_config "$work/run.yaml"

cons_start_rocecapd "$work/rocecapd.log" "$work/run.yaml"
rocecapd_pid=$ROCECAPD_PID
cons_bg 60 /dev/null "$work/slow.err" "$PY" "$here/python_all_streams.py" --socket "$sock" \
  --streams "$stream" --name slow --dir "$work/slow" --summary "$work/slow.json" --index \
  --sleep 0.002 --timeout 55
slow_pid=$CONS_PID

cons_wait "$rocecapd_pid" 60 rocecapd
rocecapd_checks "$work/rocecapd.log"
cons_wait "$slow_pid" 30 "the slow consumer"
[ "$CONS_RC" = 0 ] || fail "the slow consumer exited $CONS_RC: $(cat "$work/slow.err")"
echo "consumer run: $((SECONDS - start)) s so far; $(grep written= "$work/slow.err")"

manifest=$work/out/e2e/manifest.json
f=$(echo "$stream" | tr '/:' '__')
check "$PY" "$here/consumer_check.py" frames --manifest "$manifest" --stream "$stream" \
  --bin "$work/slow/$f.bin" --idx "$work/slow/$f.idx" --summary "$work/slow.json" --expect-missed
drops=$(manifest_value "$manifest" "sum(i['ring_full_drops'] + i['dump_pinned_drops'] for i in m['interfaces'])")
[ "$drops" = 0 ] || fail "manifest ring_full_drops + dump_pinned_drops = $drops, expected 0"
consumers=$(manifest_value "$manifest" "(m['consumers']['attached_total'], m['consumers']['refused'], m['consumers']['dropped'])")
[ "$consumers" = "(1, 0, 0)" ] ||
  fail "manifest consumers (attached_total, refused, dropped) = $consumers, expected (1, 0, 0)"

cons_reference e2e
check "$PY" "$here/consumer_check.py" same-run "$manifest" "$work/ref/e2e/manifest.json"

echo "rocecapd_consumers_slow_test: $((SECONDS - start)) s"
cons_finish
