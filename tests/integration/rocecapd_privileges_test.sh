#!/usr/bin/env bash
# rocecapd as an unprivileged user, as the systemd unit runs it (User=rocecap with
# AmbientCapabilities=CAP_NET_RAW CAP_IPC_LOCK), reproduced with setpriv in a network namespace:
#  - with the ambient capabilities it captures live multicast and writes its files;
#  - without them it stops before starting anything, exit 3, naming CAP_NET_RAW and how the
#    unit provides it.
# Usage: rocecapd_privileges_test.sh ROCECAPD ROCECAP   (root; SKIPPED otherwise)
set -euo pipefail
rocecapd=$1
rocecap=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns.sh
source "$here/netns.sh"
netns_require_root
command -v setpriv >/dev/null || { echo "SKIP: setpriv missing"; exit 77; }
NETNS_CMD_TIMEOUT=60
NETNS_MAX_SECONDS=120
work=$(mktemp -d)
chmod 0755 "$work"
netns_on_exit "rm -rf '$work'"
netns_up

mkdir -m 0777 "$work/out"
read -r a1 _ <<<"$NETNS_ANTENNA_ADDRS"
cat >"$work/run.yaml" <<YAML
run: { name: priv, duration: 4s }
capture:
  backend: pcap
  interfaces: [ { name: $NETNS_RECEIVER_IF, groups: [239.17.0.9:36009] } ]
streams:
  format: codif
  antennas: [ { name: ak01, source: $a1 } ]
output: { directory: $work/out, formats: [raw] }
metrics: { enabled: false }
YAML
chmod 0644 "$work/run.yaml"
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
caps=(--inh-caps=+net_raw,+ipc_lock --ambient-caps=+net_raw,+ipc_lock)

# Without the capabilities: a clear refusal before anything exists.
rc=0
netns_exec_receiver "${as_nobody[@]}" "$rocecapd" --config "$work/run.yaml" 2>"$work/nocap.log" ||
  rc=$?
[ "$rc" = 3 ] || { cat "$work/nocap.log"; echo "FAIL: exit $rc without CAP_NET_RAW, expected 3"; exit 1; }
grep -q "capture.backend pcap needs CAP_NET_RAW" "$work/nocap.log" &&
  grep -q "AmbientCapabilities=CAP_NET_RAW" "$work/nocap.log" ||
  { cat "$work/nocap.log"; echo "FAIL: the refusal does not name CAP_NET_RAW and the unit setting"; exit 1; }
[ ! -e "$work/out/priv" ] || { echo "FAIL: a refused start created the run directory"; exit 1; }
echo "without capabilities: exit 3, $(grep -o 'needs CAP_NET_RAW[^;]*' "$work/nocap.log")"

# With the ambient capabilities: a real capture.
netns_bg_receiver "${as_nobody[@]}" "${caps[@]}" "$rocecapd" --config "$work/run.yaml" \
  2>"$work/cap.log"
pid=$NETNS_BG_PID
for _ in $(seq 50); do grep -q "capturing" "$work/cap.log" && break; sleep 0.1; done
grep -q "capturing" "$work/cap.log" || { cat "$work/cap.log"; echo "FAIL: rocecapd did not start"; exit 1; }
netns_exec_sender "$rocecap" gen --groups 239.17.0.9:36009 --sources "$a1" --frames 200 \
  --rate 200 --payload-bytes 1024 --interface "$NETNS_SENDER_IF" --summary "$work/gen.json"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { cat "$work/cap.log"; echo "FAIL: rocecapd as nobody exited $rc"; exit 1; }
python3 - "$work/out/priv/manifest.json" <<'PY'
import json, os, pwd, sys
m = json.load(open(sys.argv[1]))
s = m["streams"][0]
assert m["state"] == "stopped", m["state"]
assert s["packets"] == 200, f"captured {s['packets']} of 200 frames"
owner = pwd.getpwuid(os.stat(sys.argv[1]).st_uid).pw_name
assert owner == "nobody", f"manifest owned by {owner}"
print(f"with ambient CAP_NET_RAW, CAP_IPC_LOCK as {owner}: {s['packets']} frames captured")
PY
