#!/usr/bin/env bash
# Consumers end to end: three consumers read a replay with impairments while rocecapd writes it.
#
# `rocecap gen --pcap` writes 3 antennas x 2 groups with drops, swaps, duplicates, bad sync,
# truncated, invalid and foreign frames (e2e_lib.sh); rocecapd replays it (pcap-file) with
# consumers.wait_for: 3, so capture starts once these three are attached:
#   (a) rocecap_power_stage (C++ client library) on every stream,
#   (b) python_all_streams.py (python/rocecap_consumer.py) on every stream, a file per stream,
#   (c) `rocecap tap` on one stream.
# Checks: every file of (b) and the tap's file are byte-identical to the stream's raw file (fill
# frames included) with nothing missed; the power stage's frames and fill counts per stream are
# the raw file's and its per-channel power sums are numpy's over the raw file's non-fill frames
# (consumer_check.py power); the manifest's consumers object says 3 attached, 0 refused, 0
# dropped; and the capture is the same as a second replay of the same pcap without consumers:
# every manifest counter and every raw file's sha256 (consumer_check.py same-run).
#
# usage: rocecapd_consumers_test.sh ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]"
ROCECAPD=${1:?$usage}
ROCECAP=${2:?$usage}
POWER_STAGE=${3:?$usage}
frames=${4:-6000}
# shellcheck source=consumers_lib.sh
source "$here/consumers_lib.sh"
cons_init consumers-test
start=$SECONDS

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/sent.pcap" --summary "$work/summary.json" >/dev/null

export E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_FORMATS=raw
sock=$work/consumers.sock
tap_stream=ant2@239.17.0.2:36002
CONS_YAML="consumers:
  socket: $sock
  wait_for: 3
  wait_time: 20s"
E2E_OUT=$work/out cons_config "$work/run.yaml"

cons_start_rocecapd "$work/rocecapd.log" "$work/run.yaml"
rocecapd_pid=$ROCECAPD_PID
cons_bg 60 "$work/power.out" "$work/power.err" "$POWER_STAGE" --socket "$sock" --name power
power_pid=$CONS_PID
cons_bg 60 /dev/null "$work/python.err" "$PY" "$here/python_all_streams.py" --socket "$sock" \
  --dir "$work/py" --summary "$work/py.json" --timeout 55
py_pid=$CONS_PID
cons_bg 60 /dev/null "$work/tap.err" "$ROCECAP" tap --socket "$sock" --stream "$tap_stream" \
  -o "$work/tap.bin" --name tap
tap_pid=$CONS_PID

cons_wait "$rocecapd_pid" 60 rocecapd
rocecapd_checks "$work/rocecapd.log"
grep -q "consumers: 3 attached; capture starts" "$work/rocecapd.log" ||
  fail "rocecapd did not log that the 3 consumers attached before capture: $(grep consumers: "$work/rocecapd.log")"
cons_wait "$power_pid" 30 rocecap_power_stage
[ "$CONS_RC" = 0 ] || fail "rocecap_power_stage exited $CONS_RC: $(cat "$work/power.err")"
cons_wait "$py_pid" 30 python_all_streams.py
[ "$CONS_RC" = 0 ] || fail "python_all_streams.py exited $CONS_RC: $(cat "$work/python.err")"
cons_wait "$tap_pid" 30 "rocecap tap"
[ "$CONS_RC" = 0 ] || fail "rocecap tap exited $CONS_RC: $(cat "$work/tap.err")"
echo "consumer run: $((SECONDS - start)) s so far"

out=$work/out/e2e
manifest=$out/manifest.json
# (b) and (c): byte-identical to the raw files, nothing missed.
nstreams=0
for raw in "$out"/*.codif; do
  nstreams=$((nstreams + 1))
  base=$(basename "$raw" .0000.codif)         # 239.17.0.1_36001_ant1
  IFS=_ read -r group port ant <<<"$base"
  name=$ant@$group:$port
  pyfile=$work/py/$(echo "$name" | tr '/:' '__').bin
  cmp -s "$raw" "$pyfile" || fail "python consumer's $pyfile differs from $raw ($(cmp "$raw" "$pyfile" 2>&1 | head -1))"
done
[ "$nstreams" = 6 ] || fail "$nstreams raw files, expected 6"
"$PY" - "$work/py.json" <<'PY' || failed_above
import json, sys
bad = [f"{n}: {t}" for n, t in json.load(open(sys.argv[1])).items()
       if t["missed"] or t["torn"] or not t["ended"] or t["read"] != t["written"]]
for b in bad:
    print(f"FAIL: python consumer {b}")
sys.exit(1 if bad else 0)
PY
tap_raw=$out/$(raw_file_of "$tap_stream")
cmp -s "$tap_raw" "$work/tap.bin" || fail "rocecap tap's file differs from $tap_raw"
grep -q ", 0 missed" "$work/tap.err" || fail "rocecap tap missed frames: $(cat "$work/tap.err")"

# (a): frames, fill and power per channel against numpy over the raw files.
check "$PY" "$here/consumer_check.py" power --out "$work/power.out" --manifest "$manifest"

# The manifest's consumers object.
consumers=$(manifest_value "$manifest" "(m['consumers']['attached_total'], m['consumers']['refused'], m['consumers']['dropped'], m['consumers']['connections'], m['consumers']['socket'])")
[ "$consumers" = "(3, 0, 0, 3, '$sock')" ] ||
  fail "manifest consumers (attached_total, refused, dropped, connections, socket) = $consumers, expected (3, 0, 0, 3, '$sock')"

# The same capture without consumers.
cons_reference e2e
check "$PY" "$here/consumer_check.py" same-run "$manifest" "$work/ref/e2e/manifest.json"

echo "rocecapd_consumers_test: $((SECONDS - start)) s"
cons_finish
