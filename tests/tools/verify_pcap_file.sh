#!/usr/bin/env bash
# End to end through the real binaries: `rocecap gen --pcap` with every impairment ->
# `rocecapd` replaying that pcap file (raw, codifhdr and pcap output, rotated) ->
# `rocecap verify` exits 0. Then single, known corruptions of a copy of the outputs (a data
# byte, a header bit, a removed frame, a manifest counter, a cut pcap file) make it exit 1
# naming the file, offset, frame index and field; unreadable input exits 2.
set -euo pipefail
rocecap=$1
rocecapd=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

payload=2048
frame=$((payload + 64))
"$rocecap" gen --groups 239.17.0.1:36001,239.17.0.2:36002 \
  --sources 192.0.2.11,192.0.2.12,192.0.2.13 --foreign 192.0.2.99 --foreign-prob 0.02 \
  --frames 1500 --payload-bytes $payload --seed 11 --drop 0.02 --swap 0.02 --duplicate 0.02 \
  --bad-sync 0.02 --truncate 0.02 --invalid 0.02 --pcap "$tmp/in.pcap" > "$tmp/summary.json"

# Every impairment occurs, so the run below exercises each rule.
python3 - "$tmp/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for key in ["dropped", "swapped", "duplicated", "bad_sync", "truncated", "invalid"]:
    n = sum(len(st[key]) for st in s["streams"])
    assert n > 0, f"no {key} frames generated"
assert sum(len(f["indices"]) for f in s["foreign"]) > 0, "no foreign copies"
PY

run_daemon() {  # name, extra output settings, extra capture settings
  cat > "$tmp/$1.yaml" <<YAML
run: { name: $1 }
capture:
  backend: pcap-file
  pcap_file: $tmp/in.pcap
  ${3:-}
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001, 239.17.0.2:36002] } ]
streams:
  format: codif
  antennas: [ { name: ak01, source: 192.0.2.11 }, { name: ak02, source: 192.0.2.12 },
              { name: ak03, source: 192.0.2.13 } ]
output: { directory: $tmp/out, rotate: 1MiB, $2 }
metrics: { enabled: false }
logging: { level: warn }
YAML
  "$rocecapd" --config "$tmp/$1.yaml"
}

run_daemon e2e "formats: [raw, codifhdr, pcap]"
"$rocecap" verify --manifest "$tmp/out/e2e/manifest.json" --expect "$tmp/summary.json" \
  > "$tmp/ok.txt"
cat "$tmp/ok.txt"
test "$(grep -c '^OK ' "$tmp/ok.txt")" -eq 7  # 6 streams and the run
grep -q 'raw: [0-9]* files byte-identical' "$tmp/ok.txt"
grep -q 'codifhdr: 1 file byte-identical' "$tmp/ok.txt"
"$rocecap" verify --json --manifest "$tmp/out/e2e/manifest.json" --expect "$tmp/summary.json" |
  python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["ok"] and r["problems"]==0 and len(r["streams"])==6, r'

# Raw files with headers stripped (data only) verify too.
run_daemon stripped "formats: [raw], strip_headers: true"
"$rocecap" verify --manifest "$tmp/out/stripped/manifest.json" --expect "$tmp/summary.json" \
  > "$tmp/stripped.txt" || { cat "$tmp/stripped.txt"; exit 1; }

# Tiny rings: the replay must wait for the writer instead of dropping frames (ring full).
run_daemon tiny "formats: [raw, pcap], reorder_window: 4" "ring_depth: 16"
"$rocecap" verify --manifest "$tmp/out/tiny/manifest.json" --expect "$tmp/summary.json" \
  > "$tmp/tiny.txt" || { cat "$tmp/tiny.txt"; exit 1; }

# No reorder window: every swapped pair's second frame is late_dropped and stays a fill frame.
run_daemon nowindow "formats: [raw, codifhdr], reorder_window: 0"
"$rocecap" verify --json --manifest "$tmp/out/nowindow/manifest.json" \
  --expect "$tmp/summary.json" > "$tmp/nowindow.json" || { cat "$tmp/nowindow.json"; exit 1; }
python3 - "$tmp/nowindow.json" "$tmp/summary.json" <<'PY'
import json, sys
r, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
dropped = sum(x["actual"]["late_dropped"] for x in r["streams"])
late = sum(x["actual"]["late"] for x in r["streams"])
swaps = sum(len(x["swapped"]) for x in s["streams"])
assert r["ok"] and late == 0 and dropped == swaps, (late, dropped, swaps)
PY

