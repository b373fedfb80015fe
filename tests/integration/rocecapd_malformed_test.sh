#!/usr/bin/env bash
# Integration: malformed and unusual frames through rocecapd (backend pcap-file).
#
# A clean `rocecap gen --pcap` capture is copied with some frames of one stream replaced by
# broken versions (truncated, too many VLAN tags, not IPv4, bad IHL, options past the frame,
# bad IP length, fragments, not UDP, wrong UDP length, foreign source and port, bad sync word,
# CODIF size mismatch, zero nchan, frame number out of range, larger than a slot, cut by the
# snap length) and others by unusual valid ones (one and two VLAN tags, IPv4 options, options
# that push the CODIF header across the header split, an Ethernet trailer). rocecapd must count
# each broken frame under its reason in the manifest, write none of them (fill frames in raw,
# absent from pcap), capture the unusual ones byte for byte, and exit 0. Also runs in the
# sanitizer build (label sanitize): the binaries are those of the build tree that runs it.
# Needs no privileges.
#
# usage: rocecapd_malformed_test.sh ROCECAPD ROCECAP [live]
# live: (root, network namespaces; exits 77 otherwise) only the unusual valid frames, sent as
#   they are from an AF_PACKET socket over a veth to rocecapd with backend pcap: its capture
#   filter must let VLAN-tagged and IPv4-options frames of the configured streams through.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP [live]}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP [live]}
live=${3:-}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
if [ -n "$live" ]; then
  # shellcheck source=netns.sh
  source "$here/netns.sh"
  netns_require_root
fi

work=$(mktemp -d /tmp/rocecap-malformed-test.XXXXXX)
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
if [ -n "$live" ]; then
  NETNS_CMD_TIMEOUT=100
  NETNS_MAX_SECONDS=150
  netns_up
  netns_on_exit finish
else
  trap finish EXIT
fi

"$ROCECAP" gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames 400 \
  --payload-bytes "$E2E_PAYLOAD" --seed "$E2E_SEED" --drop 0 --foreign-prob 0 \
  --pcap "$work/clean.pcap" --summary "$work/summary.json" >/dev/null
python3 "$here/malformed_frames.py" make --clean "$work/clean.pcap" --summary "$work/summary.json" \
  --out "$work/sent.pcap" --plan "$work/plan.json" ${live:+--valid-only}

# max_frame 2048: a valid CODIF frame of 8 KiB data is "oversize" for this run.
if [ -n "$live" ]; then
  records=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['records'])" "$work/plan.json")
  E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_PACKETS=$records E2E_MAX_FRAME=2048 \
    e2e_config "$work/run.yaml"
  e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
  rocecapd_pid=$E2E_PID
  netns_exec_sender python3 "$here/send_pcap.py" "$NETNS_SENDER_IF" "$work/sent.pcap"
else
  E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/out \
    E2E_MAX_FRAME=2048 e2e_config "$work/run.yaml"
  e2e_start_rocecapd "" "$work/rocecapd.log" "$work/run.yaml"
  rocecapd_pid=$E2E_PID
fi
e2e_wait_exit "$rocecapd_pid" 30
rocecapd_pid=""
if [ "$E2E_RC" != 0 ]; then
  echo "FAIL: rocecapd exited $E2E_RC:"
  cat "$work/rocecapd.log"
  exit 1
fi
if grep -E "ERROR|runtime error|AddressSanitizer" "$work/rocecapd.log"; then
  echo "FAIL: rocecapd reported errors (above)"
  exit 1
fi
python3 "$here/malformed_frames.py" check --plan "$work/plan.json" \
  --manifest "$work/out/e2e/manifest.json"

# The check can fail: a plan claiming one frame was something else must be refused.
python3 - "$work/plan.json" "$work/tampered.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["replaced"][0]["reason"] = "bad_sync" if plan["replaced"][0]["reason"] is None else None
json.dump(plan, open(sys.argv[2], "w"))
PY
rc=0
python3 "$here/malformed_frames.py" check --plan "$work/tampered.json" \
  --manifest "$work/out/e2e/manifest.json" >"$work/tampered.out" || rc=$?
if [ "$rc" != 1 ] || ! grep -q "manifest rejected" "$work/tampered.out"; then
  echo "FAIL: the check accepted a tampered plan (exit $rc):"
  cat "$work/tampered.out"
  exit 1
fi
echo "the check refuses a tampered plan: ok"
passed=1
