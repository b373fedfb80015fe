#!/usr/bin/env bash
# VDIF end to end through the real binaries (doc/vdif.md): `rocecap gen --format vdif` with every
# impairment -> pcap file -> `rocecapd` replaying it -> raw and vdifhdr files, checked by
# tests/integration/vdif_check.py (a VDIF reader written from the public specification, not
# from our codec) byte for byte against the generator's frames, and every impairment counted
# exactly in the manifest. Cases: one thread without VTP crossing many second boundaries;
# three threads on one flow with VTP, one thread not listed; 16-byte legacy headers.
# Then malformed VDIF (length field lying, frame number >= frames per second, seconds going
# back, legacy/non-legacy mix) is rejected with its reason and never written.
set -euo pipefail
rocecap=$1
rocecapd=$2
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../integration/vdif_check.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fps=100
impair=(--drop 0.02 --swap 0.02 --duplicate 0.02 --bad-sync 0.02 --truncate 0.02 --invalid 0.02)

run_daemon() {  # name, pcap, streams section (flow style), output formats
  cat > "$tmp/$1.yaml" <<YAML
run: { name: $1 }
capture:
  backend: pcap-file
  pcap_file: $2
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams: $3
output: { directory: $tmp/out, formats: [$4], reorder_window: 8 }
metrics: { enabled: false }
logging: { level: warn }
YAML
  "$rocecapd" --config "$tmp/$1.yaml"
}

# Exact counts: per stream, the manifest against the generator's summary and the files.
counts() {  # manifest, summary, rejected reason -> expected count (python expression)
  python3 - "$@" <<'PY'
import json, sys
m, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
extra = json.loads(sys.argv[3])
by_thread = {st["thread"]: st for st in s["streams"]}
streams = m["streams"]
for ms in streams:
    g = by_thread[ms.get("thread", s["streams"][0]["thread"])]
    lost_in_flight = len(g["bad_sync"]) + len(g["truncated"])
    want = {"packets": g["datagrams"] - lost_in_flight, "duplicate": len(g["duplicated"]),
            "late": len(g["swapped"]), "late_dropped": 0, "invalid": len(g["invalid"]),
            "resync": 0}
    for k, v in want.items():
        assert ms[k] == v, (ms.get("thread"), k, ms[k], v)
    # lost == fill frames == indices between the first and last received never received.
    gone = set(g["dropped"]) | set(g["bad_sync"]) | set(g["truncated"])
    got = [g["first_index"] + k for k in range(g["frames"]) if g["first_index"] + k not in gone]
    lost = max(got) - min(got) + 1 - len(got)
    assert ms["lost"] == ms["fill_frames"] == lost, (ms["lost"], ms["fill_frames"], lost)
rej = m["rejected"]
for reason, n in extra.items():
    assert rej.get(reason, 0) == n, (reason, rej.get(reason), n, rej)
print("counts ok:", [(ms.get("thread"), ms["packets"], ms["lost"]) for ms in streams], rej)
PY
}

# 1. One thread, no VTP, 1500 frames at 100 frames per second from second 1000 frame 37:
#    15 second boundaries crossed.
"$rocecap" gen --format vdif --frames-per-second $fps --start-seconds 1000 --start-frame 37 \
  --groups 239.17.0.1:36001 --sources 192.0.2.11 --threads 5 --frames 1500 --payload-bytes 1024 \
  --nchan 4 --nbits 2 --seed 21 "${impair[@]}" --pcap "$tmp/one.pcap" > "$tmp/one.json"
run_daemon one "$tmp/one.pcap" \
  "{ format: vdif, frames_per_second: $fps, antennas: [ { name: st01, source: 192.0.2.11 } ] }" \
  "raw, vdifhdr"
python3 "$check" --pcap "$tmp/one.pcap" --fps $fps \
  --stream "239.17.0.1:36001,192.0.2.11,5=$tmp/out/one/239.17.0.1_36001_st01.0000.vdif"
