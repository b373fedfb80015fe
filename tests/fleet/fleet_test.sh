#!/usr/bin/env bash
# Fleet end to end (doc/fleet.md): a real etcd and three rocecap-agents, each running its own
# rocecapd (backend pcap) on the receiver namespace's veth, every one taking 2 of 6 multicast
# groups; three `rocecap gen` senders (one per host's groups) with CODIF time on the wall clock.
#
#   fleet check -> fleet start (one transaction; every host checks its run file and answers;
#   all start at one whole second) -> a second start of the same run is refused -> traffic ->
#   fleet status (3 capturing, packets) -> prometheus-sd (3 targets) -> fleet trigger (every
#   host dumps the same window from its retention) -> fleet stop -> fleet manifest.
# Then: each host's files verify against its generator (`rocecap verify`), the fleet manifest's
# totals equal the sums of the hosts' own manifests, and the trigger's dumps exist on all three
# hosts for the same frame window, byte-identical to each host's continuous raw file.
#
# usage: fleet_test.sh ROCECAP-AGENT ROCECAPD ROCECAP. As root (exits 77 otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
AGENT=${1:?usage: $0 ROCECAP-AGENT ROCECAPD ROCECAP}
ROCECAPD=${2:?}
ROCECAP=${3:?}
source "$here/../integration/netns.sh"
source "$here/../integration/e2e_lib.sh"
source "$here/fleet_lib.sh"
netns_require_root
fleet_require_etcd

e2e_workdir fleet-test
NETNS_CMD_TIMEOUT=150
NETNS_MAX_SECONDS=200
NETNS_ANTENNA_ADDRS="192.0.2.11 192.0.2.12"
netns_up
FLEET=lab
fleet_start_etcd
for h in cap1 cap2 cap3; do fleet_start_agent "$h"; done

rate=1000 # frames per second per stream
FLEET_COMMON="  duration: 90s
capture:
  backend: pcap
  poll_mode: event
  payload_memory: host
  ring_depth: 4096
  max_frame: 2048
streams:
  format: codif
  antennas:
    - { name: ant1, source: 192.0.2.11 }
    - { name: ant2, source: 192.0.2.12 }
output:
  directory: /nonexistent/replaced-per-host
  formats: [raw]
retention:
  retain: 2s
  frame_rate: $rate
  max_future: 2s
  write_rate: 64MiB
  formats: [raw]
metrics:
  listen: 127.0.0.1:9470
logging:
  level: info"
g=239.17.0
fleet_plan "$work/plan.yaml" obs1 \
  "cap1/$NETNS_RECEIVER_IF/$g.1:36001,$g.2:36001" \
  "cap2/$NETNS_RECEIVER_IF/$g.3:36001,$g.4:36001" \
  "cap3/$NETNS_RECEIVER_IF/$g.5:36001,$g.6:36001"

"$ROCECAP" fleet check "$work/plan.yaml" >"$work/check.out" ||
  { echo "FAIL: fleet check refused the plan:"; cat "$work/check.out"; exit 1; }
grep -q "3 hosts: OK" "$work/check.out" || { echo "FAIL: check output:"; cat "$work/check.out"; exit 1; }

fleet_cli start "$work/plan.yaml" --lead 2 >"$work/start.out" 2>"$work/start.err" ||
  { echo "FAIL: fleet start:"; cat "$work/start.out" "$work/start.err"; exit 1; }
grep -q "go, 3 hosts start at" "$work/start.out" || { echo "FAIL: start said:"; cat "$work/start.out"; exit 1; }
rc=0
fleet_cli start "$work/plan.yaml" >/dev/null 2>"$work/start2.err" || rc=$?
if [ "$rc" != 1 ] || ! grep -q "run obs1 exists already" "$work/start2.err"; then
  echo "FAIL: a second start of obs1 exited $rc:"; cat "$work/start2.err"; exit 1
fi
for h in cap1 cap2 cap3; do fleet_wait_capturing "$h" obs1 20; done

# One common start: every agent started rocecapd 2 s (its warm-up) before the start time, with
# run.start in its run file; traffic (CODIF time = wall clock) begins after the start time.
start_ns=$(fleet_cli status --fleet lab --run obs1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["start_ns"])')
python3 - "$work" <<'PY'
import re, sys
work = sys.argv[1]
for h in ("cap1", "cap2", "cap3"):
    log = open(f"{work}/{h}.agent.log").read()
    m = re.search(r"started rocecapd \(pid \d+\), (-?\d+) ms before the start time", log)
    assert m, (h, log)
    assert 1000 < int(m.group(1)) <= 2000, (h, m.group(0))
PY
while [ "$(date +%s%N)" -lt "$start_ns" ]; do sleep 0.1; done
now=$(date -u +%s)
year=$(date -u +%Y) month=$(date -u +%-m)
epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
gens=()
for i in 1 2 3; do
  a=$((2 * i - 1)) b=$((2 * i))
  netns_exec_sender "$ROCECAP" gen --groups "$g.$a:36001,$g.$b:36001" --sources 192.0.2.11,192.0.2.12 \
    --frames $((6 * rate)) --rate "$rate" --payload-bytes 1024 --nchan 2 --nbits 4 --complex \
    --period 1 --total-samples $((512 * rate)) --epoch "$epoch" --start-seconds $((now - epoch_start)) \
    --station AT --seed "$i" --drop-every 97 --interface "$NETNS_SENDER_IF" \
    --summary "$work/sent$i.json" >/dev/null 2>"$work/gen$i.err" &
  gens+=($!)
