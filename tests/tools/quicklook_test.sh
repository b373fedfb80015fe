#!/usr/bin/env bash
# `rocecap quicklook` on runs with a known tone and known gaps: `rocecap gen --tone` ->
# rocecapd replaying the pcap file -> `rocecap verify` (the tone's bytes are checked like any
# payload) -> quicklook. What the pictures show is checked through quicklook.json (the numbers
# each one draws): the tone's channel is the bandpass peak in every stream, CODIF and VDIF;
# every loss bar is a frame the generator dropped, at its time, and every dropped frame inside
# the stream has one; a write-error gap in the manifest is drawn as one; the PNGs are real
# images of the expected size with something drawn. Unreadable runs and files are named.
# Uses Debian's python3 (numpy, matplotlib), as rocecap quicklook does.
#
# usage: quicklook_test.sh ROCECAP ROCECAPD
set -euo pipefail
rocecap=$1
rocecapd=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

replay() {  # name format extra-streams-keys [extra-output-keys]
  cat >"$tmp/$1.yaml" <<YAML
run: { name: $1 }
capture:
  backend: pcap-file
  pcap_file: $tmp/$1.pcap
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001, 239.17.0.2:36002] } ]
streams:
  format: $2
  $3
  antennas: [ { name: ak01, source: 192.0.2.11 }, { name: ak02, source: 192.0.2.12 } ]
output: { directory: $tmp/out, rotate: 1MiB, formats: [raw] ${4:-} }
metrics: { enabled: false }
logging: { level: warn }
YAML
  "$rocecapd" --config "$tmp/$1.yaml"
  "$rocecap" verify --manifest "$tmp/out/$1/manifest.json" --expect "$tmp/$1.json" >"$tmp/$1.verify" ||
    { cat "$tmp/$1.verify"; exit 1; }
}

# CODIF: tone at 0.15625 cycles per sample = channel 20 of a 64-channel real bandpass.
"$rocecap" gen --groups 239.17.0.1:36001,239.17.0.2:36002 --sources 192.0.2.11,192.0.2.12 \
  --frames 3000 --payload-bytes 4096 --tone 0.15625 --seed 5 --drop 0.01 \
  --pcap "$tmp/codif.pcap" >"$tmp/codif.json"
replay codif codif ""
"$rocecap" quicklook "$tmp/out/codif" --out "$tmp/ql-codif" --fft 64 >"$tmp/ql-codif.txt"

# VDIF, complex, 4 channels, the tone in channel 2 at -0.125: FFT bin 64 x (0.5 - 0.125) = 24
# of channel 2 after fftshift, i.e. channel 2 x 64 + 24 = 152.
"$rocecap" gen --groups 239.17.0.1:36001,239.17.0.2:36002 --sources 192.0.2.11,192.0.2.12 \
  --format vdif --frames-per-second 2000 --frames 2000 --payload-bytes 4096 --nchan 4 \
  --complex --tone -0.125 --tone-channel 2 --seed 6 --drop 0.01 \
  --pcap "$tmp/vdif.pcap" >"$tmp/vdif.json"
replay vdif vdif "frames_per_second: 2000"
"$rocecap" quicklook "$tmp/out/vdif" --out "$tmp/ql-vdif" --fft 64 >"$tmp/ql-vdif.txt"

# A shorter span reads fewer frames into the bandpass (and still finds the tone).
"$rocecap" quicklook "$tmp/out/codif" --out "$tmp/ql-span" --fft 64 --start 0.1 --span 0.05 \
  >/dev/null

"$py" - "$tmp" <<'PY'
import json, os, sys
import matplotlib.image as mpimg
tmp = sys.argv[1]