bad=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["streams"][0]; print(len(s["bad_sync"])+len(s["truncated"]))' "$tmp/one.json")
counts "$tmp/out/one/manifest.json" "$tmp/one.json" "{\"vdif_size_mismatch\": $bad}"
# vdifhdr: the raw file's headers, 32 bytes per frame, fill frames included.
python3 - "$tmp/out/one" <<'PY'
import sys
d = sys.argv[1]
raw = open(d + "/239.17.0.1_36001_st01.0000.vdif", "rb").read()
hdr = open(d + "/239.17.0.1_36001_st01.0000.vhead", "rb").read()
frame = 32 + 1024
assert len(raw) % frame == 0 and len(hdr) == len(raw) // frame * 32, (len(raw), len(hdr))
assert all(raw[i * frame:i * frame + 32] == hdr[i * 32:i * 32 + 32] for i in range(len(hdr) // 32))
print("vdifhdr ok:", len(hdr) // 32, "headers")
PY

# rocecap verify: counters and files (raw, vdifhdr) byte for byte against the generator's own
# frames; a flipped data byte makes it exit 1 naming the frame index.
"$rocecap" verify --manifest "$tmp/out/one/manifest.json" --expect "$tmp/one.json" > "$tmp/v.txt" ||
  { cat "$tmp/v.txt"; exit 1; }
grep -q 'raw: 1 file(s) byte-identical' "$tmp/v.txt"
grep -q 'vdifhdr: 1 file(s) byte-identical' "$tmp/v.txt"
cp -r "$tmp/out/one" "$tmp/out/one-bad"
sed -i 's#"one/#"one-bad/#g' "$tmp/out/one-bad/manifest.json"
printf '\xAA' | dd of="$tmp/out/one-bad/239.17.0.1_36001_st01.0000.vdif" bs=1 seek=$((1056 * 20 + 100)) \
  conv=notrunc status=none
rc=0
"$rocecap" verify --manifest "$tmp/out/one-bad/manifest.json" --expect "$tmp/one.json" \
  > "$tmp/bad.txt" || rc=$?
test "$rc" = 1 || { cat "$tmp/bad.txt"; echo "verify exited $rc on a corrupted file"; exit 1; }
grep -q "raw: frame index .* at byte 21120 differs" "$tmp/bad.txt" || { cat "$tmp/bad.txt"; exit 1; }

# rocecap inspect --vdif reads the raw file: no gaps (fill frames fill them), frames = file
# frames, invalid = fill frames + frames sent invalid, thread 5, contiguous indices.
"$rocecap" inspect --json --vdif $fps "$tmp/out/one/239.17.0.1_36001_st01.0000.vdif" \
  > "$tmp/inspect.json"
python3 - "$tmp/inspect.json" "$tmp/out/one/manifest.json" <<'PY'
import json, sys
r, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ms = m["streams"][0]
assert r["format"] == "vdif" and len(r["streams"]) == 1, r
s = r["streams"][0]
assert s["thread_id"] == 5 and s["missing"] == 0 and s["duplicates"] == 0, s
assert s["invalid"] == ms["fill_frames"] + ms["invalid"], (s["invalid"], ms)
assert s["last_index"] - s["first_index"] + 1 == s["frames"], s
print("inspect ok:", s["frames"], "frames,", s["invalid"], "invalid")
PY
# The whole run (its directory): the frame rate from the manifest's run file, the same stream.
"$rocecap" inspect --json "$tmp/out/one" > "$tmp/inspect-run.json"
python3 - "$tmp/inspect.json" "$tmp/inspect-run.json" <<'PY'
import json, sys
f, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert not r["unreadable"] and len(r["parts"]) == 1, r
p = r["parts"][0]
assert p["format"] == "vdif" and p["file_format"] == "raw", p
for k in ("frames", "unique_frames", "invalid", "missing", "first_index", "last_index"):
    assert p["streams"][0][k] == f["streams"][0][k], (k, p["streams"][0][k], f["streams"][0][k])
print("inspect RUN_DIR ok:", p["streams"][0]["frames"], "frames")
PY

# 2. Three threads on one flow with VTP; threads 0 and 7 recorded, thread 3 not listed.
"$rocecap" gen --format vdif --frames-per-second 1000 --vtp --threads 0,3,7 \
  --groups 239.17.0.1:36001 --sources 192.0.2.12 --frames 1200 --payload-bytes 512 --seed 5 \
  "${impair[@]}" --pcap "$tmp/vtp.pcap" > "$tmp/vtp.json"
run_daemon vtp "$tmp/vtp.pcap" \
  "{ format: vdif, frames_per_second: 1000, vtp: true, threads: [0, 7],
     antennas: [ { name: st02, source: 192.0.2.12 } ] }" "raw, pcap"
python3 "$check" --pcap "$tmp/vtp.pcap" --fps 1000 --vtp \
  --stream "239.17.0.1:36001,192.0.2.12,0=$tmp/out/vtp/239.17.0.1_36001_st02_t0.0000.vdif" \
  --stream "239.17.0.1:36001,192.0.2.12,7=$tmp/out/vtp/239.17.0.1_36001_st02_t7.0000.vdif"
read -r bad t3 skipped < <(python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))["streams"]
kept=[x for x in s if x["thread"] in (0,7)]
t3=[x for x in s if x["thread"]==3][0]
print(sum(len(x["bad_sync"])+len(x["truncated"]) for x in kept),
      t3["datagrams"], sum(len(x["dropped"]) for x in s))' "$tmp/vtp.json")
counts "$tmp/out/vtp/manifest.json" "$tmp/vtp.json" \
  "{\"vdif_size_mismatch\": $bad, \"vdif_unlisted_thread\": $t3}"
"$rocecap" verify --manifest "$tmp/out/vtp/manifest.json" --expect "$tmp/vtp.json" > "$tmp/v2.txt" ||
  true  # thread 3 is generated but deliberately not recorded: listed as not in the manifest
grep -q "thread 3 is not in the manifest" "$tmp/v2.txt"
test "$(grep -c '^OK ' "$tmp/v2.txt")" -ge 2 || { cat "$tmp/v2.txt"; exit 1; }
# VTP numbers of the flow: exactly the dropped frames' numbers were never seen (swapped and
# repeated ones arrive, late: out of order, not skipped).
python3 - "$tmp/out/vtp/manifest.json" "$skipped" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
vtp = [s["vtp"] for s in m["streams"] if "vtp" in s]
assert len(vtp) == 1 and vtp[0]["skipped"] == int(sys.argv[2]) > 0, (vtp, sys.argv[2])
print("vtp ok:", vtp[0])
PY
# The run read back as one (rocecap inspect RUN_DIR): its pcap holds the flow's VDIF datagrams
# behind VTP numbers, as the run file says; main read them as CODIF, every record bad_sync.
"$rocecap" inspect --json "$tmp/out/vtp" > "$tmp/inspect-vtp.json"
python3 - "$tmp/inspect-vtp.json" "$tmp/out/vtp/manifest.json" <<'PY'
import json, sys
r, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pcap = [p for p in r["parts"] if p["file_format"] == "pcap"]
assert len(pcap) == 1 and pcap[0]["payload"] == "vdif", pcap
by_thread = {s["thread_id"]: s for s in pcap[0]["streams"]}
for ms in m["streams"]:  # pcap records: each placed frame once
    got = by_thread.pop(ms["thread"])
    assert got["frames"] == ms["packets"] - ms["duplicate"] - ms["late_dropped"], (got, ms)
    assert got["rejected"] == {}, got["rejected"]
assert not by_thread, by_thread
print("inspect run: its pcap read as VDIF:", [(ms["thread"], ms["packets"]) for ms in m["streams"]])
PY

# 3. One thread, VTP, no interleaving: the VTP counts are exact.
"$rocecap" gen --format vdif --frames-per-second 1000 --vtp --legacy \
  --groups 239.17.0.1:36001 --sources 192.0.2.13 --frames 800 --payload-bytes 256 --seed 9 \
  "${impair[@]}" --pcap "$tmp/legacy.pcap" > "$tmp/legacy.json"
run_daemon legacy "$tmp/legacy.pcap" \
  "{ format: vdif, frames_per_second: 1000, vtp: true,
     antennas: [ { name: st03, source: 192.0.2.13 } ] }" "raw"
