#!/usr/bin/env bash
# Offline checks of dashboards/: the alert rules parse and pass their unit tests; the Grafana
# dashboard has its variables, units and datasource, and every panel expression parses.
# Exits 77 (skipped) where promtool is not installed.
#
# usage: check_dashboards.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: $0 SOURCE_DIR}
command -v promtool >/dev/null || { echo "SKIP: promtool not installed"; exit 77; }
work=$(mktemp -d /tmp/rocecap-dashboards.XXXXXX)
trap 'rm -rf "$work"' EXIT

promtool check rules "$src/dashboards/rocecap-alerts.yaml"
promtool test rules "$src/tests/dashboards/alerts_test.yaml"
python3 "$src/tests/dashboards/dashboard_exprs.py" "$src/dashboards/rocecap-dashboard.json" \
  check "$work/panels.yaml"
promtool check rules "$work/panels.yaml"
echo "dashboards: OK"
