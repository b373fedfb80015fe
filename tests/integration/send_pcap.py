#!/usr/bin/env python3
"""Sends every record of a pcap file, as is, out of one interface (AF_PACKET raw socket).

For frames no socket API would build (VLAN tags, IPv4 options, Ethernet trailers). Paced in
small bursts so a veth peer's backlog never overflows. Prints "sent N".

usage: send_pcap.py IFACE FILE.pcap   (needs CAP_NET_RAW)
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_check  # noqa: E402  (same directory: the pcap reader)


def main():
    iface, path = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    n = 0
    for _, frame, _ in run_check.read_pcap(path):
        s.send(frame)
        n += 1
        if n % 64 == 0:
            time.sleep(0.002)
    print(f"sent {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
