#!/usr/bin/env bash
# Integration: triggered dumps of VDIF streams (doc/dumps.md, "VDIF") from a live rocecapd
# (backend pcap) while `rocecap gen --format vdif` traffic runs over a veth: one source sending
# threads 0 and 1 with VTP sequence numbers, 2000 frames per second, VDIF time close to the wall
# clock, every 97th frame dropped.
#
# rocecapd retains 2 s of each thread's stream and writes the continuous raw files. While the
# traffic runs, three triggers: one for a window in the past (UTC), one that reaches 0.4 s into
# the future and overlaps it, and one in VDIF frame time ({"epoch", "seconds", "frame"}). Then:
# all are served whole; every dump file (raw, without the VTP number, and vdifhdr) is exactly
# the continuous raw file's bytes of its window (fill frames where the generator dropped frames:
# the header with the invalid bit, zero data), named with `_t<thread>`; the VDIF frame-time
# window starts at the frame it names; the run manifest lists the triggers.
#
# usage: rocecapd_dump_vdif_test.sh ROCECAPD ROCECAP. As root (exits 77 otherwise).
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

e2e_workdir dump-vdif-test
NETNS_CMD_TIMEOUT=100
NETNS_MAX_SECONDS=170
netns_up

fps=2000 # per thread
frames=12000 # per thread: 6 s
cat >"$work/run.yaml" <<YAML
run: { name: vdump, duration: 60s }
capture:
  backend: pcap
  poll_mode: event
  max_frame: 2048
  interfaces:
    - name: $NETNS_RECEIVER_IF
      groups: [239.17.0.1:36001]
streams:
  format: vdif
  frames_per_second: $fps
  vtp: true
  threads: [0, 1]
  antennas:
    - { name: ant1, source: 192.0.2.11 }
output:
  directory: $work/out
  formats: [raw]
metrics:
  enabled: false
retention:
  retain: 2s
  frame_rate: $fps
  max_future: 2s
  write_rate: 64MiB
  formats: [raw, vdifhdr]
YAML
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
wrapper=$E2E_PID
rocecapd=$(pgrep -P "$wrapper" -x rocecapd)
netns_on_exit "kill $rocecapd 2>/dev/null"
sock=$work/out/vdump/trigger.sock

# VDIF time = wall time: reference epoch 2 x (year - 2000) (+1 from July), seconds since its
# start. 1024 data bytes (2 channels, 4 bits), 32-byte headers, VTP.
now=$(date -u +%s)
year=$(date -u +%Y) month=$(date -u +%-m)
epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
start_s=$((now - epoch_start))
gen=(gen --format vdif --frames-per-second $fps --vtp --threads 0,1 --epoch "$epoch"
  --start-seconds "$start_s" --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames "$frames"
  --rate $fps --payload-bytes 1024 --nchan 2 --nbits 4 --station VD --seed 11
  --drop-every 97)
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
"$ROCECAP" trigger --socket "$sock" --start $((t - 900 * ms)) --end $((t + 400 * ms)) \
  --label overlap >"$work/b.json"
rc_b=$?
# VDIF frame time: second (start + 2) of the epoch, frames 1990 .. 2 of the next second.
"$ROCECAP" trigger --socket "$sock" --json "{\"start\": {\"epoch\": $epoch, \"seconds\": $((start_s + 2)),
  \"frame\": 1990}, \"end\": {\"epoch\": $epoch, \"seconds\": $((start_s + 3)), \"frame\": 2},
  \"label\": \"vtime\"}" >"$work/c.json"
rc_c=$?
set -e
if [ "$rc_a" != 0 ] || [ "$rc_b" != 0 ] || [ "$rc_c" != 0 ]; then
  echo "FAIL: triggers exited $rc_a, $rc_b, $rc_c:"
  cat "$work/a.json" "$work/b.json" "$work/c.json"
  exit 1
fi
wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
for d in 0001-past 0002-overlap 0003-vtime; do
  for ((i = 0; i < 100; i++)); do [ -f "$work/out/vdump/dumps/$d/dump.json" ] && break; sleep 0.1; done
done
kill -TERM "$rocecapd"
e2e_wait_exit "$wrapper" 30
[ "$E2E_RC" = 0 ] || { echo "FAIL: rocecapd exited $E2E_RC"; cat "$work/rocecapd.log"; exit 1; }

python3 - "$work" "$fps" "$start_s" <<'PY'
import json, os, sys
work, fps, start_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run = os.path.join(work, "out", "vdump")
manifest = json.load(open(os.path.join(run, "manifest.json")))
FRAME, HEAD = 32 + 1024, 32
raw = {}  # thread -> (first index, bytes) of the continuous raw file
for s in manifest["streams"]:
    files = [f for f in s["files"] if f["format"] == "raw"]
    assert len(files) == 1, files
    path = files[0]["path"]
    path = path if os.path.isabs(path) else os.path.join(work, "out", path)
    raw[s["thread"]] = (s["first_frame"]["index"], open(path, "rb").read())
assert sorted(raw) == [0, 1], raw.keys()
checked = 0
for d in ("0001-past", "0002-overlap", "0003-vtime"):
    m = json.load(open(os.path.join(run, "dumps", d, "dump.json")))
    assert m["state"] == "written", (d, m.get("error"))
    assert len(m["streams"]) == 2, (d, len(m["streams"]))
    for s in m["streams"]:
        w = s["window"]
        assert not s["not_retained"], (d, s["not_retained"])
        assert "not_written" not in s, (d, s.get("not_written"))
        assert s["frames"] + s["fill_frames"] == w["frames"], (d, s)
        if d != "0003-vtime":
            assert s["fill_frames"] > 0, (d, "the generator drops every 97th frame")
        else:
            assert w["first_frame"] == (start_s + 2) * fps + 1990, (d, w)
            assert w["last_frame"] == (start_s + 3) * fps + 1, (d, w)
        paths = {p.rsplit(".", 1)[1]: p for p in (f["path"] for f in s["files"])}
        assert set(paths) == {"vdif", "vhead"}, paths
        thread = int(paths["vdif"].rsplit("_t", 1)[1].split(".")[0])
        first, data = raw[thread]
        want = data[(w["first_frame"] - first) * FRAME:(w["last_frame"] + 1 - first) * FRAME]
        assert len(want) == w["frames"] * FRAME, (d, "continuous file too short")
        got = open(paths["vdif"], "rb").read()
        assert got == want, (d, thread, "dump differs from the continuous raw file")
        heads = b"".join(want[k:k + HEAD] for k in range(0, len(want), FRAME))
        assert open(paths["vhead"], "rb").read() == heads, (d, thread, "vdifhdr differs")
        # Fill frames: the invalid bit (word 0, bit 31) and zero data.
        fills = [k for k in range(0, len(got), FRAME) if got[k + 3] & 0x80]
        assert len(fills) >= s["fill_frames"], (d, len(fills), s["fill_frames"])
        checked += 1
assert checked == 6, checked
t = manifest.get("triggers")
assert t and [x.get("label") for x in t if x.get("ok")] == ["past", "overlap", "vtime"], t
print(f"VDIF dumps: 3 triggers x 2 threads byte-identical to the continuous raw files")
PY
passed=1
echo "PASS"
