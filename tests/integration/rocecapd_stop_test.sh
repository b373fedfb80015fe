#!/usr/bin/env bash
# Integration: stopping rocecapd is prompt and clean, whatever it is doing (backend pcap-file).
#
# A `rocecap gen --pcap` capture (no impairments) is copied with the second half of its
# records one hour later: replayed at the recorded pace, rocecapd writes the first half and
# then waits for the hour. Three runs of it:
#   gap      SIGTERM in the gap: exit 0 within 10 s (the wait used to be one clock_nanosleep
#            that slept through SIGTERM for the hour), manifest state stopped, every frame of
#            the first half in the files (run_check.py consistent), none of the second.
#   twice    SIGTERM, and a second SIGTERM once the log says it is stopping (what coreutils
#            `timeout` does: it forwards the signal to its child and to its process group):
#            still exit 0 and a complete manifest. The second used to be delivered with the
#            default disposition once the signal watcher unblocked it: death by SIGTERM (143).
#   int-term SIGINT and SIGTERM back to back: the same, deterministically (signals of two
#            kinds are both pending, so one is still pending during the drain).
# Needs no privileges.
#
# usage: rocecapd_stop_test.sh ROCECAPD ROCECAP
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-stop-test.XXXXXX)
passed=0
rocecapd_pid=""
finish() {
  [ -n "$rocecapd_pid" ] && kill -KILL "$rocecapd_pid" 2>/dev/null
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT

frames=200 # per stream, 6 streams at 1000 frames/s each: the first half lasts 0.1 s
"$ROCECAP" gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames" \
  --payload-bytes "$E2E_PAYLOAD" --nchan 2 --nbits 4 --complex --epoch 52 --start-seconds 1000 \
  --station AT --thread-id 100 --group-id 7 --seed "$E2E_SEED" --rate 1000 \
  --pcap "$work/clean.pcap" --summary "$work/summary.json" >/dev/null
before=$(python3 - "$here" "$work/clean.pcap" "$work/gap.pcap" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import malformed_frames, run_check
records = list(run_check.read_pcap(sys.argv[2]))
half = len(records) // 2
hour = 3600 * 1_000_000_000
malformed_frames.write_pcap(sys.argv[3], [(ts + (hour if i >= half else 0), data, wire)
                                          for i, (ts, data, wire) in enumerate(records)])
print(half)
PY
)

stop_run() { # NAME SIGNALS...: one run, stopped in the gap by the signals given
  local name=$1 out=$work/$1 log=$work/$1.log i
  shift
  E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/gap.pcap E2E_REPLAY_PACE=recorded E2E_IFACE=rec0 \
    E2E_OUT=$out e2e_config "$work/$name.yaml"
  # Status lines every 0.2 s: their packet total says when the first half is in (the gap has
  # begun), however slowly a loaded machine gets there.
  "$ROCECAPD" --config "$work/$name.yaml" --status-interval 0.2 2>"$log" &
  rocecapd_pid=$!
  for ((i = 0; i < 300; i++)); do
    grep -q "; $before packets," "$log" && break
    kill -0 "$rocecapd_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "; $before packets," "$log" || { echo "FAIL ($name): the $before frames before the gap never arrived:"; cat "$log"; exit 1; }
  case $1 in
    twice)
      kill -TERM "$rocecapd_pid"
      for ((i = 0; i < 500; i++)); do
        grep -q "stopping:" "$log" && break
        sleep 0.01
      done
      kill -TERM "$rocecapd_pid" 2>/dev/null || echo "note: rocecapd had exited before the second SIGTERM"
      ;;
    int-term) python3 -c "import os, signal, sys; p = int(sys.argv[1]); os.kill(p, signal.SIGINT); os.kill(p, signal.SIGTERM)" "$rocecapd_pid" ;;
    *) kill -TERM "$rocecapd_pid" ;;
  esac
  if ! e2e_wait_exit "$rocecapd_pid" 10; then
    echo "FAIL ($name): rocecapd did not stop within 10 s of the signal:"
    cat "$log"
    exit 1
  fi
  rocecapd_pid=""
  echo "$name: rocecapd exited $E2E_RC: $(grep -o 'stopping: [^;]*' "$log")"
  if [ "$E2E_RC" != 0 ]; then
    echo "FAIL ($name): rocecapd exited $E2E_RC (143: killed by SIGTERM after its stop):"
    cat "$log"
    exit 1
  fi
  grep -q "run e2e complete" "$log" || { echo "FAIL ($name): no 'run e2e complete' in the log"; cat "$log"; exit 1; }
  python3 "$here/run_check.py" consistent --manifest "$out/e2e/manifest.json" \
    --frame-bytes "$E2E_FRAME_BYTES"
  python3 - "$out/e2e/manifest.json" "$before" "$name" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
want, name = int(sys.argv[2]), sys.argv[3]
got = sum(s["packets"] for s in m["streams"])
if m["state"] != "stopped" or got != want or m["rejected"]:
    sys.exit(f"FAIL ({name}): manifest state {m['state']!r}, {got} packets, rejected "
             f"{m['rejected']}; expected stopped, the {want} frames before the gap, none rejected")
print(f"{name}: manifest stopped, the {got} frames before the gap")
PY
}

stop_run gap gap
stop_run twice twice
stop_run int-term int-term
passed=1
