#!/usr/bin/env bash
# Integration: dispersion-aware dumps (doc/dumps.md, "Dispersed events") from a live rocecapd
# (backend pcap) while `rocecap gen` sends 4 groups at different sky frequencies (1200-1456 MHz,
# 64 MHz each, 4 channels) over a veth, CODIF time close to the wall clock, with a dispersed
# pulse in the payloads (`rocecap gen --pulse-at`).
#
# Twice, once at DM 500 and once at DM 2000 (a run each): the pulse is placed 2 s into the
# traffic, and a trigger with that dm asks for [pulse - 10 ms, pulse + 30 ms) at the top of the
# band (the default reference frequency) 0.2 s after it, before the lower groups' part arrives.
# Then, per stream: the dump's window is exactly the frames the formula gives (computed here
# with exact fractions from the run file's frequencies, independently of rocecapd), the dump
# file is the continuous raw file's bytes of that window, and every frame of the continuous
# raw file holding a pulse sample (found by its amplitude, and as the generator's summary says)
# lies inside the dump. The windows move later from the top group to the bottom one, by the
# sweep. dump.json records the formula's inputs; the run manifest each stream's frequencies.
# `rocecap trigger --status` follows the dump from not yet done to written with dump.json's
# counts, and names a dump that does not exist.
#
# usage: rocecapd_dump_dm_test.sh ROCECAPD ROCECAP. As root (exits 77 otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAPD_BIN=$ROCECAPD
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=netns.sh
source "$here/netns.sh"
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"
netns_require_root

e2e_workdir dump-dm-test
NETNS_CMD_TIMEOUT=60
NETNS_MAX_SECONDS=170
netns_up

rate=1000 # frames per second per stream: 1 ms frames, one 1 s CODIF period of 1000 frames
frames=7000
E2E_GROUPS="239.17.0.1:36001,239.17.0.2:36002,239.17.0.3:36003,239.17.0.4:36004"
E2E_SOURCES="192.0.2.11"
bands="1392:1456,1328:1392,1264:1328,1200:1264" # MHz, in E2E_GROUPS order: the top group first
E2E_EXTRA_STREAMS="  frequencies:
    - { group: 239.17.0.1:36001, centre_mhz: 1424, bandwidth_mhz: 64 }
    - { group: 239.17.0.2:36002, channels_mhz: [1328, 1344, 1360, 1376], channel_bandwidth_mhz: 16 }
    - { group: 239.17.0.3:36003, channels_mhz: [1328, 1312, 1296, 1280], channel_bandwidth_mhz: 16, sideband: lower }
    - { group: 239.17.0.4:36004, centre_mhz: 1232, bandwidth_mhz: 64 }"
E2E_IFACE=$NETNS_RECEIVER_IF E2E_FORMATS=raw E2E_DURATION=60s

