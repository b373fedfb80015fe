#!/usr/bin/env bash
# systemd/: the unit template verifies cleanly (systemd-analyze verify prints bad keys and
# values as warnings with exit 0, so stderr must be empty), its hardening scores at most
# THRESHOLD (systemd-analyze security, 0-100 = 0.0-10.0 exposure), and the example run file
# passes rocecapd --check-config. ExecStart points at the built binary in a generated copy.
# Skipped (77) where systemd-analyze is missing.
#
# usage: check_units.sh SOURCE_DIR ROCECAPD [THRESHOLD [ROCECAP_AGENT]]
set -euo pipefail
src=${1:?usage: $0 SOURCE_DIR ROCECAPD [THRESHOLD]}
rocecapd=${2:?usage: $0 SOURCE_DIR ROCECAPD [THRESHOLD]}
threshold=${3:-30}
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
work=$(mktemp -d /tmp/rocecap-units.XXXXXX)
trap 'rm -rf "$work"' EXIT

sed "s#/usr/sbin/rocecapd#$rocecapd#g" "$src/systemd/rocecapd@.service" >"$work/rocecapd@.service"
unit=$work/rocecapd@example.service
if ! systemd-analyze verify --man=no "$unit" 2>"$work/verify.err"; then
  echo "FAIL: systemd-analyze verify failed:"
  cat "$work/verify.err"
  exit 1
fi
if [ -s "$work/verify.err" ]; then
  echo "FAIL: systemd-analyze verify warned:"
  cat "$work/verify.err"
  exit 1
fi
if ! systemd-analyze security --offline=true --threshold="$threshold" "$unit" >"$work/security.txt" 2>&1; then
  echo "FAIL: exposure above $((threshold / 10)).$((threshold % 10)):"
  cat "$work/security.txt"
  exit 1
fi
grep "Overall exposure" "$work/security.txt"
for key in Type=notify WatchdogSec= Restart=on-failure User=rocecap \
  "AmbientCapabilities=CAP_NET_RAW CAP_IPC_LOCK" LimitMEMLOCK=infinity StateDirectory= \
  RuntimeDirectory= ReadWritePaths= "RestartPreventExitStatus=1 2 5 6"; do
  grep -q "^$key" "$work/rocecapd@.service" || { echo "FAIL: $key missing from the unit"; exit 1; }
done
for key in PrivateDevices PrivateUsers; do
  ! grep -q "^$key=" "$work/rocecapd@.service" || { echo "FAIL: $key hides RDMA devices or breaks capabilities"; exit 1; }
done
"$rocecapd" --check-config "$src/systemd/example.yaml" >/dev/null

# The fleet agent's unit: verifies and scores the same; a restart of the agent must not stop
# the capture it started (KillMode=process), and rocecapd gets its privileges from it.
if [ -n "${4:-}" ]; then
  sed "s#/usr/bin/rocecap-agent#$4#g" "$src/systemd/rocecap-agent.service" >"$work/rocecap-agent.service"
  agent=$work/rocecap-agent.service
  systemd-analyze verify --man=no "$agent" 2>"$work/agent.err" || { cat "$work/agent.err"; exit 1; }
  [ ! -s "$work/agent.err" ] || { echo "FAIL: agent unit warned:"; cat "$work/agent.err"; exit 1; }
  systemd-analyze security --offline=true --threshold="$threshold" "$agent" >"$work/asec.txt" 2>&1 ||
    { echo "FAIL: agent unit exposure:"; cat "$work/asec.txt"; exit 1; }
  grep "Overall exposure" "$work/asec.txt"
  for key in KillMode=process Restart=always User=rocecap \
    "AmbientCapabilities=CAP_NET_RAW CAP_IPC_LOCK" LimitMEMLOCK=infinity; do
    grep -q "^$key" "$agent" || { echo "FAIL: $key missing from the agent unit"; exit 1; }
  done
fi
echo "units: OK"
