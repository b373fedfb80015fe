#!/usr/bin/env bash
# The example, linked against the real libibverbs, receives real multicast (IGMP join, kernel
# UDP sender) through softverbs in a private network namespace and checks the header/payload
# split of every packet. Usage: run_example.sh BINARY   (needs root; else exit 77)
set -euo pipefail
bin=$1
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! command -v python3 >/dev/null; then
  echo "SKIP: needs root, iproute2 and python3"
  exit 77
fi
libdir=${SOFTVERBS_LIB_DIR:?}
ns=svex$$
tmp=$(mktemp -d)
cleanup() {
  [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link add svx0 mtu 9000 type veth peer name svx1 mtu 9000
ip -n "$ns" addr add 192.0.2.2/24 dev svx0
ip -n "$ns" addr add 192.0.2.1/24 dev svx1
ip -n "$ns" link set lo up
ip -n "$ns" link set svx0 up
ip -n "$ns" link set svx1 up

count=64
payload=8256
ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" SOFTVERBS_DEVICES=svx=svx0 \
  "$bin" svx svx0 192.0.2.1 239.1.2.3 5001 $count $payload >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do
  grep -q ready "$tmp/out" 2>/dev/null && break
  sleep 0.1
done
grep -q ready "$tmp/out" || { cat "$tmp/out" "$tmp/err"; echo "FAIL: example not ready"; exit 1; }
# The member socket's IGMP report went out on svx0: softverbs' device saw the group joined.
ip netns exec "$ns" python3 - "$count" "$payload" <<'PY'
import socket, struct, sys, time
count, size = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"svx1")
s.bind(("192.0.2.1", 0))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("192.0.2.1"))
for seq in range(count):
    body = bytes((seq + i) & 0xff for i in range(size))
    s.sendto(struct.pack(">I", seq) + body[4:], ("239.1.2.3", 5001))
    time.sleep(0.002)
PY
rc=0
wait "$pid" || rc=$?
pid=
cat "$tmp/out"
cat "$tmp/err" >&2
if grep -qi "version" "$tmp/err"; then
  echo "FAIL: loader version complaints"
  exit 1
fi
grep -q "received=$count ok=$count split=42 payload=$payload" "$tmp/out" || {
  echo "FAIL: not every packet arrived split and intact (rc=$rc)"
  exit 1
}
exit "$rc"
