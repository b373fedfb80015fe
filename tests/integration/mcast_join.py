#!/usr/bin/env python3
"""Joins IPv4 multicast groups on one local address and holds the memberships.

A real client's join: the kernel sends the IGMP membership reports, and keeps the groups
joined until this process ends (SIGTERM/SIGINT, stdin closed is not needed) or --max-seconds
pass. Prints "joined <groups>" once every membership is in place.

usage: mcast_join.py [--max-seconds N] LOCAL_ADDR GROUP [GROUP...]
"""
import argparse
import signal
import socket
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("local")
    ap.add_argument("groups", nargs="+")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    sockets = []
    for group in args.groups:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        mreq = socket.inet_aton(group) + socket.inet_aton(args.local)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        sockets.append(s)
    print("joined " + " ".join(args.groups), flush=True)
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