python3 "$check" --pcap "$tmp/legacy.pcap" --fps 1000 --vtp \
  --stream "239.17.0.1:36001,192.0.2.13,0=$tmp/out/legacy/239.17.0.1_36001_st03.0000.vdif"
python3 - "$tmp/out/legacy/manifest.json" "$tmp/legacy.json" <<'PY'
import json, sys
m, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["streams"][0]
v = m["streams"][0]["vtp"]
want = {"skipped": len(s["dropped"]),  # swapped ones arrive late: not skipped (issue 23)
        "out_of_order": len(s["swapped"]) + len(s["duplicated"])}
assert v == want, (v, want)
print("vtp exact:", v)
PY

# 4. Malformed VDIF, each rejected with its reason and never written: 40 good frames of one
#    stream (100 per second), then a frame whose length field lies, one with frame number 100,
#    one 16-byte legacy header in the 32-byte stream, one from 5 seconds back (behind the window:
#    dropped late, not written) and one 10000 seconds back (off the timeline: an outlier).
python3 - "$tmp/bad.pcap" <<'PY'
import socket, struct, sys

def header(seconds, frame, length_words, legacy=False, thread=0):
    w0 = (1 << 30 if legacy else 0) | seconds
    w1 = (50 << 24) | frame
    w2 = (1 << 29) | (0 << 24) | length_words
    w3 = (1 << 26) | (thread << 16) | 0x4142
    words = [w0, w1, w2, w3] + ([] if legacy else [0, 0, 0, 0])
    return struct.pack("<%dI" % len(words), *words)

