#!/usr/bin/env bash
# rocecapd's trigger listeners (doc/dumps.md) against clients the other tests never are:
#
#   two runs given the same retention.socket   the second exits 3 naming the first's PID; the
#                                              first keeps its socket and answers its triggers
#                                              (was: the second unlinked it and took them)
#   300 idle socket clients and 60 HTTP        a trigger (socket and HTTP) and a scrape are each
#   clients that sent half a header, held      answered within the issue's bound of 100 ms (the
#                                              median of five; was: 2 s per idle client ahead,
#                                              and /metrics and /trigger timed out)
#   the idle clients, at their deadline        answered, closed and counted (deadline, 300)
#   a soft open-files limit of 512             raised to the hard limit at start, logged
#   a stale socket left by a killed run        replaced by the next run
#
# pcap-file replay at the recorded pace keeps the run alive; no privileges are needed.
# Usage: rocecapd_trigger_listeners.sh ROCECAPD ROCECAP
set -euo pipefail
rocecapd=${1:?usage: $0 ROCECAPD ROCECAP}
rocecap=${2:?usage: $0 ROCECAPD ROCECAP}
work=$(mktemp -d /tmp/rocecap-listeners.XXXXXX)
pids=()
finish() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap finish EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.log; do
    echo "--- $f" >&2
    tail -20 "$f" >&2
  done
  exit 1
}

# 60 s of one stream at 100 frames/s: the run lives until it is stopped here.
"$rocecap" gen --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames 6000 --rate 100 \
  --payload-bytes 1024 --pcap "$work/in.pcap" --summary /dev/null >/dev/null
sock=$work/trigger.sock
free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
run_file() { # $1: run name
  cat <<YAML
run: { name: $1 }
capture:
  backend: pcap-file
  pcap_file: $work/in.pcap
  replay_pace: recorded
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams:
  format: codif
  antennas: [ { name: ak01, source: 192.0.2.11 } ]
output: { directory: $work/out, formats: [] }
metrics: { listen: 127.0.0.1:$(free_port) }
retention: { retain: 2s, frame_rate: 100, socket: $sock }
YAML
}
for r in one two three; do run_file "$r" >"$work/$r.yaml"; done

# start NAME: rocecapd on NAME.yaml in the background with a soft open-files limit of 512;
# waits for its socket and metrics port (PORT).
start() {
  (
    ulimit -Sn 512
    exec "$rocecapd" --config "$work/$1.yaml" 2>"$work/$1.log"
  ) &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -q "triggers on $sock" "$work/$1.log" && break
    sleep 0.1
  done
  port=$(grep -o "metrics on http://127.0.0.1:[0-9]*" "$work/$1.log" | grep -o "[0-9]*$") ||
    fail "$1 did not start"
}

start one
one=$pid
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 2304 ]; then
  grep -q "open files: raised the soft limit RLIMIT_NOFILE from 512 to the hard limit" \
    "$work/one.log" || fail "the raised open-files limit was not logged"
else
  grep -q "open files: RLIMIT_NOFILE is $hard (the hard limit)" "$work/one.log" ||
    fail "a hard open-files limit of $hard was not warned about"
fi
echo "ok: open-files limit: $(grep -o "open files: .*" "$work/one.log" | cut -c1-110)"

# Item 6: a second run on the same socket is refused, naming the first's PID.
rc=0
timeout 30 "$rocecapd" --config "$work/two.yaml" 2>"$work/two.log" || rc=$?
[ "$rc" = 3 ] || fail "a second run on the same retention.socket exited $rc, not 3"
grep -qF "trigger socket $sock is in use: PID $one (rocecapd) listens there" "$work/two.log" ||
  fail "the second run's error does not name PID $one"
[ ! -e "$work/out/two" ] || fail "the refused run left its run directory behind"
now=$(date +%s%N)
"$rocecap" trigger --socket "$sock" --json "{\"start\": $((now - 1500000000)), \"end\": $((now - 1000000000))}" \
  >"$work/answer.json" || true
grep -qF "\"directory\": \"$work/out/one/dumps/" "$work/answer.json" ||
  fail "the first run's trigger was not answered by it: $(cat "$work/answer.json")"
echo "ok: second run on the socket: exit 3: $(grep -o "trigger socket .*" "$work/two.log" | cut -c1-120)"

# Item 5: idle and slow clients held while triggers and scrapes are timed.
python3 - "$sock" "$port" <<'PY' || fail "the listeners were held up by idle clients"
import json, socket, statistics, sys, time
path, port = sys.argv[1], int(sys.argv[2])
BOUND = 0.100  # the issue's bound: a trigger is answered within 100 ms whatever idle clients do

def exchange(connect, request, shut=False):
    t0 = time.monotonic()
    s = connect()
    s.settimeout(3)
    s.sendall(request)
    if shut:
        s.shutdown(socket.SHUT_WR)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except socket.timeout:
        out += b" (timed out)"
    s.close()
    return time.monotonic() - t0, out.decode(errors="replace")

def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s

def tcp():
    return socket.create_connection(("127.0.0.1", port), timeout=3)

idle = [unix() for _ in range(300)]
slow = [tcp() for _ in range(60)]
for s in slow:
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
t_sock, t_http, t_scrape = [], [], []
for _ in range(5):
    t, a = exchange(unix, b'{"start": 1, "end": 2}\n', shut=True)
    assert '"ok"' in a, a
    t_sock.append(t)
    body = b'{"start": 1, "end": 2}'
    t, a = exchange(tcp, b"POST /trigger HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert a.startswith("HTTP/1.1 "), a
    t_http.append(t)
    t, a = exchange(tcp, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert "rocecap_run_state" in a, a[-2000:]
    t_scrape.append(t)
for name, ts in (("socket trigger", t_sock), ("POST /trigger", t_http), ("GET /metrics", t_scrape)):
    ms = ", ".join(f"{t * 1000:.1f}" for t in ts)
    print(f"{name}: {ms} ms")
    assert statistics.median(ts) <= BOUND, f"{name}: median over 100 ms: {ms}"
t, a = exchange(tcp, b"GET /metrics HTTP/1.1\r\n\r\n")
assert 'rocecap_listener_open_connections{listener="trigger_socket"} 300' in a, a[-2000:]
assert 'rocecap_listener_open_connections{listener="http"} 61' in a, a[-2000:]
# At their deadline (2 s) the idle socket clients are answered and closed, and counted.
for s in idle:
    s.settimeout(5)
    a = s.recv(4096)
    assert b"no complete request" in a, a
t, a = exchange(tcp, b"GET /metrics HTTP/1.1\r\n\r\n")
series = 'rocecap_listener_refused_connections_total{listener="trigger_socket",reason="deadline"} 300'
assert series in a, a[-2000:]
print("idle clients: answered at their deadline, counted:", series)
PY
echo "ok: 300 idle socket and 60 slow HTTP clients held: triggers and scrapes answered in time"

# A stale socket (its run killed) is replaced by the next run.
kill -9 "$one"
wait "$one" 2>/dev/null || true
[ -S "$sock" ] || fail "the killed run's socket file is gone: nothing stale to test"
start three
grep -q "triggers on $sock" "$work/three.log" || fail "the third run did not take the stale socket"
"$rocecap" trigger --socket "$sock" --json '{"start": 1, "end": 2}' >"$work/answer3.json" || true
grep -q '"ok"' "$work/answer3.json" || fail "the third run's socket did not answer"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "the third run exited $rc"
[ ! -e "$sock" ] || fail "the third run left its socket behind"
echo "ok: a stale socket is replaced; removed at stop"
echo "PASS"