# One run at `dm`: run directory $work/out/dm$dm.
run_at_dm() {
  local dm=$1 run=dm$1
  E2E_OUT=$work/out E2E_RUN=$run e2e_config "$work/$run.yaml"
  cat >>"$work/$run.yaml" <<YAML
retention:
  retain: 4s
  frame_rate: $rate
  max_future: 4s
  write_rate: 64MiB
  formats: [raw]
YAML
  e2e_start_rocecapd netns_bg_receiver "$work/$run.log" "$work/$run.yaml"
  local wrapper=$E2E_PID rocecapd
  rocecapd=$(pgrep -P "$wrapper" -x rocecapd)
  netns_on_exit "kill $rocecapd 2>/dev/null"
  # CODIF time = wall time: epoch 2 x (year - 2000) (+1 from July), seconds since its start.
  # 1024-byte payloads of 4 real 8-bit channels: 256 samples per frame; a tone keeps the other
  # samples within +-56, so the pulse's +-100 stands out.
  local now year month epoch epoch_start
  now=$(date -u +%s) year=$(date -u +%Y) month=$(date -u +%-m)
  epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
  epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
  local gen=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames" --rate "$rate"
    --payload-bytes 1024 --nchan 4 --nbits 8 --period 1 --total-samples $((256 * rate))
    --epoch "$epoch" --start-seconds $((now - epoch_start)) --station DM --tone 0.1
    --frequencies "$bands" --pulse-at 2 --pulse-width 0.02 --pulse-dm "$dm")
  netns_exec_sender "$ROCECAP" "${gen[@]}" --interface "$NETNS_SENDER_IF" \
    --summary "$work/$run.sent.json" >/dev/null 2>"$work/$run.gen.err" &
  local gen_pid=$!
  # The pulse crosses the top of the band 2 s after the first frame (the start of second
  # `now`); ask 0.2 s after that: the lower groups' part (0.46 s later at DM 500) comes later.
  local pulse_ns=$(((now + 2) * 1000000000)) ms=1000000
  while [ "$(date -u +%s%N)" -lt $((pulse_ns + 200 * ms)) ]; do sleep 0.05; done
  "$ROCECAP" trigger --config "$work/$run.yaml" --start $((pulse_ns - 10 * ms)) \
    --end $((pulse_ns + 30 * ms)) --dm "$dm" --label pulse >"$work/$run.trigger.json" || {
    echo "FAIL: the DM $dm trigger was refused:"
    cat "$work/$run.trigger.json"
    exit 1
  }
  # Its status while the lower groups' frames are still to come, then once written.
  "$ROCECAP" trigger --config "$work/$run.yaml" --status 1 >"$work/$run.status1.json" || {
    echo "FAIL: rocecap trigger --status 1 exited $?:"
    cat "$work/$run.status1.json"
    exit 1
  }
  wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/$run.gen.err"; exit 1; }
  local i
  for ((i = 0; i < 100; i++)); do [ -f "$work/out/$run/dumps/0001-pulse/dump.json" ] && break; sleep 0.1; done
  "$ROCECAP" trigger --config "$work/$run.yaml" --status 1 >"$work/$run.status2.json"
  local rc=0
  "$ROCECAP" trigger --config "$work/$run.yaml" --status 2 >"$work/$run.status9.json" || rc=$?
  if [ "$rc" != 1 ] || ! grep -q '"unknown_dump"' "$work/$run.status9.json"; then
    echo "FAIL: --status of a dump that does not exist exited $rc:"
    cat "$work/$run.status9.json"
    exit 1
  fi
  kill -TERM "$rocecapd"
  e2e_wait_exit "$wrapper" 30
  [ "$E2E_RC" = 0 ] || { echo "FAIL: rocecapd exited $E2E_RC"; cat "$work/$run.log"; exit 1; }
  echo "$pulse_ns" >"$work/$run.pulse_ns"
}

