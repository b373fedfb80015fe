#!/usr/bin/env bash
# Integration: triggered dumps (doc/dumps.md) from a live rocecapd (backend pcap) while
# `rocecap gen` traffic runs over a veth, CODIF time close to the wall clock.
#
# rocecapd retains 2 s of each stream and also writes the continuous raw files (the existing
# live tests check those against the generator byte for byte). While the traffic runs, two
# overlapping triggers are sent with `rocecap trigger`: one for a window in the past, one that
# reaches 0.4 s into the future. Then: both are accepted and served; every dump file is exactly
# the continuous raw file's bytes of its window (fill frames where the generator dropped
# frames), whole (frames + fill frames = the window); a bad label is refused with exit 1 and
# its error; the trigger socket has mode 0660; the run manifest lists the triggers.
#
# With SOFTVERBS_LIB_DIR the same with capture.backend verbs through softverbs on the receiver's
# veth: retained slots are ring slots the receive queue does not get back until they age out.
#
# usage: rocecapd_dump_test.sh ROCECAPD ROCECAP [SOFTVERBS_LIB_DIR]. As root (exits 77 otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP [SOFTVERBS_LIB_DIR]}
ROCECAPD_BIN=$ROCECAPD
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP [SOFTVERBS_LIB_DIR]}
SV_LIB=${3:-}
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root

[ -z "$SV_LIB" ] || [ -e "$SV_LIB/libibverbs.so.1" ] || { echo "FAIL: no softverbs in $SV_LIB"; exit 1; }

e2e_workdir dump-test
NETNS_CMD_TIMEOUT=100
NETNS_MAX_SECONDS=170
netns_up
if [ -n "$SV_LIB" ]; then
  e2e_softverbs_wrapper "sv0=$NETNS_RECEIVER_IF" real_net
  E2E_BACKEND=verbs E2E_DEVICE=sv0
fi

rate=2000 # frames per second per stream; one CODIF period (1 s) holds 2000 frames
frames=12000
E2E_GROUPS="239.17.0.1:36001"
E2E_SOURCES="192.0.2.11,192.0.2.12"
E2E_FOREIGN=""
E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_FORMATS=raw E2E_RUN=dump E2E_DURATION=60s
e2e_config "$work/run.yaml"
cat >>"$work/run.yaml" <<YAML
retention:
  retain: 2s
  frame_rate: $rate
  max_future: 2s
  write_rate: 64MiB
  formats: [raw]
YAML
"$ROCECAPD" --check-config "$work/run.yaml" | grep '^retention' || { echo "FAIL: no retention plan in the summary"; exit 1; }
# No daemon yet: `rocecap trigger --config` finds the socket from the run file, reaches nobody.
rc=0
"$ROCECAP" trigger --config "$work/run.yaml" --start 1 --end 2 >/dev/null 2>"$work/none.err" || rc=$?
if [ "$rc" != 3 ] || ! grep -q "cannot reach rocecapd's trigger socket $work/out/dump/trigger.sock" "$work/none.err"; then
  echo "FAIL: trigger without a daemon exited $rc:"
  cat "$work/none.err"
  exit 1
fi
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
wrapper=$E2E_PID
rocecapd=$(pgrep -P "$wrapper" -x rocecapd)
netns_on_exit "kill $rocecapd 2>/dev/null"
sock=$work/out/dump/trigger.sock
[ "$(stat -c %a "$sock")" = 660 ] || { echo "FAIL: trigger socket mode $(stat -c %a "$sock"), not 660"; exit 1; }

# CODIF time = wall time (within the second the generator starts in): epoch 2 x (year - 2000)
# (+1 from July), seconds since its start. 1024-byte payloads of 2 x 4-bit complex channels:
# 512 samples per frame, one 1 s period of $rate frames.
now=$(date -u +%s)
year=$(date -u +%Y) month=$(date -u +%-m)
epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
gen=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames" --rate "$rate"
  --payload-bytes 1024 --nchan 2 --nbits 4 --complex --period 1 --total-samples $((512 * rate))
  --epoch "$epoch" --start-seconds $((now - epoch_start)) --station AT --seed 7 --drop-every 97)
