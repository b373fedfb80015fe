#!/usr/bin/env python3
"""Checks a real Prometheus server that scrapes rocecapd (used by prometheus_test.sh).

usage: prometheus_check.py URL wait-up TIMEOUT
       prometheus_check.py URL wait-expr EXPR TIMEOUT
       prometheus_check.py URL dashboard DASHBOARD.json [NOT_EXPORTED_PREFIX...]
       prometheus_check.py URL manifest MANIFEST.json
Exit 0 when the check holds, 1 (with what was found) when not.
"""
import json
import os
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "dashboards"))
import dashboard_exprs  # noqa: E402


def query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]["result"]


def wait_for(url, expr, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if query(url, expr):
                return 0
        except OSError:
            pass  # server still starting
        time.sleep(0.5)
    print(f"FAIL: {expr} returned nothing within {timeout} s")
    return 1


def check_dashboard(url, path, not_exported=()):
    """Every panel expression returns data, except those over series that this run's
    configuration does not export (metric name prefixes in `not_exported`, e.g. the VTP
    counters of VDIF runs), which are listed as skipped."""
    with open(path) as f:
        dash = json.load(f)
    failed = 0
    for title, ref, expr in dashboard_exprs.expressions(dash, "10s"):
        if any(p in expr for p in not_exported):
            print(f"SKIP: panel {title!r} {ref}: not exported by this run: {expr}")
            continue
        result = query(url, expr)
        if not result:
            print(f"FAIL: panel {title!r} {ref}: no data for {expr}")
            failed += 1
    print(f"dashboard: {len(dashboard_exprs.expressions(dash))} expressions, {failed} without data")
    return 1 if failed else 0


def check_manifest(url, path):
    with open(path) as f:
        manifest = json.load(f)
    failed = 0
    for field, metric in (("packets", "rocecap_stream_received_packets_total"),
                          ("bytes", "rocecap_stream_received_bytes_total"),
                          ("lost", "rocecap_stream_lost_frames_total"),
                          ("duplicate", "rocecap_stream_duplicate_frames_total")):
        got = {}
        for s in query(url, metric):
            m = s["metric"]
            got[(m["interface"], m["group"], m["antenna"])] = float(s["value"][1])
        for s in manifest["streams"]:
            key = (s["interface"], f"{s['group']}:{s['port']}", s["antenna"])
            if got.get(key) != float(s[field]):
                print(f"FAIL: {metric}{key} = {got.get(key)}, manifest {field} = {s[field]}")
                failed += 1
    print(f"manifest: {len(manifest['streams'])} streams compared, {failed} differences")
    return 1 if failed else 0


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    url, what = argv[1], argv[2]
    if what == "wait-up":
        return wait_for(url, 'up{job="rocecap"} == 1', float(argv[3]))
    if what == "wait-expr":
        return wait_for(url, argv[3], float(argv[4]))
    if what == "dashboard":
        return check_dashboard(url, argv[3], argv[4:])
    if what == "manifest":
        return check_manifest(url, argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
