#!/usr/bin/env python3
"""Checks rocecapd's VDIF raw files against the pcap file the generator wrote, with a VDIF
reader written here from the public specification (VDIF 1.1.1, VTP 1.0; see doc/vdif.md), not
from rocecap's codec.

Reading the pcap: every UDP datagram to a listed stream (group:port, source) is a VDIF frame,
after an 8-byte VTP sequence number with --vtp. A frame is kept when its length field equals its
bytes, its frame number is below --fps and its thread is the stream's. The expected raw file of a
stream is then its kept frames in time order (absolute index = seconds x fps + frame number),
each index once, with every missing index between the first and the last replaced by a fill
frame: the header the missing frame would have had, invalid bit set, data zero.

Checks, per stream: the file is exactly that (byte for byte); and, reading the file alone:
every header parses, has the stream's thread and frame length, frame indices are contiguous,
and the invalid bit is set exactly on the fill frames (frames the pcap lacks) and on frames sent
with it set.

usage: vdif_check.py --pcap P --fps N [--vtp] --stream GROUP:PORT,SOURCE,THREAD=FILE ...
Exit status: 0 ok, 1 a check failed (all printed), 2 unreadable input.
"""
import argparse
import socket
import struct
import sys


def pcap_datagrams(path):
    """[(dst, dport, src, udp_payload)] of an Ethernet pcap (microsecond or nanosecond)."""
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{path}: not a little-endian pcap file")
    at, out = 24, []
    while at + 16 <= len(data):
        incl = struct.unpack_from("<IIII", data, at)[2]
        pkt = data[at + 16:at + 16 + incl]
        at += 16 + incl
        eth = 14
        ethertype = struct.unpack_from("!H", pkt, 12)[0]
        while ethertype == 0x8100:
            ethertype = struct.unpack_from("!H", pkt, eth + 2)[0]
            eth += 4
        if ethertype != 0x0800 or pkt[eth + 9] != 17:
            continue
        ihl = (pkt[eth] & 0xF) * 4
        src = socket.inet_ntoa(pkt[eth + 12:eth + 16])
        dst = socket.inet_ntoa(pkt[eth + 16:eth + 20])
        udp = eth + ihl
        dport, ulen = struct.unpack_from("!HH", pkt, udp + 2)
        out.append((dst, dport, src, pkt[udp + 8:udp + ulen]))
    return out


class Vdif:
    """One VDIF header, from the specification's bit table (little-endian 32-bit words)."""

    def __init__(self, b):
        w0, w1, w2, w3 = struct.unpack_from("<4I", b, 0)
        self.invalid = w0 >> 31
        self.legacy = (w0 >> 30) & 1
        self.seconds = w0 & 0x3FFFFFFF
        self.epoch = (w1 >> 24) & 0x3F
        self.frame = w1 & 0xFFFFFF
        self.version = w2 >> 29
        self.log2_nchan = (w2 >> 24) & 0x1F
        self.length = (w2 & 0xFFFFFF) * 8
        self.complex = w3 >> 31
        self.nbits = ((w3 >> 26) & 0x1F) + 1
        self.thread = (w3 >> 16) & 0x3FF
        self.station = w3 & 0xFFFF
        self.header_bytes = 16 if self.legacy else 32

    def index(self, fps):
        return self.seconds * fps + self.frame


def fill_header(ref, fps, index):
    """ref's header bytes with the time of `index` and the invalid bit set."""
    h = bytearray(ref[:Vdif(ref).header_bytes])
    w0, w1 = struct.unpack_from("<2I", h, 0)
    w0 = (w0 & 0x40000000) | 0x80000000 | (index // fps)
    w1 = (w1 & 0xFF000000) | (index % fps)
    struct.pack_into("<2I", h, 0, w0, w1)
    return bytes(h)


def expected_file(frames, fps):
    """frames: {index: frame bytes}, the first copy of each; returns (bytes, fill indices)."""
    if not frames:
        return b"", set()
    lo, hi = min(frames), max(frames)
    ref = frames[lo]
    out, fills = bytearray(), set()
    for i in range(lo, hi + 1):
        if i in frames:
            out += frames[i]
        else:
            fills.add(i)
            out += fill_header(ref, fps, i) + bytes(len(ref) - Vdif(ref).header_bytes)
    return bytes(out), fills


def read_file(path, thread, fps, problems, name):
    """[(index, invalid)] of a raw VDIF file, checking each header on the way."""
    data = open(path, "rb").read()
    at, rows, length = 0, [], None
    while at < len(data):
        if len(data) - at < 16:
            problems.append(f"{name}: {len(data) - at} trailing bytes at offset {at}")
            break
        h = Vdif(data[at:at + 32])
        length = length or h.length
        if h.length != length or h.length <= h.header_bytes or at + h.length > len(data):
            problems.append(f"{name}: offset {at}: frame length {h.length} (first {length})")
            break
        if h.thread != thread:
            problems.append(f"{name}: offset {at}: thread {h.thread}, expected {thread}")
        if h.frame >= fps:
            problems.append(f"{name}: offset {at}: frame number {h.frame} >= {fps}")
        rows.append((h.index(fps), h.invalid, data[at + h.header_bytes:at + h.length]))
        at += h.length
    for k in range(1, len(rows)):
        if rows[k][0] != rows[k - 1][0] + 1:
            problems.append(f"{name}: frame {k}: index {rows[k][0]} after {rows[k - 1][0]}")
            break
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--fps", type=int, required=True)
    ap.add_argument("--vtp", action="store_true")
    ap.add_argument("--stream", action="append", required=True)
    args = ap.parse_args()
    try:
        datagrams = pcap_datagrams(args.pcap)
    except (OSError, ValueError, struct.error) as e:
        print(f"vdif_check.py: {e}")
        return 2
    problems, skip = [], 8 if args.vtp else 0
    for spec in args.stream:
        key, _, path = spec.partition("=")
        gp, src, thread = key.split(",")
        group, port = gp.split(":")
        thread = int(thread)
        frames, sent_invalid = {}, set()
        for dst, dport, s, payload in datagrams:
            if (dst, dport, s) != (group, int(port), src) or len(payload) < skip + 16:
                continue
            frame = payload[skip:]
            h = Vdif(frame)
            if len(frame) < h.header_bytes or h.length != len(frame) or h.frame >= args.fps:
                continue
            if h.thread != thread:
                continue
            frames.setdefault(h.index(args.fps), frame)
            if h.invalid:
                sent_invalid.add(h.index(args.fps))
        want, fills = expected_file(frames, args.fps)
        try:
            got = open(path, "rb").read()
        except OSError as e:
            print(f"vdif_check.py: {e}")
            return 2
        if got != want:
            diff = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                        min(len(got), len(want)))
            problems.append(f"{key}: {path} differs from the pcap's frames at byte {diff} "
                            f"({len(got)} bytes, expected {len(want)})")
        rows = read_file(path, thread, args.fps, problems, key)
        for index, invalid, data in rows:
            should = index in fills or index in sent_invalid
            if bool(invalid) != should:
                problems.append(f"{key}: index {index}: invalid bit {invalid}, expected "
                                f"{int(should)}")
                break
            if index in fills and any(data):
                problems.append(f"{key}: fill frame {index} has non-zero data")
                break
        print(f"{key}: {len(rows)} frames, {len(fills)} fill frames")
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