def datagram(payload):
    src, dst = socket.inet_aton("192.0.2.14"), socket.inet_aton("239.17.0.1")
    udp = struct.pack("!HHHH", 36001, 36001, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 1, 17, 0, src, dst)
    eth = bytes.fromhex("01005e110001") + bytes.fromhex("020000000001") + b"\x08\x00"
    return eth + ip + udp

S = 20000
frames = []
for i in range(40):
    s, f = divmod(S * 100 + i, 100)
    frames.append(header(s, f, 4 + 16) + bytes([i]) * 128)
frames.append(header(S, 40, 4 + 17) + bytes(128))            # length lies: 136 claimed, 128 sent
frames.append(header(S, 100, 4 + 16) + bytes(128))           # frame number 100 of 100
frames.append(header(S, 41, 2 + 16, legacy=True) + bytes(128))  # 16-byte header, 144 bytes
frames.append(header(S - 5, 0, 4 + 16) + bytes(128))             # 5 s back: behind the window
frames.append(header(S - 10000, 0, 4 + 16) + bytes(128))      # far back: off the timeline
with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for k, f in enumerate(frames):
        d = datagram(f)
        out.write(struct.pack("<IIII", 1000 + k, 0, len(d), len(d)) + d)
PY
run_daemon bad "$tmp/bad.pcap" \
  "{ format: vdif, frames_per_second: 100, antennas: [ { name: st04, source: 192.0.2.14 } ] }" \
  "raw"
python3 - "$tmp/out/bad" <<'PY'
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/manifest.json"))
rej, st = m["rejected"], m["streams"][0]
want = {"vdif_size_mismatch": 1, "vdif_frame_out_of_range": 1, "vdif_header_form": 1,
        "timeline_outlier": 1}
for k, v in want.items():
    assert rej.get(k, 0) == v, (k, rej)
