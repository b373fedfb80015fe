#!/usr/bin/env bash
# rocecapd refuses what it cannot do before it starts anything: exit 3 with a message naming the
# config key, and no run directory. Needs no privileges (pcap-file backend).
# Usage: rocecapd_startup_errors.sh ROCECAPD ROCECAP
set -euo pipefail
rocecapd=$1
rocecap=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$rocecap" gen --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames 10 --payload-bytes 1024 \
  --pcap "$work/in.pcap" --summary /dev/null
run_file() { # $1: name, $2: extra capture lines
  cat >"$work/$1.yaml" <<YAML
run: { name: $1 }
capture:
  backend: pcap-file
  pcap_file: $work/in.pcap
$2
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams:
  antennas: [ { name: ak01, source: 192.0.2.11 } ]
output: { directory: $work/out, formats: [raw] }
metrics: { enabled: false }
YAML
}
expect_refusal() { # $1: run name, $2: text the message must hold
  local rc=0
  "$rocecapd" --config "$work/$1.yaml" 2>"$work/$1.log" || rc=$?
  if [ "$rc" != 3 ] || ! grep -qF "$2" "$work/$1.log" || [ -e "$work/out/$1" ]; then
    cat "$work/$1.log" >&2
    echo "FAIL: $1: exit $rc (want 3), message must hold '$2', no run directory" >&2
    exit 1
  fi
  echo "ok: $1 refused: $(grep -o "cannot start: .*" "$work/$1.log" | cut -c1-100)"
}
run_file gpu "  payload_memory: gpu"
expect_refusal gpu "capture.payload_memory gpu: the pcap backends copy each frame with the CPU"
# The same file with auto runs, and the manifest says which memory and why.
run_file auto "  payload_memory: auto"
"$rocecapd" --config "$work/auto.yaml" 2>"$work/auto.log"
python3 - "$work/out/auto/manifest.json" <<'PY'
import json, sys
pm = json.load(open(sys.argv[1]))["payload_memory"]
assert pm == {"kind": "host", "reason": "the pcap backends copy each frame into host memory"}, pm
print("ok: auto runs with payload memory", pm)
PY
