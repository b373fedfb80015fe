#!/usr/bin/env bash
# rocecapd's log while it runs: a status line for the run and one per stream every
# --status-interval, a final summary per stream, and SIGHUP starting new files.
# Replays a generated pcap at its recorded pace (about 3 s), so no privileges are needed.
# Usage: rocecapd_status_log.sh ROCECAPD ROCECAP
set -euo pipefail
rocecapd=$1
rocecap=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- log" >&2
  cat "$work/log" >&2 || true
  exit 1
}

"$rocecap" gen --groups 239.17.0.1:36001 --sources 192.0.2.11,192.0.2.12 --frames 300 \
  --rate 100 --payload-bytes 1024 --seed 3 --drop-every 50 --pcap "$work/in.pcap" \
  --summary "$work/gen.json" >/dev/null
cat >"$work/run.yaml" <<YAML
run: { name: status }
capture:
  backend: pcap-file
  pcap_file: $work/in.pcap
  replay_pace: recorded
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams:
  format: codif
  antennas: [ { name: ak01, source: 192.0.2.11 }, { name: ak02, source: 192.0.2.12 } ]
output: { directory: $work/out, formats: [raw] }
metrics: { enabled: false }
YAML

"$rocecapd" --config "$work/run.yaml" --status-interval 0.5 2>"$work/log" &
pid=$!
sleep 1.6
kill -HUP "$pid"
wait "$pid" || fail "rocecapd exited with $?"

run_lines=$(grep -c 'status: [0-9]* pkt/s, .* MB/s; [0-9]* packets, [0-9]* lost' "$work/log" || true)
[ "$run_lines" -ge 3 ] || fail "expected at least 3 run status lines, saw $run_lines"
for ant in ak01 ak02; do
  grep -q "status: rec0 239.17.0.1:36001 $ant: [0-9]* pkt/s, [0-9]* lost, ring [0-9]*%" \
    "$work/log" || fail "no per-stream status line for $ant"
  # 300 frames, every 50th dropped: 6 lost, of which the first (index 0) precedes the stream.
  grep -q "stream rec0 239.17.0.1:36001 $ant: 294 packets, .* 5 lost" "$work/log" ||
    fail "final summary for $ant does not say 294 packets and 5 lost"
done
grep -q "SIGHUP: starting new files" "$work/log" || fail "SIGHUP was not logged"
files=$(find "$work/out/status" -name '*ak01*.codif' | wc -l)
[ "$files" -eq 2 ] || fail "SIGHUP should have started a second ak01 file, found $files"
echo "PASS: status lines, final summary and SIGHUP rotation"
