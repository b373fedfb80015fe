#!/usr/bin/env bash
# Integration: rocecapd replays `rocecap gen --pcap` (backend pcap-file).
#
# The generator writes the traffic of 3 antennas x 2 groups, with drops, swaps, duplicates,
# bad sync words, truncated and invalid frames and foreign copies, to a pcap file; rocecapd
# replays it into raw, codifhdr and pcap files. The raw and codifhdr files must be the expected
# time-aligned streams byte for byte (fill frames for what never arrived intact), the manifest
# counts those of the generator's summary (run_check.py), and the pcap output must hold every
# frame that was placed. The generator arguments are those of the live test (e2e_lib.sh).
# Needs no privileges.
#
# usage: rocecapd_replay_test.sh ROCECAPD ROCECAP [FRAMES_PER_STREAM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP [FRAMES_PER_STREAM]}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP [FRAMES_PER_STREAM]}
frames=${3:-34000}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-replay-test.XXXXXX)
passed=0
rocecapd_pid=""
finish() {
  [ -n "$rocecapd_pid" ] && kill "$rocecapd_pid" 2>/dev/null
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/sent.pcap" --summary "$work/summary.json" >/dev/null

E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/out \
  e2e_config "$work/run.yaml"
start=$(date +%s.%N)
e2e_start_rocecapd "" "$work/rocecapd.log" "$work/run.yaml"
rocecapd_pid=$E2E_PID
e2e_wait_exit "$rocecapd_pid" 120
rocecapd_pid=""
echo "rocecapd replayed $(python3 -c "import json;print(json.load(open('$work/summary.json'))['datagrams'])") datagrams in $(echo "$(date +%s.%N) - $start" | bc) s, exit $E2E_RC"
if [ "$E2E_RC" != 0 ]; then
  echo "FAIL: rocecapd exited $E2E_RC:"
  cat "$work/rocecapd.log"
  exit 1
fi
if grep -E "runtime error|AddressSanitizer|LeakSanitizer" "$work/rocecapd.log"; then
  echo "FAIL: the sanitizers reported errors in rocecapd (above)"
  exit 1
fi
grep -q "stopping: capture ended" "$work/rocecapd.log" || {
  echo "FAIL: rocecapd did not stop at the end of the replayed file:"
  cat "$work/rocecapd.log"
  exit 1
}

manifest=$work/out/e2e/manifest.json
python3 "$here/run_check.py" expect --summary "$work/summary.json" \
  --reference-pcap "$work/sent.pcap" --manifest "$manifest"
python3 "$here/pcap_check.py" --manifest "$manifest" --summary "$work/summary.json"
e2e_verify "$manifest" "$work/summary.json"
passed=1
