#!/usr/bin/env bash
# Consumers end to end, security: hostile and broken clients on the consumer socket of a
# running capture change nothing of the capture nor of a well-behaved consumer.
#
# A paced replay (capture.replay_pace: recorded, ~8 s) of 3 antennas x 2 groups with
# impairments; consumers.streams offers ant1 and ant2@239.17.0.1:36001 only, max_consumers 16;
# python_all_streams.py reads ant2@239.17.0.1:36001 throughout (consumers.wait_for: 1). While
# the replay runs, consumer_attacks.py sends garbage and malformed hellos, closes connections
# mid-handshake, asks for a stream not offered (`error ... not offered`), sends oversized
# messages, opens 1000 connections at once and keeps them open (beyond max_consumers: `error
# busy`), attaches and tries mmap(PROT_WRITE, MAP_SHARED) (EACCES), write() and ftruncate() on
# every descriptor it got, sends descriptors and bogus acks, and leaves connections silent (the
# hello deadline); rocecapd's open descriptors must be what they were before. Then a consumer
# that is not root (uid 65534 in the socket's group, via setpriv, when the test runs as root)
# tries to re-open each descriptor O_RDWR through /proc/self/fd: it must fail (EACCES), or
# the consumer could write rocecapd's ring memory (and so its raw files).
# Checks: the consumer socket is mode 0660 while the run is on; rocecapd exits 0 and its capture
# (every manifest counter, every raw file's sha256) is that of the same replay without
# consumers; the well-behaved consumer's file is byte-identical to its raw file with nothing
# missed; the manifest's consumers.refused >= the refused attempts.
#
# usage: rocecapd_consumers_security_test.sh ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: $0 ROCECAPD ROCECAP POWER_STAGE [FRAMES_PER_STREAM]"
ROCECAPD=${1:?$usage}
ROCECAP=${2:?$usage}
: "${3:?$usage}" # POWER_STAGE: not used here
frames=${4:-8000}
rate=1000 # frames per second per stream: an 8 s replay
# shellcheck source=consumers_lib.sh
source "$here/consumers_lib.sh"
cons_init consumers-security-test
start=$SECONDS

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --rate "$rate" --pcap "$work/sent.pcap" \
  --summary "$work/summary.json" >/dev/null

export E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_FORMATS=raw
export E2E_REPLAY_PACE=recorded
sock=$work/consumers.sock
good=ant2@239.17.0.1:36001
CONS_YAML="consumers:
  socket: $sock
  streams: [ant1, $good]
  max_consumers: 16
  wait_for: 1
  wait_time: 20s"
E2E_OUT=$work/out cons_config "$work/run.yaml"

cons_start_rocecapd "$work/rocecapd.log" "$work/run.yaml" 90
rocecapd_pid=$ROCECAPD_PID
cons_bg 90 /dev/null "$work/good.err" "$PY" "$here/python_all_streams.py" --socket "$sock" \
  --streams "$good" --name good --dir "$work/good" --summary "$work/good.json" --timeout 80
good_pid=$CONS_PID
for ((i = 0; i < 200; i++)); do
  grep -q "consumers: 1 attached; capture starts" "$work/rocecapd.log" && break
  sleep 0.1
done
grep -q "consumers: 1 attached; capture starts" "$work/rocecapd.log" ||
  fail "the well-behaved consumer did not attach: $(cat "$work/good.err")"

mode=$(stat -c %a "$sock")
[ "$mode" = 660 ] || fail "consumer socket mode $mode, expected 660"
daemon=$(pgrep -P "$rocecapd_pid" | head -1) # rocecapd itself, under timeout
cons_bg 60 "$work/attacks.out" "$work/attacks.err" "$PY" "$here/consumer_attacks.py" \
  --socket "$sock" --pid "$daemon" --offered ant1 --not-offered ant3@239.17.0.1:36001 \
  --max-consumers 16 --out "$work/attacks.json"
attacks_pid=$CONS_PID
cons_wait "$attacks_pid" 60 consumer_attacks.py
attacks_rc=$CONS_RC
cat "$work/attacks.out"
[ "$attacks_rc" = 0 ] || fail "consumer_attacks.py: $attacks_rc ($(tail -n 3 "$work/attacks.err"))"
# Re-opening a descriptor O_RDWR through /proc/self/fd, as a consumer that is not root (root
# passes every permission check): a user of the socket's group, else this user.
probe=("$PY" "$here/consumer_attacks.py" --socket "$sock" --pid 0 --offered ant1
  --not-offered ant3@239.17.0.1:36001 --max-consumers 16 --out /dev/null --only reopen)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod go+x "$work"
  probe=(setpriv --reuid=65534 --regid="$(stat -c %g "$sock")" --clear-groups "${probe[@]}")
fi
if [ "$(id -u)" != 0 ] || [ "${probe[0]}" = setpriv ]; then
  timeout 20 "${probe[@]}" >"$work/reopen.out" 2>"$work/reopen.err" || {
    cat "$work/reopen.out"
    fail "the re-open probe as a consumer that is not root failed (above)"
  }
else
  echo "NOTE: root without setpriv: the /proc/self/fd re-open probe is not run"
fi
kill -0 "$rocecapd_pid" 2>/dev/null ||
  fail "the replay ended before the attacks did: raise FRAMES_PER_STREAM (attacks: $(grep -o '"seconds": [0-9.]*' "$work/attacks.json"))"

cons_wait "$rocecapd_pid" 60 rocecapd
rocecapd_checks "$work/rocecapd.log"
cons_wait "$good_pid" 30 "the well-behaved consumer"
[ "$CONS_RC" = 0 ] || fail "the well-behaved consumer exited $CONS_RC: $(cat "$work/good.err")"
echo "consumer run: $((SECONDS - start)) s so far"

manifest=$work/out/e2e/manifest.json
raw=$work/out/e2e/$(raw_file_of "$good")
got=$work/good/$(echo "$good" | tr '/:' '__').bin
cmp -s "$raw" "$got" || fail "the well-behaved consumer's file differs from $raw ($(cmp "$raw" "$got" 2>&1 | head -1))"
"$PY" - "$work/good.json" <<'PY' || failed_above
import json, sys
bad = [f"{n}: {t}" for n, t in json.load(open(sys.argv[1])).items()
       if t["missed"] or t["torn"] or not t["ended"] or t["read"] != t["written"]]
for b in bad:
    print(f"FAIL: well-behaved consumer {b}")
sys.exit(1 if bad else 0)
PY
expected=$(manifest_value "$work/attacks.json" "m['refused_expected']")
refused=$(manifest_value "$manifest" "m['consumers']['refused']")
[ "$refused" -ge "$expected" ] || fail "manifest consumers.refused $refused < $expected refused attempts"
echo "manifest consumers: $(manifest_value "$manifest" "{k: v for k, v in m['consumers'].items() if k != 'attached'}"); refused attempts $expected"

cons_reference e2e
check "$PY" "$here/consumer_check.py" same-run "$manifest" "$work/ref/e2e/manifest.json"

echo "rocecapd_consumers_security_test: $((SECONDS - start)) s"
cons_finish
