#!/usr/bin/env bash
# Live multicast from `rocecap gen` inside a network namespace made by this test: every
# datagram leaves from its antenna's source address and arrives, counts agree with the
# summary, pacing never runs ahead of the schedule, and SIGINT ends a long run cleanly with an
# exact summary. Needs root (exit 77 = skipped otherwise).
set -euo pipefail
rocecap=$1
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "needs root for a network namespace: skipped"; exit 77; }
ns=rcgen-$$
tmp=$(mktemp -d)
cleanup() {
  [ -n "${rx_pid:-}" ] && kill "$rx_pid" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns"
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up
for a in 192.0.2.11 192.0.2.12 192.0.2.13 192.0.2.99; do in_ns ip addr add "$a/32" dev lo; done
in_ns ip route add 224.0.0.0/4 dev lo

groups=(239.17.0.1:36001 239.17.0.2:36002)
start_receiver() {  # start_receiver OUT
  rm -f "$tmp/ready"
  ip netns exec "$ns" python3 "$here/mcast_receiver.py" lo "$1" "$tmp/ready" "${groups[@]}" &
  rx_pid=$!
  for _ in $(seq 100); do [ -e "$tmp/ready" ] && return 0; sleep 0.1; done
  echo "receiver did not start"
  exit 1
}
compare() {  # compare SUMMARY RECEIVED: per stream count, source address, thread id, lengths
  python3 - "$1" "$2" <<'PY'
import json, sys
s, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fails, expect = [], {}
for st in s["streams"]:
    key = f"{st['source']}|{st['group']}|{st['port']}"
    expect[key] = st["datagrams"]
    if r["threads"].get(key, []) != [st["antenna"]]:
        fails.append(f"{key}: thread ids {r['threads'].get(key)}")
for f in s["foreign"]:
    expect[f"{f['source']}|{f['group']}|{f['port']}"] = len(f["indices"])
for k in sorted(set(expect) | set(r["counts"])):
    if expect.get(k, 0) != r["counts"].get(k, 0):
        fails.append(f"{k}: sent {expect.get(k, 0)}, received {r['counts'].get(k, 0)}")
if sum(r["counts"].values()) != s["datagrams"]:
    fails.append(f"total received {sum(r['counts'].values())} != summary {s['datagrams']}")
print("\n".join(fails) if fails else f"ok: {s['datagrams']} datagrams")
sys.exit(1 if fails else 0)
PY
}

# 1. Paced run with impairments: every datagram arrives from its antenna's address.
start_receiver "$tmp/rx1.json"
in_ns "$rocecap" gen --groups "$(IFS=,; echo "${groups[*]}")" \
  --sources 192.0.2.11,192.0.2.12,192.0.2.13 --duration 0.5 --rate 400 --payload-bytes 1024 \
  --interface lo --loopback --seed 3 --drop-every 10 --duplicate 0.05 --invalid 0.05 \
  --foreign 192.0.2.99 --foreign-prob 0.05 --summary "$tmp/s1.json"
wait "$rx_pid"
rx_pid=
compare "$tmp/s1.json" "$tmp/rx1.json"
python3 - "$tmp/s1.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["output"] == "udp" and s["interface"] == "lo", s
assert all(st["frames"] == 200 for st in s["streams"]), "0.5 s at 400 frames/s is 200 frames"
# The last slot that sent anything is due at slot / 400 s: the run can end later, never earlier.
last = max(i - st["first_index"] for st in s["streams"]
           for i in range(st["first_index"], st["first_index"] + st["frames"]) if i not in st["dropped"])
assert s["seconds"] >= last / 400, f"ran ahead of the schedule: {s['seconds']} s < {last / 400}"
print("pacing ok:", s["seconds"], "s")
PY

# 1b. --af-packet: the same datagrams as prebuilt frames through an AF_PACKET socket (no
# UDP/IP transmit path): every one arrives at the UDP sockets, from its antenna's address.
# A frame from a local source address arriving on lo is martian unless accept_local is on
# (net/ipv4/fib_frontend.c, __fib_validate_source); the UDP path loops back before that check.
in_ns sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.lo.accept_local=1
start_receiver "$tmp/rx1b.json"
in_ns "$rocecap" gen --af-packet --groups "$(IFS=,; echo "${groups[*]}")" \
  --sources 192.0.2.11,192.0.2.12,192.0.2.13 --duration 0.5 --rate 400 --payload-bytes 1024 \
  --interface lo --seed 3 --drop-every 10 --duplicate 0.05 --invalid 0.05 \
  --foreign 192.0.2.99 --foreign-prob 0.05 --summary "$tmp/s1b.json"
wait "$rx_pid"
rx_pid=
compare "$tmp/s1b.json" "$tmp/rx1b.json"
python3 - "$tmp/s1.json" "$tmp/s1b.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("seconds",):
    a.pop(k); b.pop(k)
assert a == b, "--af-packet changed the summary"
print("af-packet summary identical to the UDP socket run's")
PY

# 2. SIGINT during a long run: clean exit 0, a summary of exactly what was sent.
# (ip netns exec runs the generator itself under $!: a shell function would put a subshell,
# which ignores SIGINT in the background, in between.)
start_receiver "$tmp/rx2.json"
ip netns exec "$ns" "$rocecap" gen --groups "$(IFS=,; echo "${groups[*]}")" \
  --sources 192.0.2.11,192.0.2.12,192.0.2.13 --duration 60 --rate 300 --payload-bytes 1024 \
  --interface lo --loopback --seed 4 --swap 0.2 --summary "$tmp/s2.json" &
gen_pid=$!
sleep 1
kill -INT "$gen_pid"
t0=$(date +%s)
rc=0
wait "$gen_pid" || rc=$?
[ "$rc" -eq 0 ] || { echo "gen exited $rc after SIGINT"; exit 1; }
[ $(($(date +%s) - t0)) -le 3 ] || { echo "gen took too long to stop"; exit 1; }
wait "$rx_pid"
rx_pid=
compare "$tmp/s2.json" "$tmp/rx2.json"
python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
n = [st['frames'] for st in s['streams']]
assert 0 < min(n) and max(n) < 60 * 300, n
print('stopped after', n, 'frames')" "$tmp/s2.json"
