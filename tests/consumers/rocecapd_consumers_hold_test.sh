#!/usr/bin/env bash
# Consumers end to end, hold mode: a hold consumer that stops acknowledging is detached at its
# bound, and consumers that keep acknowledging read every frame.
#
# A paced replay (capture.replay_pace: recorded) of 3 antennas x 2 groups with impairments,
# metrics on 127.0.0.1:<free port>, consumers.hold_frames 256 (hold_time 5 s, so the frame
# bound is the one met), consumers.wait_for: 3:
#   hold_stall.py: hold mode on ant1's two streams; reads and acknowledges 100 frames of each,
#     then stops (reads, acks, sends nothing) and waits to be told `detached REASON`;
#   python_all_streams.py --mode hold on ant2's two streams, acknowledging as it reads;
#   rocecap_power_stage --hold on ant3's two streams (the C++ client's acks).
# Checks: the stalled consumer is detached within 5 s, the reason names consumers.hold_frames,
# and rocecapd closes its connection; the manifest's consumers object says 3 attached, 1
# dropped, 0 refused; nothing the hold cost is silent: manifest ring_full_drops and
# dump_pinned_drops 0 and the scraped rocecap_ring_consumer_pinned_drops_total 0 on every
# stream, rocecap_consumer_dropped_total 1, and the capture (every manifest counter, every raw
# file's sha256) is that of the same replay without consumers: raw frames + counted drops =
# frames sent, with no drops. The two well-behaved hold consumers: every stream's frames
# byte-identical to its raw file (python) / frames, fill and power as numpy (power stage),
# nothing missed.
#
# usage: rocecapd_consumers_hold_test.sh ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]"
ROCECAPD=${1:?$usage}
ROCECAP=${2:?$usage}
POWER_STAGE=${3:?$usage}
frames=${4:-3000}
rate=1000 # frames per second per stream: a 3 s replay
# shellcheck source=consumers_lib.sh
source "$here/consumers_lib.sh"
cons_init consumers-hold-test
start=$SECONDS

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --rate "$rate" --pcap "$work/sent.pcap" \
  --summary "$work/summary.json" >/dev/null

export E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_FORMATS=raw
export E2E_REPLAY_PACE=recorded
sock=$work/consumers.sock
CONS_YAML="consumers:
  socket: $sock
  hold_frames: 1024
  hold_time: 5s
  wait_for: 3
  wait_time: 20s"
E2E_OUT=$work/out cons_config "$work/run.yaml"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s/^  enabled: false$/  listen: 127.0.0.1:$port/" "$work/run.yaml"

cons_bg 60 /dev/null "$work/rocecapd.log" "$ROCECAPD" --config "$work/run.yaml" --metrics-linger 3
rocecapd_pid=$CONS_PID
cons_bg 60 /dev/null "$work/stall.err" "$PY" "$here/hold_stall.py" --socket "$sock" \
  --streams ant1 --frames 100 --out "$work/stall.json" --timeout 40
stall_pid=$CONS_PID
cons_bg 60 /dev/null "$work/good.err" "$PY" "$here/python_all_streams.py" --socket "$sock" \
  --streams ant2 --mode hold --name good --dir "$work/good" --summary "$work/good.json" \
  --timeout 55
good_pid=$CONS_PID
# The layout is given: the header's complex bit is what consumers_test checks.
# shellcheck disable=SC2016  # the inner script's own $1 and $@
cons_bg 60 "$work/power.out" "$work/power.err" bash -c \
  'for i in $(seq 100); do [ -S "$1" ] && break; sleep 0.1; done; shift; exec "$@"' _ "$sock" \
  "$POWER_STAGE" --socket "$sock" --stream ant3 --hold --name power --nchan 2 --nbits 4 --complex
power_pid=$CONS_PID

# Scrape the metrics once the run is complete (rocecapd lingers 5 s serving them).
for ((i = 0; i < 450; i++)); do
  grep -q "run e2e complete" "$work/rocecapd.log" 2>/dev/null && break
  kill -0 "$rocecapd_pid" 2>/dev/null || break
  sleep 0.1
done
curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" ||
  fail "could not scrape http://127.0.0.1:$port/metrics after the run"
