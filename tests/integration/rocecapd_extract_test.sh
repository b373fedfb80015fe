#!/usr/bin/env bash
# Integration: `rocecap extract` (doc/dumps.md, "Extracting from a recording") against triggered
# dumps of the same windows taken live in the same run.
#
# rocecapd (backend pcap-file, recorded pace: 10 s of `rocecap gen` traffic, 6 streams of 1000
# frames per second with drops, so the recording has fill frames) records raw and codifhdr
# files over three output targets, three tmpfs of its own mount namespace, and retains 12 s of
# every stream. Each tmpfs starts nearly full (a filler file): the three fill up about 2 s in
# and frames are lost to write errors (the manifest's write_error_lost gaps) until the test
# removes the fillers and the writers come back. Near the end of the traffic it triggers live
# dumps: A, a window before the targets filled; B, a 4.5 s window over the write-error gap;
# C, a window that starts before the first frame; E, a dispersed one (dm 300, two groups at
# their sky frequencies). After the run, `rocecap extract` cuts the same requests out of the
# recording. Then:
# - A, C, E: every stream's extracted raw and codifhdr files are byte-identical to the live
#   dump's, the windows, frames and fill frames equal, C's part before the recording is
#   not_recorded where the dump has it not_retained;
# - B: the frames the recording lost to write errors are fill frames in the extract (the live
#   dump's header with the invalid bit, zero data), listed as gaps with the write-error
#   reason; every other frame is byte-identical to the live dump's;
# - D: a window running past the recording's end is written up to the last recorded frame and
#   the rest is not_recorded;
# - the recording's raw files are on all three targets;
# - mistakes get exit 1 and the reason (a non-empty output directory, pcap, an unknown antenna).
#
# usage: rocecapd_extract_test.sh ROCECAPD ROCECAP. As root (exits 77 otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

if [ "${ROCECAP_EXTRACT_NS:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIPPED: the test mounts tmpfs (needs root)"; exit 77; }
  command -v unshare >/dev/null || { echo "SKIPPED: no unshare"; exit 77; }
  # Private mounts: the tmpfs exist only for this process tree and vanish with it.
  exec unshare -m --propagation private env ROCECAP_EXTRACT_NS=1 bash "$0" "$@"
fi