done
sleep 4 # 4 s of traffic: 2 s retained
fleet_cli status --fleet lab --run obs1 >"$work/status.out"
fleet_cli status --fleet lab --run obs1 --json >"$work/status.json"
fleet_cli prometheus-sd --fleet lab --output "$work/sd.json" >/dev/null
t=$(date -u +%s%N)
ms=1000000
fleet_cli trigger --plan "$work/plan.yaml" --start $((t - 1500 * ms)) --end $((t - 500 * ms)) \
  --label fleetdump >"$work/trigger.json" 2>"$work/trigger.err" ||
  { echo "FAIL: fleet trigger:"; cat "$work/trigger.json" "$work/trigger.err"; exit 1; }
for p in "${gens[@]}"; do wait "$p" || { echo "FAIL: a generator failed:"; cat "$work"/gen*.err; exit 1; }; done
fleet_cli stop --plan "$work/plan.yaml" --wait 30 >"$work/stop.out" 2>&1 ||
  { echo "FAIL: fleet stop:"; cat "$work/stop.out"; exit 1; }
fleet_cli manifest --fleet lab --run obs1 --output "$work/fleet-manifest.json" >/dev/null ||
  { echo "FAIL: fleet manifest"; cat "$work/fleet-manifest.json"; exit 1; }
fleet_cli status --fleet lab --run obs1 >"$work/status-end.out"
cat "$work/status.out" "$work/status-end.out"

for i in 1 2 3; do
  "$ROCECAP" verify --manifest "$work/cap$i/out/obs1/manifest.json" --expect "$work/sent$i.json" \
    >"$work/verify$i.out" || { echo "FAIL: cap$i does not verify:"; cat "$work/verify$i.out"; exit 1; }
done

python3 - "$work" "$start_ns" <<'PY'
import json, os, sys
work = sys.argv[1]
hosts = ("cap1", "cap2", "cap3")
st = json.load(open(f"{work}/status.json"))
assert [h["state"] for h in st["hosts"]] == ["capturing"] * 3, st
assert all(h["status"]["packets"] > 0 for h in st["hosts"]), st
sd = json.load(open(f"{work}/sd.json"))
assert sorted(x["targets"][0] for x in sd) == [f"127.0.0.1:947{i}" for i in (1, 2, 3)], sd
assert {x["labels"]["host"] for x in sd} == set(hosts), sd

# The fleet manifest: per host and total, equal to the hosts' own manifests.
fm = json.load(open(f"{work}/fleet-manifest.json"))
assert fm["missing"] == [] and sorted(fm["hosts"]) == list(hosts), fm
tot = {"packets": 0, "lost": 0, "files": 0, "bytes": 0, "streams": 0}
for h in hosts:
    m = json.load(open(f"{work}/{h}/out/obs1/manifest.json"))
    assert m["state"] == "stopped", (h, m["state"])
    mine = {"packets": sum(s["packets"] for s in m["streams"]),
            "lost": sum(s["lost"] for s in m["streams"]),
            "files": sum(len(s["files"]) for s in m["streams"]),
            "bytes": sum(f["bytes"] for s in m["streams"] for f in s["files"]),
            "streams": len(m["streams"])}
    assert mine["streams"] == 4 and mine["packets"] > 0, (h, mine)
    for k in tot:
        assert fm["hosts"][h]["totals"][k] == mine[k], (h, k, fm["hosts"][h]["totals"], mine)
        tot[k] += mine[k]
    for s in fm["hosts"][h]["streams"]:
        for f in s["files"]:
            assert os.path.getsize(f["path"]) == f["bytes"], f
for k in tot:
    assert fm["totals"][k] == tot[k], (k, fm["totals"], tot)

# The trigger: answered by all three; the same window dumped on every host, byte-exact.
tr = json.load(open(f"{work}/trigger.json"))
assert tr["missing"] == [] and sorted(tr["hosts"]) == list(hosts), tr
frame = 1024 + 64
windows = set()
for h in hosts:
    assert tr["hosts"][h]["exit"] == 0, tr["hosts"][h]
    run = f"{work}/{h}/out/obs1"
    m = json.load(open(f"{run}/manifest.json"))
    raw = {}
    for s in m["streams"]:
        f = [x for x in s["files"] if x["format"] == "raw"][0]
        raw[(f'{s["group"]}:{s["port"]}', s["antenna"])] = (s["first_frame"]["index"],
                                           open(os.path.join(f"{work}/{h}/out", f["path"]), "rb").read())
    d = json.load(open(f"{run}/dumps/0001-fleetdump/dump.json"))
    assert len(d["streams"]) == 4, (h, d)
    for s in d["streams"]:
        w = s["window"]
        windows.add((w["first_frame"], w["last_frame"]))
        assert not s["not_retained"] and s["frames"] + s["fill_frames"] == w["frames"], (h, s)
        first, data = raw[(s["group"], s["antenna"])]
        want = data[(w["first_frame"] - first) * frame:(w["last_frame"] + 1 - first) * frame]
        assert open(s["files"][0]["path"], "rb").read() == want, (h, s["antenna"])
assert len(windows) == 1, windows
# run.start: no stream of any host has a frame before the common start time.
start_ns = int(sys.argv[2])
for h in hosts:
    m = json.load(open(f"{work}/{h}/out/obs1/manifest.json"))
    assert all(s["first_frame"]["unix_ns"] >= start_ns for s in m["streams"]), (h, start_ns)
    assert "start: " in open(f"{work}/{h}/runs/obs1.start.yaml").read(), h
print("fleet: 3 hosts x 4 streams verified; fleet manifest totals = sums; one trigger window on all 3:", windows)
PY
passed=1
echo PASS
