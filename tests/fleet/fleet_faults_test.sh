#!/usr/bin/env bash
# Fleet faults (doc/fleet.md, "Guarantees"), against a real etcd and three rocecap-agents in
# the receiver namespace, each with its own rocecapd (backend pcap) on the veth:
#
#  1. a plan that one host refuses (an interface it does not have): `fleet start` exits 1 with
#     that host's problem, the run is cancelled, no rocecapd starts anywhere; with --partial the
#     other two start and status shows the refused host `excluded`;
#  2. a capture goes on while etcd is down (killed with -9, longer than the lease TTL): the
#     rocecapds keep receiving (their own counters grow), and once etcd is back the hosts'
#     status keys come back (capturing, etcd_outages counted);
#  3. an agent stopped and started again adopts the rocecapd still running (same pid);
#  4. kill -9 of one host (its agent and its rocecapd): `status` shows it `lost` within the lease
#     TTL (3 s) + a poll, the other host goes on capturing;
#  5. `fleet stop`: the live host stops with its manifest; the lost one is reported, and
#     `fleet manifest` exits 1 naming it;
#  6. traffic that began before the run: every stream of the host begins with the first frame
#     of the start second (run.start), the earlier frames counted as rejected before_start.
#
# usage: fleet_faults_test.sh ROCECAP-AGENT ROCECAPD ROCECAP. As root (exits 77 otherwise).
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

e2e_workdir fleet-faults
NETNS_CMD_TIMEOUT=180
NETNS_MAX_SECONDS=220
NETNS_ANTENNA_ADDRS="192.0.2.11 192.0.2.12"
netns_up
FLEET=lab
fleet_start_etcd
for h in cap1 cap2 cap3; do fleet_start_agent "$h"; done
FLEET_COMMON="  duration: 120s
capture:
  backend: pcap
  poll_mode: event
  payload_memory: host
  ring_depth: 1024
  max_frame: 2048
streams:
  format: codif
  antennas:
    - { name: ant1, source: 192.0.2.11 }
    - { name: ant2, source: 192.0.2.12 }
output:
  directory: /nonexistent/replaced-per-host
  formats: [raw]
logging:
  level: info"