cons_wait "$rocecapd_pid" 30 rocecapd
rocecapd_checks "$work/rocecapd.log"
cons_wait "$stall_pid" 30 hold_stall.py
[ "$CONS_RC" = 0 ] || fail "the stalled hold consumer was not detached: $(cat "$work/stall.err")"
cons_wait "$good_pid" 30 "the well-behaved hold consumer"
[ "$CONS_RC" = 0 ] || fail "the well-behaved hold consumer exited $CONS_RC: $(cat "$work/good.err")"
cons_wait "$power_pid" 30 "rocecap_power_stage --hold"
[ "$CONS_RC" = 0 ] || fail "rocecap_power_stage --hold exited $CONS_RC: $(cat "$work/power.err")"
# It may see rocecapd close the connection at the end ("rocecapd closed the connection"), never a
# detach (whose reason names the bound).
if grep "closed the connection:" "$work/power.out" | grep -q "consumers.hold"; then
  fail "the power stage was detached: $(grep "closed the connection" "$work/power.out")"
fi
echo "consumer run: $((SECONDS - start)) s so far"

manifest=$work/out/e2e/manifest.json
out=$work/out/e2e
# The stalled consumer: detached at the frame bound, told why, connection closed.
"$PY" - "$work/stall.json" <<'PY' || failed_above
import json, sys
r = json.load(open(sys.argv[1]))
ok = True
if not r["detached"] or "consumers.hold_frames" not in r["detached"]:
    print(f"FAIL: the stalled hold consumer was told {r['detached']!r}, expected a reason naming "
          "consumers.hold_frames")
    ok = False
elif r["seconds_to_detach"] > 5:
    print(f"FAIL: detached {r['seconds_to_detach']} s after it stopped (bound: 256 frames at "
          "1000 frames/s)")
    ok = False
if not r["closed"]:
    print("FAIL: rocecapd did not close the detached consumer's connection")
    ok = False
if ok:
    print(f"stalled hold consumer: detached after {r['seconds_to_detach']} s: {r['detached']}")
sys.exit(0 if ok else 1)
PY
consumers=$(manifest_value "$manifest" "(m['consumers']['attached_total'], m['consumers']['dropped'], m['consumers']['refused'])")
[ "$consumers" = "(3, 1, 0)" ] ||
  fail "manifest consumers (attached_total, dropped, refused) = $consumers, expected (3, 1, 0)"
drops=$(manifest_value "$manifest" "sum(i['ring_full_drops'] + i['dump_pinned_drops'] for i in m['interfaces'])")
[ "$drops" = 0 ] || fail "manifest ring_full_drops + dump_pinned_drops = $drops, expected 0"
# The metrics: every stream's consumer-pinned drops 0, one consumer dropped.
"$PY" - "$work/metrics.txt" <<'PY' || failed_above
import re, sys
text = open(sys.argv[1]).read()
ok = True
pinned = re.findall(r"^rocecap_ring_consumer_pinned_drops_total\{.*\} (\S+)$", text, re.M)
if len(pinned) != 6 or any(float(v) != 0 for v in pinned):
    print(f"FAIL: rocecap_ring_consumer_pinned_drops_total per stream {pinned}, expected 6 zeros")
    ok = False
dropped = re.findall(r"^rocecap_consumer_dropped_total(?:\{.*\})? (\S+)$", text, re.M)
if dropped != ["1"]:
    print(f"FAIL: rocecap_consumer_dropped_total {dropped}, expected ['1']")
    ok = False
full = re.findall(r"^rocecap_ring_full_drops_total\{.*\} (\S+)$", text, re.M)
if any(float(v) != 0 for v in full):
    print(f"FAIL: rocecap_ring_full_drops_total {full}")
    ok = False
if ok:
    print("metrics: no consumer-pinned or ring-full drops on any stream, 1 consumer dropped")
sys.exit(0 if ok else 1)
PY
# The well-behaved hold consumers read everything.
for name in ant2@239.17.0.1:36001 ant2@239.17.0.2:36002; do
  raw=$out/$(raw_file_of "$name")
  got=$work/good/$(echo "$name" | tr '/:' '__').bin
  cmp -s "$raw" "$got" || fail "hold consumer's $got differs from $raw ($(cmp "$raw" "$got" 2>&1 | head -1))"
done
"$PY" - "$work/good.json" <<'PY' || failed_above
import json, sys
bad = [f"{n}: {t}" for n, t in json.load(open(sys.argv[1])).items()
       if t["missed"] or t["torn"] or not t["ended"] or t["read"] != t["written"]]
for b in bad:
    print(f"FAIL: well-behaved hold consumer {b}")
sys.exit(1 if bad else 0)
PY
check "$PY" "$here/consumer_check.py" power --out "$work/power.out" --manifest "$manifest" \
  --streams ant3@239.17.0.1:36001,ant3@239.17.0.2:36002

cons_reference e2e
check "$PY" "$here/consumer_check.py" same-run "$manifest" "$work/ref/e2e/manifest.json"

echo "rocecapd_consumers_hold_test: $((SECONDS - start)) s"
cons_finish
