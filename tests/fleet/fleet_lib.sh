# shellcheck shell=bash
# shellcheck disable=SC2034  # FLEET_* variables are read by the sourcing script
# Shared by the fleet tests: a real etcd (Debian's etcd-server) and rocecap-agents, all inside
# the receiver namespace of tests/integration/netns.sh (its own loopback: nothing listens in the
# caller's namespace), generators in the sender namespace. Source after netns.sh and e2e_lib.sh.
#
#   fleet_require_etcd               # exits 77 (SKIPPED) when etcd is not installed
#   fleet_start_etcd                 # etcd on 127.0.0.1:$FLEET_ETCD_PORT in the receiver ns,
#                                    # data in $work/etcd; waits until it answers; pid FLEET_ETCD_PID
#   fleet_stop_etcd                  # kill -9 (a crash, not a shutdown)
#   fleet_start_agent HOST           # rocecap-agent --host HOST, state in $work/HOST; pid in
#                                    # FLEET_AGENT_PID[HOST]; log $work/HOST.agent.log (appended)
#   fleet_cli ARGS...                # `rocecap fleet ARGS --etcd ...` in the receiver namespace
#   fleet_host_state RUN HOST        # HOST's state in `fleet status --json` ("" if none)
#   fleet_wait_state RUN HOST STATE SECONDS   # until HOST shows STATE; 1 on timeout
#   fleet_daemon_pid HOST            # pid of the rocecapd HOST's agent started (current.json)
#   fleet_wait_capturing HOST RUN SECONDS # until that rocecapd's log says it is capturing
#   fleet_plan FILE RUN HOST/IFACE/GROUPS ...   # a plan, each host's groups comma-separated
#
# Needs: $AGENT, $ROCECAP, $ROCECAPD, $work, $FLEET (fleet name), netns_up done.

: "${FLEET_ETCD_PORT:=2379}"
FLEET_ETCD_URL="http://127.0.0.1:$FLEET_ETCD_PORT"
FLEET_ETCD_PID=""
declare -A FLEET_AGENT_PID=()

fleet_require_etcd() {
  command -v etcd >/dev/null || { echo "SKIP: etcd not installed (apt-get install etcd-server)"; exit 77; }
}

_fleet_etcd_up() {
  netns_exec_receiver curl -s -m 1 -X POST "$FLEET_ETCD_URL/v3/kv/range" -d '{"key":"AA=="}' \
    2>/dev/null | grep -q '"header"'
}

fleet_start_etcd() {
  local i
  netns_bg_receiver etcd --name fleet-test --data-dir "$work/etcd" \
    --listen-client-urls "$FLEET_ETCD_URL" --advertise-client-urls "$FLEET_ETCD_URL" \
    --listen-peer-urls http://127.0.0.1:$((FLEET_ETCD_PORT + 1)) \
    --initial-advertise-peer-urls http://127.0.0.1:$((FLEET_ETCD_PORT + 1)) \
    --initial-cluster fleet-test=http://127.0.0.1:$((FLEET_ETCD_PORT + 1)) \
    >>"$work/etcd.log" 2>&1
  FLEET_ETCD_PID=$NETNS_BG_PID
  for ((i = 0; i < 100; i++)); do
    _fleet_etcd_up && return 0
    sleep 0.1
  done
  echo "FAIL: etcd did not answer on $FLEET_ETCD_URL:"
  tail -20 "$work/etcd.log"
  return 1
}

fleet_stop_etcd() {
  local inner
  inner=$(pgrep -P "$FLEET_ETCD_PID" -x etcd || true)
  kill -9 ${inner:+"$inner"} "$FLEET_ETCD_PID" 2>/dev/null || true
  wait "$FLEET_ETCD_PID" 2>/dev/null || true
}

fleet_start_agent() {
  local host=$1 i
  mkdir -p "$work/$host"
  netns_bg_receiver "$AGENT" --fleet "$FLEET" --host "$host" --etcd "$FLEET_ETCD_URL" \
    --state-dir "$work/$host" --rocecapd "$ROCECAPD" --rocecap "$ROCECAP" \
    --lease-ttl 3 --poll-ms 200 >>"$work/$host.agent.log" 2>&1
  for ((i = 0; i < 50; i++)); do
    FLEET_AGENT_PID[$host]=$(pgrep -P "$NETNS_BG_PID" -x rocecap-agent || true)
    [ -n "${FLEET_AGENT_PID[$host]}" ] && return 0
    sleep 0.1
  done
  echo "FAIL: rocecap-agent for $host did not start:"
  cat "$work/$host.agent.log"
  return 1
}

fleet_cli() { netns_exec_receiver "$ROCECAP" fleet "$@" --etcd "$FLEET_ETCD_URL"; }

fleet_host_state() {
  fleet_cli status --fleet "$FLEET" --run "$1" --json 2>/dev/null |
    python3 -c 'import json,sys
d=json.load(sys.stdin)
print(next((h["state"] for h in d["hosts"] if h["host"]==sys.argv[1]),""))' "$2" 2>/dev/null || true
}

fleet_wait_state() {
  local run=$1 host=$2 want=$3 seconds=$4 i
  for ((i = 0; i < seconds * 4; i++)); do
    [ "$(fleet_host_state "$run" "$host")" = "$want" ] && return 0
    sleep 0.25
  done
  return 1
}

fleet_daemon_pid() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid",0))' \
    "$work/$1/current.json" 2>/dev/null || echo 0
}

fleet_wait_capturing() {
  local host=$1 run=$2 seconds=$3 i
  for ((i = 0; i < seconds * 10; i++)); do
    grep -q "capturing .* streams" "$work/$host/runs/$run.log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: $host's rocecapd for $run is not capturing:"
  cat "$work/$host/runs/$run.log" 2>/dev/null || true
  cat "$work/$host.agent.log"
  return 1
}

# fleet_plan FILE RUN HOST/IFACE/G1,G2 ...: the common part from $FLEET_COMMON (YAML text).
fleet_plan() {
  local file=$1 run=$2 spec host iface groups n=0
  shift 2
  {
    echo "fleet:"
    echo "  name: $FLEET"
    echo "hosts:"
    for spec in "$@"; do
      IFS=/ read -r host iface groups <<<"$spec"
      n=$((n + 1))
      echo "  - name: $host"
      echo "    interfaces:"
      echo "      - name: $iface"
      echo "        groups: [${groups//,/, }]"
      echo "    output: $work/$host/out"
      echo "    metrics: 127.0.0.1:$((9470 + n))"
    done
    echo "run:"
    echo "  name: $run"
    echo "$FLEET_COMMON"
  } >"$file"
}
