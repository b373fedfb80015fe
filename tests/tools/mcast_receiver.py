#!/usr/bin/env python3
"""Joins multicast groups on an interface and counts the datagrams per (source, group, port),
checking each one's CODIF thread id. Usage: mcast_receiver.py IFNAME OUT.json READY GROUP:PORT...
Writes READY after joining; stops 1.5 s after the last datagram (or after 60 s in all)."""
import json, select, socket, struct, sys, time

ifname, out, ready = sys.argv[1:4]
ifindex = socket.if_nametoindex(ifname)
socks = []
for gp in sys.argv[4:]:
    group, port = gp.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    s.bind((group, int(port)))  # only this group's datagrams
    mreqn = struct.pack("4s4si", socket.inet_aton(group), socket.inet_aton("0.0.0.0"), ifindex)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreqn)
    socks.append((s, group, int(port)))
open(ready, "w").close()

counts, threads, lengths = {}, {}, {}
start = last = time.monotonic()
while True:
    now = time.monotonic()
    if now - start > 60 or (counts and now - last > 1.5):
        break
    readable, _, _ = select.select([s for s, _, _ in socks], [], [], 0.2)
    for s, group, port in socks:
        if s not in readable:
            continue
        data, (src, _) = s.recvfrom(65536)
        key = f"{src}|{group}|{port}"
        counts[key] = counts.get(key, 0) + 1
        lengths.setdefault(key, set()).add(len(data))
        if len(data) >= 64:
            threads.setdefault(key, set()).add(struct.unpack_from("<Q", data, 16)[0] & 0xFFFF)
        last = time.monotonic()
json.dump({"counts": counts, "threads": {k: sorted(v) for k, v in threads.items()},
           "lengths": {k: sorted(v) for k, v in lengths.items()}}, open(out, "w"))
