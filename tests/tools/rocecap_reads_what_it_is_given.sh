#!/usr/bin/env bash
# `rocecap` reads what it is given or says what is wrong (issue 23 items 18, 19):
#   an unknown subcommand, with or without --help      exit 1 naming it and the known ones
#   inspect FILE.pcap holding VDIF, without --vdif      exit 1: "VDIF frames ... give --vdif"
#   inspect --vdif FPS [--vtp] FILE.pcap                the pcap's VDIF streams, not bad_sync
#   verify --expect given a manifest, a pcap, {}         exit 2 naming what --expect takes
# Usage: rocecap_reads_what_it_is_given.sh ROCECAP
set -uo pipefail
rocecap=${1:?usage: $0 ROCECAP}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# expect RC TEXT ARGS...: `rocecap ARGS` exits RC with TEXT in its output (stdout + stderr).
expect() {
  local want_rc=$1 want=$2 rc=0
  shift 2
  timeout 60 "$rocecap" "$@" >"$tmp/out" 2>&1 || rc=$?
  if [ "$rc" != "$want_rc" ] || ! grep -qF -- "$want" "$tmp/out"; then
    fail "'rocecap $*' exited $rc (want $want_rc), output must hold '$want':"
    head -c 1500 "$tmp/out"
    return
  fi
  echo "ok: rocecap $*: exit $rc: $(grep -F -- "$want" "$tmp/out" | head -1 | cut -c1-120)"
}

known="gen, inspect, verify, recover, trigger, extract, tap, fleet, quicklook"
expect 1 "rocecap: unknown subcommand 'nosuch'; the subcommands are $known" nosuch --help
expect 1 "rocecap: unknown subcommand 'nosuch'; the subcommands are $known" nosuch
expect 1 "rocecap: unknown subcommand 'nosuch'; the subcommands are $known" --help nosuch
expect 1 "rocecap: unknown subcommand 'inpsect'; the subcommands are $known" inpsect x.pcap
expect 0 "Usage:" --help
expect 0 "rocecap inspect [OPTIONS] FILE" inspect --help

# Two VDIF threads with VTP, 300 frames each at 100 frames per second, 5 dropped per thread.
"$rocecap" gen --format vdif --frames-per-second 100 --vtp --threads 0,3 \
  --groups 239.17.0.1:36001 --sources 192.0.2.12 --frames 300 --payload-bytes 256 \
  --drop-every 60 --pcap "$tmp/vdif.pcap" >"$tmp/vdif.json" || fail "gen --format vdif"
expect 1 "VDIF frames (590 of 590 datagrams), not CODIF: give --vdif FPS" inspect "$tmp/vdif.pcap"
expect 0 "239.17.0.1:36001" inspect --vdif 100 --vtp "$tmp/vdif.pcap"
timeout 60 "$rocecap" inspect --vdif 100 --vtp --json "$tmp/vdif.pcap" >"$tmp/vdif-report.json" ||
  fail "inspect --vdif --vtp --json"
python3 - "$tmp/vdif-report.json" "$tmp/vdif.json" <<'PY' || fail "inspect --vdif --vtp: streams differ from the summary"
import json, sys
r, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["format"] == "pcap", r["format"]
got = {(s["thread_id"], s["frames"], s["missing"]) for s in r["streams"]}
def want_of(s):  # frames received; missing: those dropped before the last one received
    got = set(range(s["first_index"], s["first_index"] + s["frames"])) - set(s["dropped"])
    return (s["thread"], len(got), sum(1 for d in s["dropped"] if d < max(got)))
want = {want_of(s) for s in g["streams"]}
assert got == want and all(not s["rejected"] for s in r["streams"]), (got, want, r["streams"])
print("ok: inspect --vdif --vtp: per thread frames and gaps as generated:", sorted(got))
PY
# Without --vtp the 8 bytes in front are read as the VDIF header: no record is a frame.
expect 0 "frames 0 (unique 0)" inspect --vdif 100 "$tmp/vdif.pcap"

# verify --expect takes the JSON `rocecap gen` prints; anything else is named for what it is.
mkdir -p "$tmp/o/run"
echo '{"run": "run", "streams": [], "interfaces": [], "config": {"text": ""}}' >"$tmp/o/run/manifest.json"
expect 2 "is not a \`rocecap gen\` summary (no \"tool\": \"rocecap gen\"): it is a rocecapd manifest; give it as --manifest" \
  verify --manifest "$tmp/o/run/manifest.json" --expect "$tmp/o/run/manifest.json"
echo '{}' >"$tmp/empty.json"
expect 2 "is not a \`rocecap gen\` summary (no \"tool\": \"rocecap gen\"); --expect takes the JSON rocecap gen prints" \
  verify --manifest "$tmp/o/run/manifest.json" --expect "$tmp/empty.json"
expect 2 "is not JSON" verify --manifest "$tmp/o/run/manifest.json" --expect "$tmp/vdif.pcap"
expect 2 "is not a rocecapd manifest (no \"streams\" and \"interfaces\")" \
  verify --manifest "$tmp/vdif.json" --expect "$tmp/vdif.json"

[ "$fails" = 0 ] || exit 1
echo PASS