netns_exec_sender "$ROCECAP" "${gen[@]}" --interface "$NETNS_SENDER_IF" --summary "$work/sent.json" \
  >/dev/null 2>"$work/gen.err" &
gen_pid=$!
sleep 4 # 4 s of traffic: 2 s retained, a window 1.5 s back is in it
t=$(date -u +%s%N)
ms=1000000
set +e
"$ROCECAP" trigger --socket "$sock" --start $((t - 1500 * ms)) --end $((t - 500 * ms)) \
  --label past >"$work/a.json"
rc_a=$?
"$ROCECAP" trigger --config "$work/run.yaml" --start $((t - 900 * ms)) --end $((t + 400 * ms)) \
  --label overlap >"$work/b.json"
rc_b=$?
"$ROCECAP" trigger --socket "$sock" --start $((t - 900 * ms)) --end $((t - 800 * ms)) \
  --label 'a/b' >"$work/bad.json"
rc_bad=$?
set -e
if [ "$rc_a" != 0 ] || [ "$rc_b" != 0 ]; then
  echo "FAIL: triggers exited $rc_a, $rc_b:"
  cat "$work/a.json" "$work/b.json"
  exit 1
fi
if [ "$rc_bad" != 1 ] || ! grep -q "contains '/'" "$work/bad.json"; then
  echo "FAIL: a label with / was not refused (exit $rc_bad):"
  cat "$work/bad.json"
  exit 1
fi
wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
for d in 0001-past 0002-overlap; do
  for ((i = 0; i < 100; i++)); do [ -f "$work/out/dump/dumps/$d/dump.json" ] && break; sleep 0.1; done
done
kill -TERM "$rocecapd"
e2e_wait_exit "$wrapper" 30
[ "$E2E_RC" = 0 ] || { echo "FAIL: rocecapd exited $E2E_RC"; cat "$work/rocecapd.log"; exit 1; }

python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
run = os.path.join(work, "out", "dump")
manifest = json.load(open(os.path.join(run, "manifest.json")))
frame = 1024 + 64
raw = {}  # antenna -> (first index, bytes) of the continuous raw file
for s in manifest["streams"]:
    files = [f for f in s["files"] if f["format"] == "raw"]
    assert len(files) == 1, files
    path = files[0]["path"]
    path = path if os.path.isabs(path) else os.path.join(work, "out", path)
    raw[s["antenna"]] = (s["first_frame"]["index"], open(path, "rb").read())
checked = 0
for d in ("0001-past", "0002-overlap"):
    m = json.load(open(os.path.join(run, "dumps", d, "dump.json")))
    for s in m["streams"]:
        w = s["window"]
        assert not s["not_retained"], (d, s["not_retained"])
        assert "not_written" not in s, (d, s.get("not_written"))
        assert s["frames"] + s["fill_frames"] == w["frames"], (d, s)
        assert s["fill_frames"] > 0, (d, "the generator drops every 97th frame")
        first, data = raw[s["antenna"]]
        want = data[(w["first_frame"] - first) * frame:(w["last_frame"] + 1 - first) * frame]
        got = open(s["files"][0]["path"], "rb").read()
        assert len(want) == w["frames"] * frame, (d, "continuous file too short")
        assert got == want, (d, s["antenna"], "dump differs from the continuous raw file")
        checked += 1
assert checked == 4, checked
t = manifest.get("triggers")
assert t and [x.get("label") for x in t if x.get("ok")] == ["past", "overlap"], t
assert any(x.get("refused") == "bad_label" for x in t), t
print("dumps: 2 triggers x 2 streams byte-identical to the continuous raw files")
PY
passed=1
echo "PASS"
