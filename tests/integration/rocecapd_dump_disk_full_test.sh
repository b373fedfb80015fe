#!/usr/bin/env bash
# Integration: a triggered dump whose disk is full (issue 23, item 2).
#
# output.directory is a 100 MiB tmpfs (mounted for this test only, lazily unmounted at exit);
# rocecapd retains 2 s of 2 CODIF streams and writes nothing continuously (output.formats: []).
# 4 s into the traffic a filler file takes every free block and a dump of a past second is
# triggered; then the filler is removed and a second dump is triggered.
# Expected: both triggers are accepted (the answer comes before anything is written); the
# first dump is "failed" in the manifest's trigger log with the cause (No space left on
# device), logged as an error, and leaves no file claiming data it does not hold; the second is
# "written" whole (every frame of its window); rocecapd exits 0 but does not call the run
# "complete": its last line counts the failed dump.
#
# usage: rocecapd_dump_disk_full_test.sh ROCECAPD ROCECAP   (as root; exits 77 otherwise)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root

e2e_workdir dump-disk-full
NETNS_CMD_TIMEOUT=100
NETNS_MAX_SECONDS=170
netns_up
mkdir "$work/out"
mount -t tmpfs -o size=100m,mode=0755 rocecap-test "$work/out"
netns_on_exit "cp -a '$work/out' '$work/out-copy' 2>/dev/null; umount -l '$work/out'"

rate=2000 frames=24000
E2E_GROUPS="239.17.0.1:36001"
E2E_SOURCES="192.0.2.11,192.0.2.12"
E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_RUN=dump E2E_DURATION=60s
e2e_config "$work/run.yaml"
sed -i 's/^  formats: .*/  formats: []/' "$work/run.yaml"
cat >>"$work/run.yaml" <<YAML
retention:
  retain: 2s
  frame_rate: $rate
  max_future: 2s
  formats: [raw]
YAML
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
wrapper=$E2E_PID
rocecapd=$(pgrep -P "$wrapper" -x rocecapd)
netns_on_exit "kill $rocecapd 2>/dev/null"
sock=$work/out/dump/trigger.sock

# CODIF time = wall time, as in rocecapd_dump_test.sh: 1 s periods of $rate 1088-byte frames.
now=$(date -u +%s) year=$(date -u +%Y) month=$(date -u +%-m)
epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
gen=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames" --rate "$rate"
  --payload-bytes 1024 --nchan 2 --nbits 4 --complex --period 1 --total-samples $((512 * rate))
  --epoch "$epoch" --start-seconds $((now - epoch_start)) --station AT --seed 7)
netns_exec_sender "$ROCECAP" "${gen[@]}" --interface "$NETNS_SENDER_IF" >/dev/null \
  2>"$work/gen.err" &
gen_pid=$!

# A dump of the second before `now`; waits (bounded) until rocecapd logs its outcome.
dump() { # label -> the answer in $work/<label>.json
  local t ms=1000000 i
  t=$(date -u +%s%N)
  "$ROCECAP" trigger --socket "$sock" --start $((t - 1500 * ms)) --end $((t - 500 * ms)) \
    --label "$1" >"$work/$1.json" || { echo "FAIL: trigger $1 refused:"; cat "$work/$1.json"; exit 1; }
  for ((i = 0; i < 100; i++)); do
    grep -q "dump [0-9]*-$1 \(written\|failed\)" "$work/rocecapd.log" && return 0
    sleep 0.1
  done
  echo "FAIL: no outcome of dump $1 logged within 10 s"
  exit 1
}
sleep 4
dd if=/dev/zero of="$work/out/filler" bs=1M 2>/dev/null || true
echo "disk full: $(df -k --output=avail "$work/out" | tail -1) KiB free"
dump full
rm -f "$work/out/filler"
echo "disk freed: $(df -k --output=avail "$work/out" | tail -1) KiB free"
dump freed
wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
kill -TERM "$rocecapd"
e2e_wait_exit "$wrapper" 30
grep "dump 000" "$work/rocecapd.log" || true
tail -1 "$work/rocecapd.log"
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}
[ "$E2E_RC" = 0 ] || bad "rocecapd exited $E2E_RC"
grep -q "error dump 0001-full failed: .*No space left on device" "$work/rocecapd.log" ||
  bad "the failed dump was not logged as an error with its cause"
grep -q "run dump complete" "$work/rocecapd.log" && bad "a run whose dump failed is called complete"
grep -q "run dump ended with 1 triggered dump failed" "$work/rocecapd.log" ||
  bad "the last line does not count the failed dump"
python3 - "$work/out/dump" "$((1024 + 64))" <<'PY' || fail=1
import json, os, sys
run, frame = sys.argv[1], int(sys.argv[2])
m = json.load(open(os.path.join(run, "manifest.json")))
t = [x for x in m["triggers"] if x.get("ok")]
fails = []
print("triggers:", [(x["label"], x["state"], x.get("error")) for x in t])
if [x["label"] for x in t] != ["full", "freed"]:
    sys.exit(f"FAIL: triggers {t}")
full, freed = t
if full["state"] != "failed" or "No space left on device" not in full.get("error", ""):
    fails.append(f"the dump on the full disk is {full['state']}: {full.get('error')}")
# Nothing on disk claims data it does not hold: every file of the failed dump is listed with
# its size in its dump.json (when that could be written) or absent.
d = os.path.join(run, "dumps", "0001-full")
listed = {}
if os.path.exists(os.path.join(d, "dump.json")):
    dj = json.load(open(os.path.join(d, "dump.json")))
    if dj["state"] != "failed": fails.append(f"0001-full/dump.json says {dj['state']}")
    listed = {f["path"]: f["bytes"] for s in dj["streams"] for f in s["files"]}
for n in os.listdir(d) if os.path.isdir(d) else []:
    p = os.path.join(d, n)
    if n != "dump.json" and listed.get(p) != os.path.getsize(p):
        fails.append(f"{p}: {os.path.getsize(p)} bytes, not listed as such")
if freed["state"] != "written":
    fails.append(f"the dump after the disk freed is {freed['state']}: {freed.get('error')}")
else:
    dj = json.load(open(freed["manifest"]))
    for s in dj["streams"]:
        w = s["window"]
        got = sum(os.path.getsize(f["path"]) for f in s["files"])
        print(f"freed {s['antenna']}: window {w['frames']} frames, {s['frames']} + "
              f"{s['fill_frames']} fill written, {got} bytes")
        if s["frames"] + s["fill_frames"] != w["frames"] or got != w["frames"] * frame:
            fails.append(f"freed {s['antenna']}: not every frame of the window was written")
for f in fails: print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
[ "$fail" = 0 ] || exit 1
passed=1
echo "PASS"