check_run() {
  python3 - "$work" "$1" <<'PY'
import json, math, os, sys
from fractions import Fraction as F
work, dm_text = sys.argv[1], sys.argv[2]
run = "dm" + dm_text
out = os.path.join(work, "out", run)
dm = F(dm_text)
pulse_ns = int(open(os.path.join(work, run + ".pulse_ns")).read())
manifest = json.load(open(os.path.join(out, "manifest.json")))
sent = json.load(open(os.path.join(work, run + ".sent.json")))
dump = json.load(open(os.path.join(out, "dumps", "0001-pulse", "dump.json")))
frame, ns = 1024 + 64, 10**9
# The run file's frequencies, worked out here: (low, high) MHz per group.
bands = {"239.17.0.1:36001": (1392, 1456), "239.17.0.2:36002": (1328, 1392),
         "239.17.0.3:36003": (1264, 1328), "239.17.0.4:36004": (1200, 1264)}
ref = F(1456)
def delay_ns(f):  # 4.148808 ms x DM x (f^-2 - ref^-2), f in GHz
    return F("4.148808e-3") * dm * ((1000 / F(f)) ** 2 - (1000 / ref) ** 2) * ns
# rocecap trigger --status: before the lower groups' frames came, not yet done; then written,
# with dump.json's counts.
early = json.load(open(os.path.join(work, run + ".status1.json")))
late = json.load(open(os.path.join(work, run + ".status2.json")))
assert early["state"] in ("queued", "writing"), early["state"]
assert early["progress"]["streams_done"] < 4, early["progress"]
assert late["state"] == "written", late
assert late["progress"]["frames"] + late["progress"]["fill_frames"] == sum(
    s["frames"] + s["fill_frames"] for s in dump["streams"]), (late["progress"], dump["streams"])
d = dump["dispersion"]
assert d["dm"] == float(dm) and d["ref_freq_mhz"] == 1456 and d["ref_freq_is_top_of_band"], d
assert d["constant_ms"] == 4.148808, d
# The continuous raw file per group, and its first frame index.
raw = {}  # group -> (first frame index, its Unix ns, bytes) of the continuous raw file
for s in manifest["streams"]:
    g = f'{s["group"]}:{s["port"]}'
    assert s["frequency_mhz"] == {"low": bands[g][0], "high": bands[g][1]}, s
    files = [f for f in s["files"] if f["format"] == "raw"]
    path = files[0]["path"]
    path = path if os.path.isabs(path) else os.path.join(work, "out", path)
    raw[g] = (s["first_frame"]["index"], s["first_frame"]["unix_ns"], open(path, "rb").read())
pulses = {f'{p["group"]}:{p["port"]}': p for p in sent["pulse"]["groups"]}
# Bytes (8-bit two's complement samples) of magnitude >= 90 -> 1, others -> 0.
LOUD = bytes(1 if abs(b - 256 if b > 127 else b) >= 90 else 0 for b in range(256))
firsts = []
for s in dump["streams"]:
    g = s["group"]
    lo, hi = bands[g]
    # Frame indices count 1 ms frames from the CODIF epoch; the stream's window is
    # [start + delay(high), end + delay(low)), start rounded down, end up to the ns.
    first0, t0, data = raw[g]
    start = pulse_ns - 10 * 10**6 + math.floor(delay_ns(hi))
    end = pulse_ns + 30 * 10**6 + math.ceil(delay_ns(lo))
    w = s["window"]
    # 1 ms frames: the frame holding Unix time t is first0 + (t - t0) // 1 ms.
    want_first = first0 + (start - t0) // 10**6
    want_last = first0 + (end - 1 - t0) // 10**6
    assert (w["first_frame"], w["last_frame"]) == (want_first, want_last), (g, w, want_first, want_last)
    assert not s["not_retained"] and "not_written" not in s, s
    assert s["frames"] + s["fill_frames"] == w["frames"], s
    got = open(s["files"][0]["path"], "rb").read()
    want = data[(w["first_frame"] - first0) * frame:(w["last_frame"] + 1 - first0) * frame]
    assert len(want) == w["frames"] * frame and got == want, (g, "dump differs from the raw file")
    # The pulse: frames of the continuous raw file with a sample of magnitude >= 90.
    loud = data.translate(LOUD)
    hits = [first0 + k for k in range(len(data) // frame)
            if loud.find(1, k * frame + 64, (k + 1) * frame) >= 0]
    p = pulses[g]
    assert hits and hits[0] == p["first_index"] and hits[-1] == p["last_index"], (g, hits[:3], p)
    assert w["first_frame"] <= hits[0] and hits[-1] <= w["last_frame"], (g, "pulse outside the dump", hits[0], hits[-1], w)
    firsts.append((lo, w["first_frame"], hits[0]))
    print(f"DM {dm_text} {g} {lo}-{hi} MHz: window frames {w['first_frame']}..{w['last_frame']}, "
          f"pulse frames {hits[0]}..{hits[-1]}")
firsts.sort(reverse=True)
assert [f[1] for f in firsts] == sorted(f[1] for f in firsts), firsts  # lower: later
assert firsts[-1][2] - firsts[0][2] >= int(delay_ns(1264) / 10**6) - 1, firsts
PY
}

for dm in 500 2000; do
  run_at_dm "$dm"
  check_run "$dm" || { echo "FAIL: the DM $dm dump"; exit 1; }
done
passed=1
echo "PASS"