# A run that listened for another antenna than one generated does not verify: the generated
# stream is missing and its frames are rejected as no_stream.
sed 's/source: 192.0.2.13/source: 192.0.2.23/; s/name: nowindow/name: partial/' \
  "$tmp/nowindow.yaml" > "$tmp/partial.yaml"
"$rocecapd" --config "$tmp/partial.yaml"
set +e
"$rocecap" verify --manifest "$tmp/out/partial/manifest.json" --expect "$tmp/summary.json" \
  > "$tmp/partial.txt"
rc=$?
set -e
grep -q "generated stream 239.17.0.1:36001 <- 192.0.2.13 is not in the manifest" \
  "$tmp/partial.txt" && grep -q '^OK    rec0 239.17.0.1:36001 ak03 (192.0.2.23): 0 packets' "$tmp/partial.txt" &&
  grep -q 'rejected {.*}, expected {' "$tmp/partial.txt" && test $rc -eq 1 ||
  { echo "FAIL: partial run: exit $rc"; cat "$tmp/partial.txt"; exit 1; }

# A corrupted copy must fail with exit 1 and the expected message.
expect_fail() {  # what, pattern
  set +e
  "$rocecap" verify --manifest "$tmp/bad/e2e/manifest.json" --expect "$tmp/summary.json" \
    > "$tmp/bad.txt" 2>&1
  local rc=$?
  set -e
  if [ $rc -ne 1 ] || ! grep -q -- "$2" "$tmp/bad.txt"; then
    echo "FAIL: $1: exit $rc, wanted 1 and '$2' in:"; cat "$tmp/bad.txt"; exit 1
  fi
  echo "ok: $1 detected"
}
fresh_copy() { rm -rf "$tmp/bad"; cp -a "$tmp/out" "$tmp/bad"; }
# The second raw file of the first stream, and the frame index its 4th frame must hold
# (no rotation splits a frame; every raw file is a whole number of frames).
read -r raw raw_bytes first_index < <(python3 - "$tmp/out/e2e/manifest.json" $frame <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); frame = int(sys.argv[2])
s = m["streams"][0]
raws = [f for f in s["files"] if f["format"] == "raw"]
assert len(raws) >= 2, raws
print(raws[1]["path"], raws[1]["bytes"], s["first_frame"]["index"] + raws[0]["bytes"] // frame + 3)
PY
)
flip() {  # file, offset, xor mask
  python3 - "$1" "$2" "$3" <<'PY'
import sys
path, off, mask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(off); b = f.read(1)[0]; f.seek(off); f.write(bytes([b ^ mask]))
PY
}

fresh_copy
flip "$tmp/bad/$raw" $((3 * frame + 64 + 100)) 1
expect_fail "a data byte" "raw: $raw offset $((3 * frame + 64 + 100)), frame index $first_index: data byte 100"

fresh_copy
flip "$tmp/bad/$raw" $((3 * frame + 10)) 2  # word 1 bit 17
expect_fail "the invalid bit" "raw: $raw offset $((3 * frame + 10)), frame index $first_index: header byte 10 (invalid)"

fresh_copy
python3 - "$tmp/bad/$raw" $((3 * frame)) $frame <<'PY'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
open(path, "wb").write(data[:off] + data[off + n:])
PY
expect_fail "a removed frame" "$raw: $((raw_bytes - frame)) bytes on disk, manifest says $raw_bytes"

fresh_copy
python3 - "$tmp/bad/e2e/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["streams"][2]["lost"] += 1
json.dump(m, open(sys.argv[1], "w"))
PY
expect_fail "a manifest counter" "lost [0-9]*, expected"

fresh_copy
pcap=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["interfaces"][0]["files"][0]["path"])' "$tmp/out/e2e/manifest.json")
truncate -s -100 "$tmp/bad/$pcap"
expect_fail "a cut pcap file" "pcap: $pcap record"

fresh_copy
flip "$tmp/bad/$pcap" 2000 4
expect_fail "a changed pcap record" "pcap: $pcap record"

set +e
"$rocecap" verify --manifest "$tmp/none/manifest.json" --expect "$tmp/summary.json" 2>/dev/null
rc=$?
set -e
test $rc -eq 2 || { echo "FAIL: missing manifest gave exit $rc, wanted 2"; exit 1; }
echo "ok: all checks"
