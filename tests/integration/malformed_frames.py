#!/usr/bin/env python3
"""Malformed and unusual frames for rocecapd's rejection test.

make:  reads a clean `rocecap gen --pcap` capture and writes a copy in which some frames of the
       first stream (first group, first source) are replaced by broken versions of themselves
       (one per rejection reason below) or by unusual but valid versions (VLAN tags, IPv4
       options, Ethernet trailer) that must be captured like any other; writes the plan (which
       frame index got what, what each reason should count) as JSON.
check: compares rocecapd's manifest, raw files and pcap output with the plan: every reason
       counted under its own name and nothing else rejected, the replaced frames absent from
       raw (fill frames there) and from pcap, the unusual frames present byte for byte.

usage: malformed_frames.py make  --clean IN.pcap --summary S --out OUT.pcap --plan PLAN.json
                                [--valid-only]
       malformed_frames.py check --plan PLAN.json --manifest M
Exit status: 0 ok, 1 a check failed (each printed), 2 unreadable input.
"""
import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_check  # noqa: E402  (same directory)

ETH = 14


def ip_at(frame):
    return ETH  # the generator's frames are untagged, IHL 5


def set16(b, off, v):
    struct.pack_into(">H", b, off, v)


def get16(b, off):
    return struct.unpack_from(">H", b, off)[0]


def with_ip_checksum(b, ip):
    ihl = (b[ip] & 0x0F) * 4
    set16(b, ip + 10, 0)
    s = sum(struct.unpack_from(f">{ihl // 2}H", b, ip))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    set16(b, ip + 10, ~s & 0xFFFF)
    return b


def insert_vlans(frame, tags):
    """tags: [(tpid, vid)], outermost first."""
    out = bytearray(frame[:12])
    for tpid, vid in tags:
        out += struct.pack(">HH", tpid, vid)
    return out + frame[12:]


