#!/usr/bin/env bash
# Integration: rocecapd's output file system fills up for 5 s during a live capture, then frees.
#
# output.directory is a 192 MiB tmpfs (mounted for this test only, lazily unmounted at exit);
# `rocecap gen` sends 3 antennas x 2 groups of clean CODIF frames over a veth for ~14 s; 2 s in,
# a filler file takes every free block, and 5 s later it is removed (issue 16, item 3).
# Expected: the first write that does not fit is logged as an error naming the file and the
# cause; rocecapd does not crash and exits 0; capture goes on (the packets counted at the end
# are every datagram sent, and the status lines rise); writing RESUMES after the space frees
# (new files with the next sequence numbers, holding the last frames of every stream); per
# stream and format, frames in the files + frames counted write_error_lost = frames received,
# and the write_error gaps list them all, tiling with the raw files' frame ranges the stream's
# [first, last] frames (a write error is a file boundary); every file left is whole (raw and codifhdr a whole
# number of frames, each raw file one gap-free run of frames by `rocecap inspect`, pcap files
# read by tshark to their end) and none is empty; the manifest reports the write errors (as
# many listed as counted) and lists the files as they are.
#
# usage: rocecapd_disk_full_test.sh ROCECAPD ROCECAP   (as root; exits 77 otherwise)
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
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }

work=$(mktemp -d /tmp/rocecap-disk-full-test.XXXXXX)
passed=0
finish() {
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work (logs; the tmpfs contents were copied to $work/out-copy)" >&2
  fi
}
NETNS_CMD_TIMEOUT=120
NETNS_MAX_SECONDS=270
netns_up
netns_on_exit finish

mkdir "$work/out"
mount -t tmpfs -o size=192m,mode=0755 rocecap-test "$work/out"
# Lazy: still-open files cannot keep the test from cleaning up.
netns_on_exit "cp -a '$work/out' '$work/out-copy' 2>/dev/null; umount -l '$work/out'"

frames=14000 rate=1000
gen=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$frames"
  --payload-bytes "$E2E_PAYLOAD" --seed "$E2E_SEED")
"$ROCECAP" "${gen[@]}" --pcap "$work/reference.pcap" --summary "$work/reference.json" >/dev/null
total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$work/reference.json")

E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$work/out E2E_PACKETS=$total E2E_ROTATE=4MiB \
  e2e_config "$work/run.yaml"
e2e_start_rocecapd netns_bg_receiver "$work/rocecapd.log" "$work/run.yaml"
rocecapd=$E2E_PID
netns_on_exit "kill $rocecapd 2>/dev/null"
netns_exec_sender "$ROCECAP" "${gen[@]}" --interface "$NETNS_SENDER_IF" --rate "$rate" \
  >/dev/null 2>"$work/gen.err" &
gen_pid=$!
# The disk is full from 2 s to 7 s of a 14 s run (the writers retry at most 2 s apart).
sleep 2
dd if=/dev/zero of="$work/out/filler" bs=1M 2>/dev/null || true
echo "disk full: $(df -k --output=avail "$work/out" | tail -1) KiB free"
sleep 5
rm -f "$work/out/filler"
echo "disk freed: $(df -k --output=avail "$work/out" | tail -1) KiB free"
wait "$gen_pid" || { echo "FAIL: rocecap gen failed:"; cat "$work/gen.err"; exit 1; }
if ! e2e_wait_exit "$rocecapd" 30; then
  echo "FAIL: rocecapd did not count all $total datagrams within 30 s of the traffic's end:"
  tail -20 "$work/rocecapd.log"
  exit 1
fi
echo "rocecapd exited $E2E_RC: $(grep -o 'stopping: [^;]*' "$work/rocecapd.log")"
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}
[ "$E2E_RC" = 0 ] || bad "rocecapd exited $E2E_RC"
grep -E "AddressSanitizer|runtime error|terminate called|Segmentation" "$work/rocecapd.log" &&
  bad "rocecapd crashed or misbehaved (above)"

# The error names the file and the cause.
first_error=$(grep -m1 "write error" "$work/rocecapd.log" || true)
echo "first write error logged: ${first_error#* error }"
[[ $first_error == *"$work/out/e2e/"* ]] || bad "no write error naming a file under $work/out/e2e"
[[ $first_error == *"No space left on device"* ]] || bad "the write error does not say ENOSPC"

# Capture went on: every datagram was counted, and the status lines rose.
counted=$(sed -n 's/.* stream .*: \([0-9]*\) packets, .*/\1/p' "$work/rocecapd.log" | paste -sd+ | bc)
echo "packets counted: $counted of $total sent"
[ "$counted" = "$total" ] || bad "rocecapd counted $counted packets, $total were sent"
python3 - "$work/rocecapd.log" "$total" <<'PY' || fail=1
import re, sys
log, total = open(sys.argv[1]).read(), int(sys.argv[2])
first_error = re.search(r"^(\S+) error write error", log, re.M).group(1)
after = [int(m.group(2)) for m in re.finditer(r"^(\S+) info  status: .*?; (\d+) packets", log, re.M)
         if m.group(1) > first_error]
