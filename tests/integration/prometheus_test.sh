#!/usr/bin/env bash
# Integration: a real Prometheus server scrapes rocecapd.
#
# rocecapd replays `rocecap gen --pcap` traffic (backend pcap-file, recorded pace, ~15 s) and
# serves metrics on 127.0.0.1:<free port>; Prometheus (1 s scrape interval, the alert rules
# loaded) scrapes it. Checks: up == 1; every Grafana panel expression returns data; after the
# run (rocecapd keeps serving with --metrics-linger) the received/lost/duplicate counts in
# Prometheus equal the manifest's. Needs no privileges; skipped (77) without prometheus.
#
# usage: prometheus_test.sh ROCECAPD ROCECAP SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP SOURCE_DIR}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP SOURCE_DIR}
SRC=${3:?usage: $0 ROCECAPD ROCECAP SOURCE_DIR}
command -v prometheus >/dev/null || { echo "SKIP: prometheus not installed"; exit 77; }
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-prometheus-test.XXXXXX)
passed=0
rocecapd_pid=""
prom_pid=""
finish() {
  [ -n "$rocecapd_pid" ] && kill "$rocecapd_pid" 2>/dev/null && wait "$rocecapd_pid" 2>/dev/null
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
  true
}
trap finish EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
metrics_port=$(free_port)
prom_port=$(free_port)
prom=http://127.0.0.1:$prom_port

"$ROCECAP" gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --duration 15 --rate 200 \
  --payload-bytes "$E2E_PAYLOAD" --seed "$E2E_SEED" --drop 0.01 --duplicate 0.005 \
  --pcap "$work/sent.pcap" --summary "$work/summary.json" >/dev/null
E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/out \
  E2E_FORMATS="raw, codifhdr" e2e_config "$work/run.yaml"
sed -i "s/^  enabled: false$/  listen: 127.0.0.1:$metrics_port/; s/^  poll_mode: event$/  replay_pace: recorded/" \
  "$work/run.yaml"

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$SRC/dashboards/rocecap-alerts.yaml"]
scrape_configs:
  - job_name: rocecap
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --storage.tsdb.retention.time=1h --web.listen-address="127.0.0.1:$prom_port" \
  >"$work/prometheus.log" 2>&1 &
prom_pid=$!

"$ROCECAPD" --config "$work/run.yaml" --metrics-linger 60 2>"$work/rocecapd.log" &
rocecapd_pid=$!

fail() {
  echo "FAIL: $*"
  tail -n 20 "$work/rocecapd.log" "$work/prometheus.log"
  exit 1
}
python3 "$here/prometheus_check.py" "$prom" wait-up 30 || fail "rocecapd never up in Prometheus"
# Panels with rate() need a few samples of traffic.
python3 "$here/prometheus_check.py" "$prom" wait-expr \
  'sum(rate(rocecap_stream_received_packets_total[10s])) > 0 and on () count_over_time(up{job="rocecap"}[10s]) >= 5' 30 ||
  fail "no traffic seen through Prometheus"
# The VTP panel's series exist only in VDIF runs with vtp (MetricsVtp.* checks them); the
# Consumers row's only in runs with a consumers section (doc/consumers.md), per consumer only
# while one is attached.
python3 "$here/prometheus_check.py" "$prom" dashboard "$SRC/dashboards/rocecap-dashboard.json" \
  rocecap_vtp_ rocecap_consumer rocecap_ring_consumer_pinned ||
  fail "dashboard panels without data"

# The replay ends; rocecapd lingers with its final counts. Wait for a scrape of them.
python3 "$here/prometheus_check.py" "$prom" wait-expr 'rocecap_run_state{state="stopped"} == 1' 60 ||
  fail "run never reported stopped"
manifest=$work/out/e2e/manifest.json
python3 -c "import json,sys; sys.exit(json.load(open('$manifest'))['state'] != 'stopped')" ||
  fail "manifest not final"
python3 "$here/prometheus_check.py" "$prom" manifest "$manifest" || fail "Prometheus differs from the manifest"

kill -TERM "$rocecapd_pid"
rc=0
wait "$rocecapd_pid" || rc=$?
rocecapd_pid=""
[ "$rc" = 0 ] || fail "rocecapd exited $rc after SIGTERM during linger"
passed=1
echo "PASS: Prometheus scraped rocecapd; dashboard and manifest agree"