assert st["packets"] == 41 and st["late_dropped"] == 1 and st["lost"] == 0, st
raw = open(d + "/239.17.0.1_36001_st04.0000.vdif", "rb").read()
assert len(raw) == 40 * 160, len(raw)
assert all(raw[i * 160 + 32] == i for i in range(40)), "a frame other than the good ones"
print("malformed ok:", rej)
PY

# A killed VDIF run: attempt 1 replays at the recorded pace and is killed (SIGKILL) mid-way; the
# restart recovers it (the open raw file cut to whole VDIF frames, every file relisted) and
# replays the whole file as attempt 2. `rocecap verify` checks each attempt's window byte for
# byte; a byte changed in attempt 1's file is then found.
"$rocecap" gen --format vdif --frames-per-second 1000 --groups 239.17.0.1:36001 \
  --sources 192.0.2.15 --frames 8000 --rate 1000 --payload-bytes 1024 --nchan 2 --nbits 4 \
  --station KL --seed 9 --pcap "$tmp/killed.pcap" --summary "$tmp/killed.json" >/dev/null
killed_yaml() {  # replay pace
  cat > "$tmp/killed.yaml" <<YAML
run: { name: killed }
capture:
  backend: pcap-file
  pcap_file: $tmp/killed.pcap
  replay_pace: $1
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams: { format: vdif, frames_per_second: 1000, antennas: [ { name: st05, source: 192.0.2.15 } ] }
output: { directory: $tmp/out, formats: [raw, vdifhdr], rotate: 1MiB }
metrics: { enabled: false }
logging: { level: warn }
YAML
}
killed_yaml recorded
"$rocecapd" --config "$tmp/killed.yaml" 2>"$tmp/killed1.log" &
pid=$!
for _ in $(seq 1 100); do  # until attempt 1 has written a few MiB (at most 10 s)
  [ "$(du -sk --apparent-size "$tmp/out/killed" 2>/dev/null | cut -f1)" -gt 2500 ] 2>/dev/null && break
  sleep 0.1
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
# What attempt 1 left: every raw file must survive recovery, cut to whole frames at most.
(cd "$tmp/out/killed" && stat -c '%n %s' ./*.vdif) >"$tmp/killed.files"
killed_yaml fast
"$rocecapd" --config "$tmp/killed.yaml" 2>"$tmp/killed2.log"
grep -q "attempt 1 did not end cleanly" "$tmp/killed2.log" || { cat "$tmp/killed2.log"; exit 1; }
while read -r name size; do
  now=$(stat -c %s "$tmp/out/killed/$name" 2>/dev/null || echo missing)
  if [ "$now" = missing ] || [ $((now % 1056)) != 0 ] || [ $((size - now)) -ge 1056 ]; then
    echo "FAIL: recovery left $name at $now bytes (attempt 1 wrote $size)"
    exit 1
  fi
done <"$tmp/killed.files"
"$rocecap" verify --manifest "$tmp/out/killed/manifest.json" --expect "$tmp/killed.json" \
  >"$tmp/killed.verify"
grep -q "raw: windows \[0, [0-9]*\], \[0, 7999\] byte-identical" "$tmp/killed.verify" ||
  { cat "$tmp/killed.verify"; exit 1; }
first=$tmp/out/killed/239.17.0.1_36001_st05.0000.vdif
printf '\x5a' | dd of="$first" bs=1 seek=50000 conv=notrunc status=none
if "$rocecap" verify --manifest "$tmp/out/killed/manifest.json" --expect "$tmp/killed.json" \
  >"$tmp/killed.verify2"; then
  echo "FAIL: verify passed a changed byte in a killed attempt's file"
  exit 1
fi
grep -q "raw: frame index 47 at byte 49632 differs" "$tmp/killed.verify2" ||
  { cat "$tmp/killed.verify2"; exit 1; }
echo "killed VDIF run ok: recovered, both attempts verified, a changed byte found"