work=$(mktemp -d /tmp/rocecap-extract-test.XXXXXX)
passed=0
rocecapd_pid=""
finish() {
  [ -n "$rocecapd_pid" ] && kill "$rocecapd_pid" 2>/dev/null
  for t in "$work"/t*; do mountpoint -q "$t" && umount -l "$t"; done
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT

# 10 s at 1000 frames per second per stream; one CODIF period of 1 s (512 samples a frame).
e2e_gen_args 10000
"$ROCECAP" "${E2E_GEN[@]}" --rate 1000 --period 1 --total-samples 512000 \
  --pcap "$work/sent.pcap" --summary "$work/summary.json" >/dev/null
for i in 0 1 2; do
  mkdir -p "$work/t$i"
  mount -t tmpfs -o size=96m,mode=0755 "rocecap-extract$i" "$work/t$i"
  # 6 MiB left free on each: about 18 MiB of output before all three are full.
  head -c $((90 << 20)) /dev/zero >"$work/t$i/filler"
done
E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/t0 \
  E2E_ROTATE=1MiB E2E_REPLAY_PACE=recorded E2E_FORMATS="raw, codifhdr" E2E_MAX_FRAME=2048 \
  E2E_EXTRA_STREAMS="  frequencies:
    - { group: 239.17.0.1:36001, centre_mhz: 1400, bandwidth_mhz: 100 }
    - { group: 239.17.0.2:36002, centre_mhz: 1100, bandwidth_mhz: 100 }" \
  e2e_config "$work/run.yaml"
sed -i "s|^  directory: .*|  directories: [$work/t0, $work/t1, $work/t2]|" "$work/run.yaml"
cat >>"$work/run.yaml" <<YAML
retention:
  retain: 12s
  frame_rate: 1000
  max_future: 2s
  write_rate: 256MiB
  formats: [raw, codifhdr]
YAML
run=$work/t0/e2e
e2e_start_rocecapd "" "$work/rocecapd.log" "$work/run.yaml"
rocecapd_pid=$E2E_PID
started=$(date +%s%N)

# All three targets full (each reported out of rotation once), then room again.
for ((i = 0; i < 80; i++)); do
  [ "$(grep -c "out of rotation" "$work/rocecapd.log")" -ge 3 ] && break
  sleep 0.1
done
[ "$(grep -c "out of rotation" "$work/rocecapd.log")" -ge 3 ] || {
  grep -E "rotation|error" "$work/rocecapd.log" | head; echo "FAIL: the targets never all filled"; exit 1
}
sleep 0.5
rm -f "$work"/t*/filler

# Triggers 9 s into the traffic, all in CODIF time (epoch 52, second 1000 is the first).
while [ $(($(date +%s%N) - started)) -lt 9000000000 ]; do sleep 0.1; done
t() { echo "{\"epoch\": 52, \"seconds\": $1, \"frame\": $2}"; }
declare -A req
req[A]="{\"start\": $(t 1000 500), \"end\": $(t 1001 200), \"label\": \"a\"}"
req[B]="{\"start\": $(t 1001 500), \"end\": $(t 1006 0), \"label\": \"b\"}"
req[C]="{\"start\": $(t 999 800), \"end\": $(t 1000 300), \"label\": \"c\"}"
req[E]="{\"start\": $(t 1000 400), \"end\": $(t 1000 450), \"dm\": 300, \"label\": \"e\"}"
for k in A B C E; do
  "$ROCECAP" trigger --config "$work/run.yaml" --json "${req[$k]}" >"$work/trigger_$k.json" || {
    echo "FAIL: trigger $k refused:"; cat "$work/trigger_$k.json"; exit 1
  }
done
e2e_wait_exit "$rocecapd_pid" 60
rocecapd_pid=""
echo "rocecapd exited $E2E_RC"
grep -E "out of rotation|back in rotation|dump" "$work/rocecapd.log" | cut -c1-200 | head -20 || true
# Full targets are not storage loss: the run itself ran as configured.
[ "$E2E_RC" = 0 ] || { tail -20 "$work/rocecapd.log"; echo "FAIL: rocecapd exited $E2E_RC"; exit 1; }

# The same requests, extracted from the recording; D in UTC: 1009.5 s to 1011 s of epoch 52
# (2026-01-01), past the last frame (1009.999 s).
for k in A B C E; do
  "$ROCECAP" extract "$run" --json "${req[$k]}" -o "$work/x_$k" >"$work/extract_$k.json" || {
    echo "FAIL: extract $k exited $?:"; cat "$work/extract_$k.json"; exit 1
  }
done
"$ROCECAP" extract "$run" --start "2026-01-01T00:16:49.5Z" --end "2026-01-01T00:16:51Z" \
  --antenna ant1 --format raw -o "$work/x_D" >"$work/extract_D.json" || {
  echo "FAIL: extract D exited $?"; cat "$work/extract_D.json"; exit 1
}
# Mistakes: exit 1 and the reason.
check_refused() {
  local want=$1 rc=0
  shift
  "$ROCECAP" extract "$run" "$@" >/dev/null 2>"$work/refused.err" || rc=$?
  if [ "$rc" != 1 ] || ! grep -q "$want" "$work/refused.err"; then
    echo "FAIL: extract $* exited $rc, expected 1 and '$want':"; cat "$work/refused.err"; exit 1
  fi
}
check_refused "exists and is not empty" --start 2026-01-01T00:16:41Z --end 2026-01-01T00:16:42Z -o "$work/x_A"
check_refused "format pcap" --start 2026-01-01T00:16:41Z --end 2026-01-01T00:16:42Z --format pcap
check_refused "unknown antenna 'ak99'" --start 2026-01-01T00:16:41Z --end 2026-01-01T00:16:42Z --antenna ak99

python3 - "$work" "$run" <<'PY'
import json, os, sys
work, run = sys.argv[1], sys.argv[2]
FRAME, HEAD = 1088, 64
manifest = json.load(open(os.path.join(run, "manifest.json")))
bad = []
targets = {f.get("target") for s in manifest["streams"] for f in s["files"] if f["format"] == "raw"}
if targets != {0, 1, 2}:
    bad.append(f"raw files on targets {sorted(targets)}, expected all three")
wel = {f'{s["group"]}:{s["port"]} {s["antenna"]}': s["write_error_lost"]["raw"]["gaps"]
       for s in manifest["streams"]}
print("write_error gaps:", {k: v[:3] for k, v in wel.items()})

def load(path):
    return json.load(open(path))

def frames_of(path, unit):
    data = open(path, "rb").read()
    assert len(data) % unit == 0, path
    return [data[i:i + unit] for i in range(0, len(data), unit)]

def invalid_set(h):
    w1 = int.from_bytes(h[8:16], "little") | (1 << 17)
    return h[:8] + w1.to_bytes(8, "little") + h[16:]

def in_gaps(index, gaps):
    return any(a <= index < a + c for a, c in gaps)

def compare(key):
    live_dir = load(os.path.join(work, f"trigger_{key}.json"))["directory"]
    live = load(os.path.join(live_dir, "dump.json"))
    ext = load(os.path.join(work, f"x_{key}", "dump.json"))
    assert live["state"] == "written", (key, live.get("error"))
    assert ext["state"] == "written", (key, ext.get("error"))
    lost_total = 0
    for ls, xs in zip(live["streams"], ext["streams"]):
        name = f'{ls["group"]} {ls["antenna"]}'
        assert (ls["group"], ls["antenna"]) == (xs["group"], xs["antenna"]), (key, name)
        if ls["window"] != xs["window"]:
            bad.append(f"{key} {name}: window {xs['window']} != live {ls['window']}")
            continue
        if key == "E" and (ls["delay_seconds"] != xs["delay_seconds"] or
                           ls["frequency_mhz"] != xs["frequency_mhz"]):
            bad.append(f"{key} {name}: dispersion {xs} != live {ls}")
        gaps = wel[name]
        w = ls["window"]
        lost = [i for i in range(w["first_frame"], w["last_frame"] + 1) if in_gaps(i, gaps)]
        lost_total += len(lost)
        lf = {f["path"].rsplit(".", 1)[1]: f["path"] for f in ls["files"]}
        xf = {f["path"].rsplit(".", 1)[1]: f["path"] for f in xs["files"]}
        assert set(lf) == set(xf) == {"codif", "chead"}, (key, name, lf, xf)
        if not lost:
            for ext_name in ("codif", "chead"):
                if open(lf[ext_name], "rb").read() != open(xf[ext_name], "rb").read():
                    bad.append(f"{key} {name}: .{ext_name} differs from the live dump")
            if (ls["frames"], ls["fill_frames"]) != (xs["frames"], xs["fill_frames"]):
                bad.append(f"{key} {name}: frames {xs['frames']}+{xs['fill_frames']} fill, live "
                           f"{ls['frames']}+{ls['fill_frames']}")
            continue
        # A write-error gap in the window: the recording's missing frames are fill frames.
        first = xs["recorded"]["first_frame"]
        lr, xr = frames_of(lf["codif"], FRAME), frames_of(xf["codif"], FRAME)
        lh, xh = frames_of(lf["chead"], HEAD), frames_of(xf["chead"], HEAD)
        assert len(lr) == len(xr) == len(lh) == len(xh), (key, name, len(lr), len(xr))
        for k in range(len(lr)):
            i = first + k
            if i in lost:
                want = invalid_set(lr[k][:HEAD]) + bytes(FRAME - HEAD)
                if xr[k] != want or xh[k] != want[:HEAD]:
                    bad.append(f"{key} {name}: frame {i} (write-error gap) is not a fill frame")
                    break
            elif xr[k] != lr[k] or xh[k] != lh[k]:
                bad.append(f"{key} {name}: frame {i} differs from the live dump")
                break
        reasons = [g for g in xs["gaps"] if "write error" in g.get("reason", "")]
        listed = sum(g["frames"] for g in reasons)
        if listed != len(lost):
            bad.append(f"{key} {name}: {listed} frames listed as write-error gaps, {len(lost)} lost")
        # Frames of the gap the live dump had received (not its own fill frames for frames
        # the stream lost) are fill frames in the extract.
        received = sum(1 for k in range(len(lr)) if first + k in lost and
                       not (lr[k][HEAD:] == bytes(FRAME - HEAD) and lr[k] == invalid_set(lr[k][:HEAD]) + lr[k][HEAD:]))
        if xs["fill_frames"] != ls["fill_frames"] + received or \
                xs["frames"] != ls["frames"] - received:
            bad.append(f"{key} {name}: {xs['frames']} frames + {xs['fill_frames']} fill, live "
                       f"{ls['frames']} + {ls['fill_frames']}, {received} received frames lost "
                       "to write errors")
    if key == "C":
        for s in ext["streams"]:
            nr = s["not_recorded"]
            assert len(nr) == 1 and nr[0]["reason"] == "before the recording's first frame", nr
    print(f"{key}: {len(live['streams'])} streams, window frames {live['streams'][0]['window']['frames']},"
          f" {lost_total} frames in write-error gaps")
    return lost_total

for key in ("A", "C", "E"):
    if compare(key) != 0:
        bad.append(f"{key}: meant to miss the write-error gap, has one (targets filled early?)")
if compare("B") == 0:
    bad.append("B: no write-error gap in the window: the test proves nothing about them")
d = load(os.path.join(work, "x_D", "dump.json"))
s = d["streams"]
assert len(s) == 2 and {x["antenna"] for x in s} == {"ant1"}, s
for x in s:
    nr = x["not_recorded"]
    if not (len(nr) == 1 and nr[0]["reason"] == "after the recording's last frame" and
            x["recorded"]["frames"] + nr[0]["frames"] == x["window"]["frames"] and
            x["frames"] + x["fill_frames"] == x["recorded"]["frames"] and
            x["recorded"]["last_frame"] == 1009999):
        bad.append(f"D: {x}")
    if os.path.getsize(x["files"][0]["path"]) != x["recorded"]["frames"] * FRAME:
        bad.append(f"D: {x['files'][0]['path']} size")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
passed=1
echo "PASS"