def insert_ip_options(frame, options):
    ip = ip_at(frame)
    b = bytearray(frame[:ip + 20]) + options + frame[ip + 20:]
    b[ip] = 0x40 | ((20 + len(options)) // 4)
    set16(b, ip + 2, get16(b, ip + 2) + len(options))
    return with_ip_checksum(b, ip)


def edit(frame, fn):
    b = bytearray(frame)
    fn(b, ip_at(b))
    return bytes(b)


def codif_word(b, word, fn):
    off = ip_at(b) + 20 + 8 + 8 * word
    v = struct.unpack_from("<Q", b, off)[0]
    struct.pack_into("<Q", b, off, fn(v))


def cut_udp_payload(frame, nbytes):
    b = bytearray(frame[:len(frame) - nbytes])
    ip = ip_at(b)
    set16(b, ip + 2, get16(b, ip + 2) - nbytes)
    set16(b, ip + 20 + 4, get16(b, ip + 20 + 4) - nbytes)
    return bytes(with_ip_checksum(b, ip))


def grow_codif(frame, data_bytes):
    """The same frame with a larger data array (header says so too): a valid, bigger frame."""
    b = bytearray(frame)
    ip = ip_at(b)
    old_data = len(b) - (ip + 20 + 8 + 64)
    extra = data_bytes - old_data
    b += bytes(extra)
    set16(b, ip + 2, get16(b, ip + 2) + extra)
    set16(b, ip + 20 + 4, get16(b, ip + 20 + 4) + extra)
    codif_word(b, 3, lambda v: (v & 0xFFFFFFFF) | ((data_bytes // 8) << 32))
    # Keep frames per period whole: total samples scale with the frame.
    codif_word(b, 4, lambda v: v * data_bytes // old_data)
    return bytes(with_ip_checksum(b, ip))


# Each: reason the manifest must count (None: must be captured), and the mutation.
# (frame bytes) -> (frame bytes, wire length or None when the whole frame was captured)
MUTATIONS = [
    ("truncated", lambda f: (f[:30], None)),
    ("too_many_vlans", lambda f: (bytes(insert_vlans(f, [(0x88A8, 5), (0x8100, 6), (0x8100, 7)])), None)),
    ("not_ipv4", lambda f: (f[:12] + b"\x86\xdd" + f[14:], None)),
    ("bad_ip_header", lambda f: (edit(f, lambda b, ip: b.__setitem__(ip, 0x44)), None)),
    ("ip_options_too_long", lambda f: (edit(f[:ETH + 40], lambda b, ip: (
        b.__setitem__(ip, 0x4F), set16(b, ip + 2, 40))), None)),
    ("bad_ip_length", lambda f: (edit(f, lambda b, ip: set16(b, ip + 2, get16(b, ip + 2) + 100)), None)),
    ("fragment", lambda f: (edit(f, lambda b, ip: set16(b, ip + 6, 0x2000)), None)),  # MF
    ("fragment", lambda f: (edit(f, lambda b, ip: set16(b, ip + 6, 0x0010)), None)),  # offset
    ("not_udp", lambda f: (edit(f, lambda b, ip: b.__setitem__(ip + 9, 6)), None)),
    ("bad_udp_length", lambda f: (edit(f, lambda b, ip: set16(b, ip + 24, get16(b, ip + 24) + 8)), None)),
    ("bad_udp_length", lambda f: (edit(f, lambda b, ip: set16(b, ip + 24, 7)), None)),
    ("no_stream", lambda f: (edit(f, lambda b, ip: b.__setitem__(slice(ip + 12, ip + 16), bytes([192, 0, 2, 99]))), None)),
    ("no_stream", lambda f: (edit(f, lambda b, ip: set16(b, ip + 22, 36009)), None)),
    ("bad_sync", lambda f: (edit(f, lambda b, ip: codif_word(b, 5, lambda v: v ^ 0x1)), None)),
    ("size_mismatch", lambda f: (cut_udp_payload(f, 512), None)),
    ("zero_nchan", lambda f: (edit(f, lambda b, ip: codif_word(b, 3, lambda v: v & ~0xFFFF)), None)),
    ("frame_out_of_range", lambda f: (edit(f, lambda b, ip: codif_word(b, 0, lambda v: v | 0xFFFFFF)), None)),
    ("oversize", lambda f: (grow_codif(f, 8192), None)),
    ("snap_truncated", lambda f: (f[:200], len(f))),
    # A UDP payload of 40 bytes: too short for a CODIF header (not a bad sync word).
    ("short_payload", lambda f: (cut_udp_payload(f, len(f) - (ETH + 20 + 8 + 40)), None)),
    # A valid frame with a wild `seconds` field (bit 29 flipped: 17 years away), its
    # neighbours in time order: an outlier, not two resyncs (the raw file stays in order).
    ("timeline_outlier", lambda f: (edit(f, lambda b, ip: codif_word(b, 0, lambda v: v ^ (1 << 61))), None)),
    (None, lambda f: (bytes(insert_vlans(f, [(0x8100, 17)])), None)),
    (None, lambda f: (bytes(insert_vlans(f, [(0x88A8, 100), (0x8100, 17)])), None)),
    (None, lambda f: (bytes(insert_ip_options(f, b"\x01\x01\x01\x00")), None)),
    # 40 option bytes under two tags: the CODIF header straddles the 128-byte header split.
    (None, lambda f: (bytes(insert_vlans(insert_ip_options(f, b"\x01" * 39 + b"\x00"),
                                         [(0x88A8, 100), (0x8100, 17)])), None)),
    (None, lambda f: (f + b"\xee" * 6, None)),  # Ethernet trailer after the IP datagram
]


def write_pcap(path, records):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        for ts, data, wire in records:
            out.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(data), wire))
            out.write(data)


def make(args):
    summary = json.load(open(args.summary))
    target = summary["streams"][0]
    key = (target["source"], target["group"], target["port"])
    timing = run_check.Timing(summary["frame"])
    mutations = [m for m in MUTATIONS if not args.valid_only or m[0] is None]
    records, plan, n = [], [], 0
    for ts, frame, wire in run_check.read_pcap(args.clean):
        src, dst, dport, payload = run_check.parse_udp(frame)
        if (src, dst, dport) == key:
            n += 1
            slot = n // 7 - 1  # every 7th frame of the stream from the 7th on
            if n % 7 == 0 and 0 <= slot < len(mutations):
                reason, fn = mutations[slot]
                data, wire_len = fn(frame)
                index = timing.index(payload)
                plan.append({"index": index, "reason": reason, "record": len(records),
                             "frame": frame.hex(), "sent": data.hex()})
                records.append((ts, data, wire_len or len(data)))
                continue
        records.append((ts, frame, wire))
    if len(plan) != len(mutations):
        print(f"make: only {len(plan)} of {len(mutations)} mutations fit; send more frames")
        return 2
    write_pcap(args.out, records)
    json.dump({"stream": target, "frame_params": summary["frame"], "replaced": plan,
               "records": len(records),
               "clean": os.path.abspath(args.clean)}, open(args.plan, "w"))
    print(f"make: {len(records)} records, {len(plan)} frames of {key[1]}:{key[2]} from {key[0]} "
          f"replaced ({sum(1 for p in plan if p['reason'])} broken, "
          f"{sum(1 for p in plan if not p['reason'])} unusual but valid)")
    return 0


def check(args):
    fail = run_check.Failures()
    plan = json.load(open(args.plan))
    manifest = json.load(open(args.manifest))
    root = os.path.dirname(os.path.dirname(os.path.abspath(args.manifest)))
    timing = run_check.Timing(plan["frame_params"])
    frame_bytes = 64 + timing.payload_bytes
    want = {}
    for p in plan["replaced"]:
        if p["reason"]:
            want[p["reason"]] = want.get(p["reason"], 0) + 1
    fail.check(manifest["rejected"] == want,
               f"manifest rejected {manifest['rejected']}, expected {want}")
    fail.check(manifest["state"] == "stopped", f"manifest state {manifest['state']!r}")
    s = plan["stream"]
    key = run_check.stream_key(s["group"], s["port"], s["source"])
    m = run_check.manifest_streams(manifest).get(key)
    if not fail.check(m is not None, f"{key}: not in the manifest"):
        return run_check.report(fail, "")
    broken = sorted(p["index"] for p in plan["replaced"] if p["reason"])
    fail.check(m["packets"] == s["frames"] - len(broken),
               f"{key}: manifest packets {m['packets']}, expected {s['frames']} - {len(broken)}")
    fail.check(m["lost"] == len(broken) and m["fill_frames"] == len(broken),
               f"{key}: lost {m['lost']}, fill_frames {m['fill_frames']}, expected {len(broken)}")
    fail.check(m["gaps"] == [[i, 1] for i in broken], f"{key}: gaps {m['gaps']}, expected "
                                                      f"{[[i, 1] for i in broken]}")
    expected = expected_raw(plan, timing)
    raw = run_check.read_files(run_check.files_of(m, "raw", root))
    fail.check(raw == b"".join(expected),
               f"{key}: raw files ({len(raw)} bytes) are not the clean stream with fill frames "
               f"for the broken ones: " + run_check.first_difference(expected, raw, frame_bytes))
    for other in run_check.manifest_streams(manifest).values():
        if other is not m:
            fail.check(other["lost"] == 0 and other["packets"] == s["frames"],
                       f"{other['source']} {other['group']}: {other['packets']} packets, "
                       f"{other['lost']} lost; expected {s['frames']} and 0")
    check_pcap(plan, manifest, root, fail)
    return run_check.report(fail, f"{sum(want.values())} broken frames counted under "
                                  f"{len(want)} reasons, none written; "
                                  f"{sum(1 for p in plan['replaced'] if not p['reason'])} "
                                  "VLAN/IPv4-options/trailer frames captured")


def expected_raw(plan, timing):
    """The first stream as in the clean capture, broken frames replaced by fill frames."""
    s = plan["stream"]
    key = (s["source"], s["group"], s["port"])
    frames = {}
    for _, frame, _ in run_check.read_pcap(plan["clean"]):
        src, dst, dport, payload = run_check.parse_udp(frame)
        if (src, dst, dport) == key:
            frames[timing.index(payload)] = payload
    broken = {p["index"] for p in plan["replaced"] if p["reason"]}
    first = s["first_index"]
    return [timing.fill(frames[first], i) if i in broken else frames[i]
            for i in range(first, first + s["frames"])]


def check_pcap(plan, manifest, root, fail):
    """The pcap output holds the unusual frames as sent (trailer cut) and no broken frame."""
    paths = [os.path.join(root, f["path"]) for i in manifest["interfaces"] for f in i["files"]
             if f["format"] == "pcap"]
    if not paths:
        return
    frames = set()
    for path in paths:
        for _, frame, _ in run_check.read_pcap(path):
            frames.add(frame)
    for p in plan["replaced"]:
        sent = bytes.fromhex(p["sent"])
        if p["reason"]:
            fail.check(sent not in frames, f"pcap output holds the {p['reason']} frame")
        else:
            ip = 12
            while get16(sent, ip) in (0x8100, 0x88A8):
                ip += 4
            datagram_end = ip + 2 + get16(sent, ip + 4)
            fail.check(sent[:datagram_end] in frames,
                       f"pcap output lacks the unusual frame for index {p['index']}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--clean", required=True)
    mk.add_argument("--summary", required=True)
    mk.add_argument("--out", required=True)
    mk.add_argument("--plan", required=True)
    mk.add_argument("--valid-only", action="store_true",
                    help="only the unusual but valid frames (VLAN, options, trailer)")
    ck = sub.add_parser("check")
    ck.add_argument("--plan", required=True)
    ck.add_argument("--manifest", required=True)
    args = ap.parse_args()
    try:
        return make(args) if args.mode == "make" else check(args)
    except (OSError, ValueError, KeyError) as e:
        print(f"malformed_frames.py: cannot read the inputs: {e!r}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
