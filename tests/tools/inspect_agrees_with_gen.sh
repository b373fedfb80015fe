#!/usr/bin/env bash
# `rocecap inspect --json` on a generated pcap reports what the generator's summary lists:
# per stream the gaps, duplicates, late (swapped), invalid and rejected frames. The table
# output names every stream.
set -euo pipefail
rocecap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$rocecap" gen --groups 239.17.0.5:36005 --sources 192.0.2.21,192.0.2.22 --frames 2000 \
  --payload-bytes 1024 --nchan 2 --complex --period 2 --start-seconds 600 --start-frame 17 \
  --station AT --thread-id 8 --seed 5 --drop 0.01 --swap 0.01 --duplicate 0.01 \
  --bad-sync 0.01 --truncate 0.01 --invalid 0.01 --pcap "$tmp/g.pcap" > "$tmp/summary.json"
"$rocecap" inspect --json "$tmp/g.pcap" > "$tmp/inspect.json"
"$rocecap" inspect "$tmp/g.pcap" > "$tmp/inspect.txt"

python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
s = json.load(open(f"{tmp}/summary.json"))
r = json.load(open(f"{tmp}/inspect.json"))
text = open(f"{tmp}/inspect.txt").read()
fails = []
def check(cond, what):
    if not cond:
        fails.append(what)
check(r["records"] == s["datagrams"], "records")
check(len(r["streams"]) == len(s["streams"]), "stream count")
for st in s["streams"]:
    m = [x for x in r["streams"] if x["group"] == st["group"] and x["source"] == st["source"]]
    check(len(m) == 1, f"stream {st['source']} not found once")
    if not m:
        continue
    x = m[0]
    name = f"{st['group']}:{st['port']} <- {st['source']}"
    check(name in text, f"table lacks {name}")
    lost = set(st["dropped"]) | set(st["bad_sync"]) | set(st["truncated"])
    idx = [i for i in range(st["first_index"], st["first_index"] + st["frames"]) if i not in lost]
    gaps = []
    for i in range(idx[0], idx[-1] + 1):
        if i in lost:
            if gaps and gaps[-1][0] + gaps[-1][1] == i:
                gaps[-1][1] += 1
            else:
                gaps.append([i, 1])
    check(x["gaps"] == gaps, f"{name}: gaps {x['gaps'][:5]} vs {gaps[:5]}")
    check(x["first_index"] == idx[0] and x["last_index"] == idx[-1], f"{name}: first/last")
    check(x["duplicates"] == len(st["duplicated"]), f"{name}: duplicates")
    check(x["late"] == len(st["swapped"]), f"{name}: late")
    check(x["invalid"] == len(st["invalid"]), f"{name}: invalid")
    check(x["rejected"].get("bad_sync", 0) == len(st["bad_sync"]), f"{name}: bad_sync")
    check(x["rejected"].get("size_mismatch", 0) == len(st["truncated"]), f"{name}: truncated")
    h = x["first_header"]
    check(h["station"] == "AT" and h["thread_id"] == 8 + st["antenna"], f"{name}: ids")
    check(h["nchan"] == 2 and h["complex"] and h["period"] == 2, f"{name}: header fields")
    spf = 1024 * 8 // (2 * 8 * 2)
    check(h["samples_per_frame"] == spf and h["frames_per_period"] == 10000, f"{name}: timing")
    check(st["first_index"] == 300 * 10000 + 17, f"{name}: summary first index")
if fails:
    print("\n".join(fails))
    sys.exit(1)
print("ok")
PY

# The older header layout is generated and recognised as such.
"$rocecap" gen --groups 239.17.0.5:36005 --sources 192.0.2.21 --frames 20 --layout v1 \
  --pcap "$tmp/v1.pcap" >/dev/null
"$rocecap" inspect --json "$tmp/v1.pcap" | python3 -c '
import json, sys
r = json.load(sys.stdin)
h = r["streams"][0]["first_header"]
assert h["layout"] == "v1" and h["sync"] == "0xABADDEED", h
assert r["streams"][0]["frames"] == 20 and r["streams"][0]["gaps"] == [], r["streams"][0]
print("ok: v1")'