g=239.17.0
IF=$NETNS_RECEIVER_IF
fail() { echo "FAIL: $*"; for f in "$work"/*.agent.log; do echo "== $f"; tail -30 "$f"; done; exit 1; }

# 0. A plan with its own run.start: refused (the fleet chooses the start time), nothing written.
fleet_plan "$work/own-start.yaml" own "cap1/$IF/$g.1:36001"
sed -i 's/^  name: own$/  name: own\n  start: 2030-01-01T00:00:00Z/' "$work/own-start.yaml"
rc=0
fleet_cli start "$work/own-start.yaml" >/dev/null 2>"$work/own.err" || rc=$?
[ "$rc" = 2 ] && grep -q "the plan sets run.start" "$work/own.err" || fail "a plan's run.start: exit $rc: $(cat "$work/own.err")"
rc=0
fleet_cli status --fleet lab --run own >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "the refused run was written to etcd"

# 1. One host refuses: nothing starts; --partial starts the rest.
fleet_plan "$work/bad.yaml" refused "cap1/$IF/$g.1:36001" "cap2/nosuch0/$g.2:36001" "cap3/$IF/$g.3:36001"
rc=0
fleet_cli start "$work/bad.yaml" --lead 1 >"$work/bad.out" 2>"$work/bad.err" || rc=$?
[ "$rc" = 1 ] || fail "start of a refused plan exited $rc"
grep -q "cap2: refused its run file" "$work/bad.err" || fail "no refusal of cap2: $(cat "$work/bad.err")"
grep -q "no network interface 'nosuch0' on this host" "$work/bad.err" || fail "no problem text: $(cat "$work/bad.err")"
grep -q "cancelled, no host started" "$work/bad.err" || fail "not cancelled: $(cat "$work/bad.err")"
sleep 1.5
for h in cap1 cap3; do
  [ ! -e "$work/$h/out/refused" ] || fail "$h started a cancelled run"
  [ "$(fleet_host_state refused "$h")" = accepted ] || [ "$(fleet_host_state refused "$h")" = cancelled ] ||
    fail "$h of the cancelled run is $(fleet_host_state refused "$h")"
done

# Traffic for the rest of the test, started before the run: 45 s at 200 frames/s per stream on
# both hosts' groups, CODIF time = wall clock. The run's start time (run.start) must then cut
# every stream of every host at the same frame: the first of the start second.
now=$(date -u +%s)
year=$(date -u +%Y) month=$(date -u +%-m)
epoch=$((2 * (year - 2000) + (month >= 7 ? 1 : 0)))
epoch_start=$(date -u -d "$year-$([ "$month" -ge 7 ] && echo 07 || echo 01)-01" +%s)
netns_exec_sender "$ROCECAP" gen --groups "$g.1:36001,$g.3:36001" --sources 192.0.2.11,192.0.2.12 \
  --duration 45 --rate 200 --payload-bytes 1024 --nchan 2 --nbits 4 --complex --period 1 \
  --total-samples $((512 * 200)) --epoch "$epoch" --start-seconds $((now - epoch_start)) \
  --station AT --interface "$NETNS_SENDER_IF" >/dev/null 2>"$work/gen.err" &
gen=$!
netns_on_exit "kill $gen 2>/dev/null"

fleet_plan "$work/partial.yaml" obs2 "cap1/$IF/$g.1:36001" "cap2/nosuch0/$g.2:36001" "cap3/$IF/$g.3:36001"
fleet_cli start "$work/partial.yaml" --partial --lead 1 >"$work/partial.out" 2>"$work/partial.err" ||
  fail "start --partial: $(cat "$work/partial.out" "$work/partial.err")"
grep -q "go, 2 hosts start" "$work/partial.out" || fail "partial start said: $(cat "$work/partial.out")"
for h in cap1 cap3; do fleet_wait_capturing "$h" obs2 20; done
[ "$(fleet_host_state obs2 cap2)" = excluded ] || fail "cap2 is $(fleet_host_state obs2 cap2), not excluded"
# Busy hosts refuse another run while obs2 goes on.
fleet_plan "$work/busy.yaml" obs3 "cap1/$IF/$g.1:36001" "cap3/$IF/$g.3:36001"
rc=0
fleet_cli start "$work/busy.yaml" >/dev/null 2>"$work/busy.err" || rc=$?
[ "$rc" = 1 ] && grep -q "cap1 (in run obs2, go)" "$work/busy.err" || fail "busy hosts: exit $rc: $(cat "$work/busy.err")"

packets() { netns_exec_receiver curl -s -m 2 "http://127.0.0.1:$1/metrics" |
  awk '/^rocecap_stream_received_packets_total/ {s += $NF} END {print s + 0}'; }
sleep 2
fleet_wait_state obs2 cap1 capturing 10 || fail "cap1 not capturing"

# 2. etcd down for 5 s (> the 3 s lease): the captures go on, the keys come back.
fleet_stop_etcd
before1=$(packets 9471) before3=$(packets 9473)
sleep 5
after1=$(packets 9471) after3=$(packets 9473)
[ "$after1" -gt "$before1" ] && [ "$after3" -gt "$before3" ] ||
  fail "captures stalled while etcd was down: cap1 $before1 -> $after1, cap3 $before3 -> $after3"
for h in cap1 cap3; do kill -0 "$(fleet_daemon_pid $h)" || fail "$h's rocecapd died with etcd"; done
grep -q "the capture goes on" "$work/cap1.agent.log" || fail "cap1's agent did not log the outage"
fleet_start_etcd
for h in cap1 cap3; do fleet_wait_state obs2 "$h" capturing 10 || fail "$h did not come back after etcd"; done
fleet_cli status --fleet lab --run obs2 --json >"$work/after-etcd.json"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
h = {x["host"]: x for x in d["hosts"]}
assert h["cap1"]["status"]["etcd_outages"] >= 1, h["cap1"]
assert h["cap1"]["status"]["packets"] > 0, h["cap1"]' "$work/after-etcd.json" || fail "status after etcd"

# 3. The agent of cap1 stops (SIGTERM) and starts again: it adopts the same rocecapd.
pid1=$(fleet_daemon_pid cap1)
kill -TERM "${FLEET_AGENT_PID[cap1]}"
sleep 1
kill -0 "$pid1" || fail "rocecapd of cap1 ended with its agent"
fleet_start_agent cap1
for ((i = 0; i < 50; i++)); do grep -q "adopted rocecapd (pid $pid1)" "$work/cap1.agent.log" && break; sleep 0.1; done
grep -q "adopted rocecapd (pid $pid1)" "$work/cap1.agent.log" || fail "no adoption of $pid1"
fleet_wait_state obs2 cap1 capturing 10 || fail "cap1 not capturing after adoption"
[ "$(fleet_daemon_pid cap1)" = "$pid1" ] || fail "cap1 runs another rocecapd: $(fleet_daemon_pid cap1)"
[ "$(pgrep -c -x rocecapd)" -ge 2 ] || fail "rocecapds gone"

# 4. cap3 dies (kill -9 of agent and rocecapd): lost within the TTL, cap1 goes on.
pid3=$(fleet_daemon_pid cap3)
kill -9 "${FLEET_AGENT_PID[cap3]}" "$pid3"
t0=$(date +%s%N)
fleet_wait_state obs2 cap3 lost 6 || fail "cap3 not lost 6 s after its death: $(fleet_host_state obs2 cap3)"
echo "cap3 lost after $((($(date +%s%N) - t0) / 1000000)) ms (lease TTL 3 s)"
b=$(packets 9471); sleep 1; a=$(packets 9471)
[ "$a" -gt "$b" ] || fail "cap1 stopped capturing when cap3 died"
[ "$(fleet_host_state obs2 cap1)" = capturing ] || fail "cap1 is $(fleet_host_state obs2 cap1)"

# 5. Stop: cap1 stops with its manifest; cap3 is reported lost; the fleet manifest names it.
rc=0
fleet_cli stop --fleet lab --run obs2 --wait 20 >"$work/stop.out" 2>&1 || rc=$?
cat "$work/stop.out"
[ "$rc" = 1 ] && grep -q "cap3: lost" "$work/stop.out" && grep -q "cap1: stopped" "$work/stop.out" ||
  fail "stop exited $rc"
kill -0 "$pid1" 2>/dev/null && fail "cap1's rocecapd still runs after stop"
rc=0
fleet_cli manifest --fleet lab --run obs2 >"$work/fm.json" 2>"$work/fm.err" || rc=$?
[ "$rc" = 1 ] && grep -q "no manifest from cap3 (lost)" "$work/fm.err" || fail "fleet manifest exit $rc: $(cat "$work/fm.err")"
start_ns=$(fleet_cli status --fleet lab --run obs2 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["start_ns"])')
python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))
assert list(m["hosts"]) == ["cap1"], m["hosts"].keys()
assert m["hosts"]["cap1"]["state"] == "stopped" and m["totals"]["packets"] > 0, m["totals"]
# run.start: traffic ran before it; every stream begins with the start second s first frame.
start = int(sys.argv[3])
own = json.load(open(sys.argv[2]))
assert own["rejected"].get("before_start", 0) > 0, own["rejected"]
firsts = {s["first_frame"]["unix_ns"] for s in own["streams"]}
assert firsts == {start}, (firsts, start)' "$work/fm.json" "$work/cap1/out/obs2/manifest.json" "$start_ns" ||
  fail "fleet manifest content or the start frame"
kill "$gen" 2>/dev/null || true
passed=1
echo PASS
