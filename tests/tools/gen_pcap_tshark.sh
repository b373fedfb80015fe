#!/usr/bin/env bash
# `rocecap gen --pcap` read back by tshark and capinfos: frame count, UDP lengths, addresses,
# ports and timestamps agree with the generator's JSON summary.
set -euo pipefail
rocecap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v tshark >/dev/null || { echo "tshark missing"; exit 1; }

"$rocecap" gen --groups 239.17.0.1:36001,239.17.0.2:36002 \
  --sources 192.0.2.11,192.0.2.12,192.0.2.13 --frames 300 --rate 5000 --payload-bytes 8192 \
  --seed 11 --drop-every 50 --drop 0.02 --swap 0.02 --duplicate 0.02 --bad-sync 0.02 \
  --truncate 0.02 --invalid 0.02 --foreign 192.0.2.99 --foreign-prob 0.02 \
  --pcap "$tmp/gen.pcap" --summary "$tmp/summary.json"

capinfos -M -c -T "$tmp/gen.pcap" > "$tmp/capinfos.txt"
tshark -r "$tmp/gen.pcap" -o udp.check_checksum:TRUE -o ip.check_checksum:TRUE \
  -T fields -E separator=, -e frame.time_epoch -e eth.dst -e ip.src -e ip.dst -e udp.dstport \
  -e udp.length -e ip.checksum.status -e udp.checksum.status -e ip.ttl \
  > "$tmp/fields.csv" 2>"$tmp/tshark.err"

python3 - "$tmp" <<'PY'
import collections, json, sys
tmp = sys.argv[1]
s = json.load(open(f"{tmp}/summary.json"))
rows = [l.strip().split(",") for l in open(f"{tmp}/fields.csv") if l.strip()]
fails = []
def check(cond, what):
    if not cond:
        fails.append(what)

caps = open(f"{tmp}/capinfos.txt").read().split("\n")[1].split("\t")
check(int(caps[1]) == s["datagrams"], f"capinfos count {caps[1]} != summary {s['datagrams']}")
check(len(rows) == s["datagrams"], f"tshark rows {len(rows)} != summary {s['datagrams']}")
check(s["output"] == "pcap" and s["datagrams"] > 0, "summary output/datagrams")

frame = s["frame"]["payload_bytes"] + 64
cut = 64 + s["frame"]["payload_bytes"] // 2 // 8 * 8
per = collections.Counter((r[2], r[3], int(r[4]), int(r[5])) for r in rows)
for st in s["streams"]:
    full = per[(st["source"], st["group"], st["port"], 8 + frame)]
    short = per[(st["source"], st["group"], st["port"], 8 + cut)]
    check(short == len(st["truncated"]), f"{st['group']} {st['source']}: {short} short datagrams, summary {len(st['truncated'])}")
    check(full + short == st["datagrams"], f"{st['group']} {st['source']}: {full + short} datagrams, summary {st['datagrams']}")
    check(len(st["dropped"]) >= st["frames"] // 50, "drop-every count")
for f in s["foreign"]:
    n = per[(f["source"], f["group"], f["port"], 8 + frame)]
    check(n == len(f["indices"]), f"foreign {f['group']}: {n} != {len(f['indices'])}")

for r in rows:
    g = [int(x) for x in r[3].split(".")]
    mac = "01:00:5e:%02x:%02x:%02x" % (g[1] & 0x7F, g[2], g[3])
    check(r[1] == mac, f"dst mac {r[1]} for {r[3]}")
    check(r[6] == "1" and r[7] == "1", f"checksum status ip={r[6]} udp={r[7]}")
    check(r[8] == "1", "ttl")
times = [float(r[0]) for r in rows]
check(all(b >= a for a, b in zip(times, times[1:])), "timestamps not in order")
# 300 slots of 6 streams at 5000 frames/s per stream: the schedule spans 300 / 5000 s.
span = times[-1] - times[0]
check(abs(span - 299.8 / 5000) < 1e-3, f"timestamps span {span} s, schedule says {299.8 / 5000}")
if fails:
    print("\n".join(fails[:20]))
    sys.exit(1)
print(f"ok: {len(rows)} frames")
PY

# --gbps: all streams together carry that many bits of UDP payload per second of timestamps.
"$rocecap" gen --groups 239.17.0.3:36003 --sources 192.0.2.11,192.0.2.12 --frames 500 \
  --gbps 2.5 --payload-bytes 7168 --pcap "$tmp/gbps.pcap" --summary "$tmp/gbps.json"
tshark -r "$tmp/gbps.pcap" -T fields -E separator=, -e frame.time_epoch -e udp.length \
  > "$tmp/gbps.csv" 2>/dev/null
python3 - "$tmp" <<'PY'
import sys
from decimal import Decimal
tmp = sys.argv[1]
rows = [l.strip().split(",") for l in open(f"{tmp}/gbps.csv") if l.strip()]
assert len(rows) == 1000, len(rows)
bits = sum((int(r[1]) - 8) * 8 for r in rows)
# n datagrams span n - 1 intervals of the schedule.
span = (Decimal(rows[-1][0]) - Decimal(rows[0][0])) * len(rows) / (len(rows) - 1)
gbps = bits / float(span) / 1e9
assert abs(gbps - 2.5) < 0.01, f"{gbps} Gbit/s in the timestamps, asked for 2.5"
print(f"ok: {gbps:.4f} Gbit/s")
PY