print(f"status lines after the first write error ({first_error}): packets {after}, then {total}")
counts = after + [total]
if any(b <= a for a, b in zip(counts, counts[1:])):
    sys.exit("FAIL: the packet count stopped rising after the disk filled")
PY

# Whatever is on the full file system is whole.
python3 - "$work/out" "$E2E_FRAME_BYTES" <<'PY' || fail=1
import os, sys
root, frame = sys.argv[1], int(sys.argv[2])
bad = []
for dirpath, _, names in os.walk(root):
    for n in names:
        p = os.path.join(dirpath, n)
        size = os.path.getsize(p)
        if n.endswith(".codif") and size % frame:
            bad.append(f"{p}: {size} bytes is not whole {frame}-byte frames")
        if n.endswith(".chead") and size % 64:
            bad.append(f"{p}: {size} bytes is not whole 64-byte headers")
        if size == 0:
            bad.append(f"{p}: an empty file was left behind")
kinds = {k: [n for n in os.listdir(os.path.join(root, "e2e")) if n.endswith(k)]
         for k in (".codif", ".pcap")}
if not kinds[".codif"] or not kinds[".pcap"]:
    bad.append(f"no raw or no pcap file holds data: {kinds}: the whole-file checks prove nothing")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
shopt -s nullglob
raws=("$work"/out/e2e/*.codif)
pcaps=("$work"/out/e2e/*.pcap)
echo "on the tmpfs: ${#raws[@]} raw files, ${#pcaps[@]} pcap files, $(du -sk "$work/out" | cut -f1) KiB"
for f in "${raws[@]}"; do
  [ -s "$f" ] || continue
  "$ROCECAP" inspect --json "$f" >"$work/inspect.json" || bad "rocecap inspect $f failed"
  mkdir -p "$work/inspected"
  cp "$work/inspect.json" "$work/inspected/$(basename "$f").json"
  python3 - "$work/inspect.json" "$f" "$E2E_FRAME_BYTES" <<'PY' || fail=1
import json, os, sys
r, path, frame = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
whole = os.path.getsize(path) // frame
s = r["streams"]
if r["rejected"] or r["records"] != whole or len(s) != 1 or s[0]["frames"] != whole or s[0]["gaps"]:
    sys.exit(f"FAIL: {path}: rocecap inspect: {r['records']} records, rejected {r['rejected']}, "
             f"{len(s)} streams; expected {whole} frames of one stream without gaps")
PY
done
for f in "${pcaps[@]}"; do
  [ -s "$f" ] || continue
  out=$(tshark -n -r "$f" 2>&1 >/dev/null | grep -v 'Running as user "root"' || true)
  [ -z "$out" ] || bad "tshark -r $f: $out"
done

# The manifest reports the write errors (if it could be written at all: see the log).
manifest=$work/out/e2e/manifest.json
python3 - "$manifest" <<'PY' || fail=1
import json, sys
m = json.load(open(sys.argv[1]))
counted = sum(s["write_errors"] for s in m["streams"] + m["interfaces"])
# Manifest snapshots that failed are listed too (none is due while the disk is full here).
snapshots = sum(1 for e in m["errors"] if e["path"] == sys.argv[1])
counted += snapshots
listed = len(m["errors"]) + m["errors_not_listed"]
print(f"manifest: state {m['state']}, write_errors {counted} (streams and pcap), "
      f"{len(m['errors'])} errors listed + {m['errors_not_listed']} not listed")
if m["state"] != "stopped" or counted == 0:
    sys.exit("FAIL: the final manifest does not report the write errors")
if listed != counted:
    sys.exit(f"FAIL: {listed} errors reported, {counted} write errors counted")
# Each listed error names the file (or directory) it is about.
for e in m["errors"]:
    if not e["path"] or e["path"] not in e["message"]:
        sys.exit(f"FAIL: error without its file's path: {e}")
PY
# Nothing lost silently: per stream and format, written + write_error_lost = received; the
# write_error gaps name every missing frame; writing resumed after the disk freed.
python3 - "$manifest" "$E2E_FRAME_BYTES" <<'PY' || fail=1
import json, sys
m, frame = json.load(open(sys.argv[1])), int(sys.argv[2])
bad = []
for s in m["streams"]:
    name = f"{s['group']} {s['antenna']}"
    if s["lost"] or s["fill_frames"]:
        bad.append(f"{name}: {s['lost']} lost on the network: the sums below assume none")
    wel = s.get("write_error_lost")
    if not isinstance(wel, dict) or set(wel) != {"raw", "codifhdr"}:
        bad.append(f"{name}: no write_error_lost per format: {wel!r}")
        continue
    for fmt, size in (("raw", frame), ("codifhdr", 64)):
        files = [f for f in s["files"] if f["format"] == fmt]
        in_files = sum(f["bytes"] for f in files) // size
        w = wel[fmt]
        gap_frames = sum(c for _, c in w["gaps"])
        print(f"{name} {fmt}: {in_files} in {len(files)} files + {w['frames']} write_error_lost"
              f" = {in_files + w['frames']} of {s['packets']} received; gaps {w['gaps'][:4]}")
        if in_files + w["frames"] != s["packets"]:
            bad.append(f"{name} {fmt}: {in_files} written + {w['frames']} lost != {s['packets']}")
        if fmt == "raw" and w["frames"] == 0:
            bad.append(f"{name} {fmt}: nothing lost: the disk never filled for this stream")
        # Header files are handed to the kernel every 0.5 s (writers/README.md, "Flush
        # interval"): what the full disk cost them is the outage, as for raw, not headers of
        # frames received long before it (a 1 MiB buffer holds 16 s of them). Allowed: 1000
        # frames (1 s at 1000 frames/s) before raw's first loss; after its last, one back-off
        # (2 s at most) and a flush interval, 2500 frames.
        if fmt == "codifhdr" and w["gaps"]:
            raw_gaps = wel["raw"]["gaps"]
            first, last = raw_gaps[0][0], raw_gaps[-1][0] + raw_gaps[-1][1]
            hdr_first, hdr_last = w["gaps"][0][0], w["gaps"][-1][0] + w["gaps"][-1][1]
            if hdr_first < first - 1000 or hdr_last > last + 2500:
                bad.append(f"{name} codifhdr: lost frames {hdr_first}..{hdr_last - 1}, raw "
                           f"{first}..{last - 1}: headers of frames outside the outage lost")
        if w["gaps_not_listed"] == 0 and gap_frames != w["frames"] + w["fill_frames"]:
            bad.append(f"{name} {fmt}: gaps hold {gap_frames} frames, {w['frames']} lost")
        last_gap_end = max((a + c for a, c in w["gaps"]), default=0)
        resumed = s["last_frame"]["index"] + 1 - last_gap_end
        if resumed < 1000:
            bad.append(f"{name} {fmt}: only {resumed} frames written after the last gap: "
                       "writing did not resume when the disk freed")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
# Time alignment across a write error: per stream, the raw files' frame ranges (by their CODIF
# headers) and the write_error gaps tile [first frame, last frame] exactly, in file order.
python3 - "$manifest" "$work/inspected" <<'PY' || fail=1
import json, os, sys
m, inspected = json.load(open(sys.argv[1])), sys.argv[2]
bad = []
for s in m["streams"]:
    name = f"{s['group']} {s['antenna']}"
    pieces = []
    for f in s["files"]:
        if f["format"] != "raw":
            continue
        r = json.load(open(os.path.join(inspected, os.path.basename(f["path"]) + ".json")))
        st = r["streams"][0]
        pieces.append((st["first_index"], st["last_index"] - st["first_index"] + 1, f["path"]))
    pieces += [(a, c, "write_error gap") for a, c in s["write_error_lost"]["raw"]["gaps"]]
    pieces.sort()
    at = s["first_frame"]["index"]
    for first, count, what in pieces:
        if first != at:
            bad.append(f"{name}: {what} starts at frame {first}, expected {at}")
            break
        at = first + count
    else:
        if at != s["last_frame"]["index"] + 1:
            bad.append(f"{name}: files and gaps end at {at - 1}, last frame {s['last_frame']['index']}")
    print(f"{name}: {len(pieces)} files and write_error gaps tile frames "
          f"{s['first_frame']['index']}..{s['last_frame']['index']}")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
# Every file the manifest lists is there with the size it gives.
python3 - "$here" "$manifest" <<'PY' || fail=1
import json, os, sys
sys.path.insert(0, sys.argv[1])
import run_check
fail = run_check.Failures()
m = json.load(open(sys.argv[2]))
n = len(run_check.check_files_listed(m, os.path.dirname(os.path.dirname(sys.argv[2])), fail))
sys.exit(run_check.report(fail, f"the manifest's {n} files exist with their listed sizes"))
PY
grep "manifest" "$work/rocecapd.log" | grep -iv "complete" || true
# Frames were lost: the run is not called complete, and the last line says how many.
grep -q "run e2e complete" "$work/rocecapd.log" && bad "a run that lost frames is called complete"
grep -q "run e2e ended with [1-9][0-9]* received frames not written (write_error" \
  "$work/rocecapd.log" || bad "the final log line does not count the frames not written"
[ "$fail" = 0 ] || exit 1
passed=1
