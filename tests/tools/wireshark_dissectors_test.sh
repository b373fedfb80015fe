#!/usr/bin/env bash
# The Wireshark dissectors (tools/wireshark/codif.lua, vdif.lua) in the real tshark, on captures
# `rocecap gen --pcap` wrote, compared with `rocecap inspect --json` on the same files: per
# stream the frames decoded, their absolute indices (first, last, gaps), invalid frames, the
# first and last frame's absolute time to the nanosecond and every field of the first header;
# rejected datagrams (bad sync words, cut frames) as inspect counts them. CODIF v3 and v1 (a
# 27 s period, a late epoch), VDIF with and without VTP, several threads, legacy headers. The
# extended user data of EDV 1-4, which the generator does not write, on frames built here with
# known values. Preferences: the heuristic off, ports, an extra sync word, VTP and frame rate.
#
# tshark as root: Debian 12's tshark 4.0 runs scripts given with -X lua_script as root (its
# init.lua sets run_user_scripts_when_superuser = true); an older or differently configured one
# that refuses would leave the protocols unregistered, which this test checks first and then
# runs tshark as nobody instead.
#
# usage: wireshark_dissectors_test.sh ROCECAP SOURCE_DIR
set -euo pipefail
rocecap=$1
src=$2
command -v tshark >/dev/null || { echo "SKIP: no tshark"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$src/tools/wireshark/codif.lua" "$src/tools/wireshark/vdif.lua" "$tmp/"
lua=(-X "lua_script:$tmp/codif.lua" -X "lua_script:$tmp/vdif.lua")

as=()
loaded() { "$@" tshark -G protocols "${lua[@]}" 2>/dev/null | grep -q "^CODIF frame	CODIF	codif$"; }
if ! loaded; then
  [ "$(id -u)" -eq 0 ] || { echo "FAIL: tshark did not load the Lua dissectors"; exit 1; }
  as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  loaded "${as[@]}" ||
    { echo "FAIL: tshark loads the Lua dissectors neither as root nor as nobody"; exit 1; }
  echo "tshark refuses Lua as root here: running it as nobody"
fi
ts() { "${as[@]}" tshark "${lua[@]}" "$@" 2>"$tmp/tshark.err" || { cat "$tmp/tshark.err"; exit 1; }; }

codif_fields=(ip.src ip.dst udp.dstport udp.length codif.layout codif.frame codif.seconds codif.epoch
  codif.nbits codif.atypical codif.invalid codif.complex codif.cal codif.representation
  codif.version codif.protocol codif.period codif.thread codif.group codif.secondary
  codif.station_name codif.nchan codif.block_length codif.data_bytes codif.total_samples
  codif.sync codif.samples_per_frame codif.frames_per_period codif.frame_index codif.time)
vdif_fields=(ip.src ip.dst udp.dstport udp.length vdif.vtp_psn vdif.invalid vdif.legacy vdif.seconds
  vdif.epoch vdif.frame vdif.version vdif.nchan vdif.frame_bytes vdif.data_bytes vdif.complex
  vdif.nbits vdif.thread vdif.station_name vdif.edv vdif.samples_per_frame vdif.frame_index
  vdif.time)

# fields NAME FORMAT [tshark options]: one line per datagram (empty fields where not decoded).
fields() {
  local name=$1 kind=$2
  shift 2
  local -n list="${kind}_fields"
  local args=()
  for x in "${list[@]}"; do args+=(-e "$x"); done
  ts -r "$tmp/$name.pcap" -T fields -E header=y "${args[@]}" "$@" >"$tmp/$name.$kind.tsv"
  ts -r "$tmp/$name.pcap" -Y "$kind.size_mismatch" "$@" | wc -l >"$tmp/$name.mismatch"
}

gen() {  # name, gen options
  local name=$1
  shift
  "$rocecap" gen --groups 239.17.0.1:36001,239.17.0.2:36002 --sources 192.0.2.11,192.0.2.12 \
    --frames 400 --payload-bytes 2048 --seed 9 "$@" --pcap "$tmp/$name.pcap" >"$tmp/$name.json"
}

gen codif_v3 --foreign 192.0.2.99 --drop 0.03 --swap 0.02 --duplicate 0.02 --invalid 0.03 \
  --bad-sync 0.02 --truncate 0.02 --station AT --thread-id 5 --group-id 7
fields codif_v3 codif
"$rocecap" inspect --json "$tmp/codif_v3.pcap" >"$tmp/codif_v3.inspect"

gen codif_v1 --layout v1 --period 27 --total-samples 2764800 --epoch 52 --start-seconds 270 \
  --start-frame 5 --drop 0.05 --invalid 0.05 --complex --nchan 4
fields codif_v1 codif
"$rocecap" inspect --json "$tmp/codif_v1.pcap" >"$tmp/codif_v1.inspect"

gen vdif --format vdif --frames-per-second 1600 --epoch 49 --start-seconds 1000 --drop 0.03 \
  --invalid 0.03 --truncate 0.02 --nchan 8 --nbits 2
fields vdif vdif -o vdif.frames_per_second:1600
"$rocecap" inspect --json --vdif 1600 "$tmp/vdif.pcap" >"$tmp/vdif.inspect"

gen vdif_vtp --format vdif --frames-per-second 1600 --vtp --threads 0,3 --drop 0.03 --swap 0.02
fields vdif_vtp vdif -o vdif.frames_per_second:1600
"$rocecap" inspect --json --vdif 1600 --vtp "$tmp/vdif_vtp.pcap" >"$tmp/vdif_vtp.inspect"

gen vdif_legacy --format vdif --frames-per-second 800 --legacy --drop 0.03
fields vdif_legacy vdif -o vdif.frames_per_second:800
"$rocecap" inspect --json --vdif 800 "$tmp/vdif_legacy.pcap" >"$tmp/vdif_legacy.inspect"

/usr/bin/python3 "$src/tests/tools/wireshark_compare.py" "$tmp" codif_v3:codif:rejects \
  codif_v1:codif vdif:vdif:rejects vdif_vtp:vdif vdif_legacy:vdif

# Preferences. The heuristic off: nothing is CODIF; a port makes it so again.
n=$(ts -r "$tmp/codif_v3.pcap" -o codif.heuristic:FALSE -Y codif | wc -l)
[ "$n" -eq 0 ] || { echo "FAIL: codif.heuristic:FALSE still decoded $n datagrams"; exit 1; }
n=$(ts -r "$tmp/codif_v3.pcap" -o codif.heuristic:FALSE -o codif.ports:36002 -Y codif |
  wc -l)
want=$(ts -r "$tmp/codif_v3.pcap" -Y "codif && udp.dstport == 36002" | wc -l)
[ "$n" -eq "$want" ] && [ "$n" -gt 0 ] ||
  { echo "FAIL: codif.ports:36002 decoded $n datagrams, not $want"; exit 1; }
# The generator's bad sync word is the complement of FEEDCAFE: accepted as an extra word, the
# frames inspect rejected as bad_sync decode (with their v3 layout).
bad=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rejected"].get("bad_sync", 0) + sum(s["rejected"].get("bad_sync", 0) for s in json.load(open(sys.argv[1]))["streams"]))' "$tmp/codif_v3.inspect")
n=$(ts -r "$tmp/codif_v3.pcap" -o codif.extra_sync:0x01123501 -Y "codif.sync == 0x01123501" | wc -l)
[ "$bad" -gt 0 ] && [ "$n" -eq "$bad" ] ||
  { echo "FAIL: extra sync word decoded $n datagrams, inspect rejected $bad as bad_sync"; exit 1; }
# VTP never: the VTP capture is not VDIF at offset 0 (lengths do not match); VTP always: the
# plain capture is not VDIF at offset 8.
n=$(ts -r "$tmp/vdif_vtp.pcap" -o vdif.vtp:Never -Y vdif | wc -l)
[ "$n" -eq 0 ] || { echo "FAIL: vdif.vtp:Never decoded $n VTP datagrams"; exit 1; }
n=$(ts -r "$tmp/vdif.pcap" -o vdif.vtp:Always -Y vdif | wc -l)
[ "$n" -eq 0 ] || { echo "FAIL: vdif.vtp:Always decoded $n plain datagrams"; exit 1; }

# EDV 1-4: frames built with known extended user data.
/usr/bin/python3 "$src/tests/tools/wireshark_compare.py" --edv "$tmp/edv.pcap" "$tmp/edv.expect"
ts -r "$tmp/edv.pcap" -T json -j vdif >"$tmp/edv.json"
/usr/bin/python3 "$src/tests/tools/wireshark_compare.py" --edv-check "$tmp/edv.json" \
  "$tmp/edv.expect"
echo "wireshark dissectors: OK"