def check(name, peak, fps):
    r = json.load(open(f"{tmp}/ql-{name}/quicklook.json"))
    gen = json.load(open(f"{tmp}/{name}.json"))
    man = json.load(open(f"{tmp}/out/{name}/manifest.json"))
    assert r["problems"] == [], r["problems"]
    assert len(r["streams"]) == 4, len(r["streams"])
    for s, m in zip(r["streams"], man["streams"]):
        bp = s["bandpass"]
        assert bp["peak_channel"] == peak, (name, s["label"], bp)
        assert bp["frames"] > 100, bp
        # The generator's drops strictly inside what the stream received are its losses.
        g = next(x for x in gen["streams"] if x["group"] == s["group"] and x["source"] == m["source"])
        first, last = m["first_frame"]["index"], m["last_frame"]["index"]
        dropped = {i for i in g["dropped"] if first < i < last}
        assert dropped, "no drops inside the stream: the check would be empty"
        drawn = set()
        for gap in s["losses"]:
            assert gap["reason"] == "lost", gap
            drawn |= set(range(gap["first_index"], gap["first_index"] + gap["count"]))
            want = (gap["first_index"] - first) / fps
            t0 = (m["first_frame"]["unix_ns"] / 1e9) - r["first_frame_unix"]
            assert abs(gap["start_s"] - (t0 + want)) < 1e-6, (gap, want)
        assert drawn == dropped, (name, s["label"], sorted(drawn ^ dropped))
    for img in r["images"]:
        a = mpimg.imread(img)
        assert a.shape[0] > 200 and a.shape[1] > 1000, (img, a.shape)
        assert a[..., :3].std() > 0.05, f"{img} looks blank"
    assert sorted(os.path.basename(p) for p in r["images"]) == ["ak01.png", "ak02.png", "summary.png"]
    return r

check("codif", 20, 10000)
check("vdif", 2 * 64 + 24, 2000)
full = json.load(open(f"{tmp}/ql-codif/quicklook.json"))["streams"][0]["bandpass"]
part = json.load(open(f"{tmp}/ql-span/quicklook.json"))["streams"][0]["bandpass"]
assert part["peak_channel"] == 20 and 0 < part["frames"] < full["frames"] / 3, (part, full)
assert abs(part["span_s"][0] - 0.1) < 1e-3, part
PY

# A write-error gap in the manifest (a copy of the run: file paths are relative to the run
# directory's parent, as rocecap inspect reads them) is drawn as one, at its frames.
mkdir "$tmp/werr"
cp -r "$tmp/out/codif" "$tmp/werr/"
"$py" - "$tmp/werr/codif/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["streams"][1]["write_error_lost"] = {"raw": {"frames": 40, "fill_frames": 0,
                                               "gaps": [[1200, 40]], "gaps_not_listed": 0}}
json.dump(m, open(sys.argv[1], "w"))
PY
"$rocecap" quicklook "$tmp/werr/codif" --out "$tmp/ql-werr" --fft 64 >/dev/null
"$py" - "$tmp/ql-werr/quicklook.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = [g for g in r["streams"][1]["losses"] if g["reason"] == "write_error"]
assert [(g["first_index"], g["count"]) for g in w] == [(1200, 40)], w
assert abs(w[0]["end_s"] - w[0]["start_s"] - 40 / 10000) < 1e-9, w
assert not [g for g in r["streams"][0]["losses"] if g["reason"] != "lost"]
PY

# A listed raw file that is gone is named, exit 1, and the pictures are still drawn.
rm "$tmp"/werr/codif/*_ak01.0001.codif
rc=0
"$rocecap" quicklook "$tmp/werr/codif" --out "$tmp/ql-gone" --fft 64 >/dev/null 2>"$tmp/gone.err" || rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: a missing raw file gave exit $rc"; exit 1; }
grep -q "ak01.0001.codif: cannot read" "$tmp/gone.err" || { cat "$tmp/gone.err"; exit 1; }
test -s "$tmp/ql-gone/summary.png"

# Raw files without headers (strip_headers): no samples to time, said on the pictures; the
# loss timeline is still drawn, exit 0.
cp "$tmp/codif.pcap" "$tmp/stripped.pcap"
cp "$tmp/codif.json" "$tmp/stripped.json"
replay stripped codif "" ", strip_headers: true"
"$rocecap" quicklook "$tmp/out/stripped" --out "$tmp/ql-stripped" --fft 64 >/dev/null
"$py" - "$tmp/ql-stripped/quicklook.json" "$tmp/ql-codif/quicklook.json" <<'PY'
import json, sys
r, full = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for s, f in zip(r["streams"], full["streams"]):
    assert "strip_headers" in s["note"] and "bandpass" not in s, s
    assert s["losses"] == f["losses"], (s["losses"], f["losses"])
PY

# No manifest: exit 1 naming it; a bad option is refused before anything runs.
rc=0
"$rocecap" quicklook "$tmp" --out "$tmp/ql-none" 2>"$tmp/none.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "$tmp/manifest.json: cannot read" "$tmp/none.err" ||
  { echo "FAIL: no manifest gave exit $rc:"; cat "$tmp/none.err"; exit 1; }
! "$rocecap" quicklook "$tmp/out/codif" --fft 0 2>/dev/null
test ! -e "$tmp/ql-none"
echo "quicklook: OK"
