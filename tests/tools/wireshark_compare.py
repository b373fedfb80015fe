"""Checks for tests/tools/wireshark_dissectors_test.sh (run with Debian's /usr/bin/python3).

  wireshark_compare.py DIR NAME:KIND[:rejects]...
                                          tshark's fields (DIR/NAME.KIND.tsv, DIR/NAME.mismatch)
                                          against `rocecap inspect --json` (DIR/NAME.inspect);
                                          `rejects`: the capture must hold rejected datagrams
  wireshark_compare.py --edv PCAP EXPECT  writes VDIF frames with EDV 1-4 and what they hold
  wireshark_compare.py --edv-check JSON EXPECT
                                          tshark -T json of those frames against EXPECT
"""

import calendar
import csv
import json
import re
import struct
import sys

MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def unix_ns(text):
    """tshark's absolute time ('Jan  1, 2000 00:00:00.000100000 UTC') in Unix nanoseconds."""
    m = re.fullmatch(r"(\w{3}) +(\d+), (\d+) (\d+):(\d+):(\d+)\.(\d{9}) UTC", text)
    assert m, f"not an absolute UTC time: {text!r}"
    mon, day, year, h, mi, s, frac = m.groups()
    secs = calendar.timegm((int(year), MONTHS[mon], int(day), int(h), int(mi), int(s)))
    return secs * 10**9 + int(frac)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def gaps_of(indices):
    out, prev = [], None
    for i in sorted(indices):
        if prev is not None and i > prev + 1:
            out.append([prev + 1, i - prev - 1])
        prev = i
    return out


def fail(where, what):
    print(f"FAIL {where}: {what}")
    sys.exit(1)


def header_pairs(kind, r, first):
    """(tshark value, inspect value, name) of every first-header field both report."""
    h = first
    r = {k: (v if v != "" else "0") for k, v in r.items()}  # fields a layout lacks: inspect's 0
    if kind == "codif":
        return [
            (r["codif.layout"], h["layout"], "layout"), (int(r["codif.frame"]), h["frame"], "frame"),
            (int(r["codif.seconds"]), h["seconds"], "seconds"), (int(r["codif.epoch"]), h["epoch"], "epoch"),
            (int(r["codif.nbits"]), h["nbits"], "nbits"), (r["codif.atypical"] == "1", h["atypical"], "atypical"),
            (r["codif.invalid"] == "1", h["invalid"], "invalid"), (r["codif.complex"] == "1", h["complex"], "complex"),
            (r["codif.cal"] == "1", h["cal"], "cal"),
            (int(r["codif.representation"]), h["representation"], "representation"),
            (int(r["codif.version"]), h["version"], "version"), (int(r["codif.protocol"]), h["protocol"], "protocol"),
            (int(r["codif.period"]), h["period"], "period"), (int(r["codif.thread"]), h["thread_id"], "thread"),
            (int(r["codif.group"]), h["group_id"], "group"), (int(r["codif.secondary"]), h["secondary_id"], "secondary"),
            (r["codif.station_name"], h["station"], "station"), (int(r["codif.nchan"]), h["nchan"], "nchan"),
            (int(r["codif.block_length"]), h["block_length"], "block_length"),
            (int(r["codif.data_bytes"]), h["payload_bytes"], "data bytes"),
            (int(r["codif.total_samples"]), h["total_samples"], "total_samples"),
            (int(r["codif.sync"], 16), int(h["sync"], 16), "sync"),
            (int(r["codif.samples_per_frame"]), h["samples_per_frame"], "samples_per_frame"),
            (int(r["codif.frames_per_period"]), h["frames_per_period"], "frames_per_period")]
    return [
        (int(r["vdif.seconds"]), h["seconds"], "seconds"), (int(r["vdif.frame"]), h["frame"], "frame"),
        (int(r["vdif.epoch"]), h["epoch"], "epoch"), (int(r["vdif.nbits"]), h["nbits"], "nbits"),
        (int(r["vdif.nchan"]), h["nchan"], "nchan"), (r["vdif.complex"] == "1", h["complex"], "complex"),
        (r["vdif.invalid"] == "1", h["invalid"], "invalid"), (r["vdif.station_name"], h["station"], "station"),
        (int(r["vdif.thread"]), h["thread_id"], "thread"),
        (int(r["vdif.data_bytes"]), h["payload_bytes"], "data bytes"),
        (int(r["vdif.samples_per_frame"]), h["samples_per_frame"], "samples_per_frame")]


def decoded_whole(kind, r):
    """Decoded, and the frame fills its datagram (what inspect counts as a frame)."""
    if not r[f"{kind}.frame"]:
        return False
    udp = int(r["udp.length"]) - 8
    if kind == "codif":
        return int(r["codif.data_bytes"]) + 64 == udp
    return int(r["vdif.frame_bytes"]) + (8 if r["vdif.vtp_psn"] else 0) == udp


def stream_key(kind, r, s=None):
    if s is not None:
        return (s["group"], s["port"], s["source"]) + ((s["thread_id"],) if kind == "vdif" else ())
    key = (r["ip.dst"], int(r["udp.dstport"]), r["ip.src"])
    return key + ((int(r["vdif.thread"]),) if kind == "vdif" else ())


def compare_stream(where, kind, recs, s):
    idx = [int(r[f"{kind}.frame_index"]) for r in recs]
    seen, late, dup, high = set(), 0, 0, None
    for i in idx:
        dup += i in seen
        late += i not in seen and high is not None and i < high
        seen.add(i)
        high = i if high is None else max(high, i)
    times = {int(r[f"{kind}.frame_index"]): unix_ns(r[f"{kind}.time"]) for r in recs}
    checks = [
        (len(recs), s["frames"], "frames"), (len(seen), s["unique_frames"], "unique frames"),
        (min(idx), s["first_index"], "first index"), (max(idx), s["last_index"], "last index"),
        (gaps_of(seen), s["gaps"], "gaps"), (dup, s["duplicates"], "duplicates"), (late, s["late"], "late"),
        (sum(r[f"{kind}.invalid"] == "1" for r in recs), s["invalid"], "invalid"),
        (times[min(idx)], s["first_time_ns"], "first frame time"),
        (times[max(idx)], s["last_time_ns"], "last frame time")]
    checks += header_pairs(kind, recs[0], s["first_header"])
    for got, want, what in checks:
        if got != want:
            fail(where, f"{what}: tshark {got}, rocecap inspect {want}")


def compare(tmp, name, kind, must_reject):
    recs = rows(f"{tmp}/{name}.{kind}.tsv")
    ins = json.load(open(f"{tmp}/{name}.inspect"))
    mismatch = int(open(f"{tmp}/{name}.mismatch").read())
    if len(recs) != ins["records"]:
        fail(name, f"tshark read {len(recs)} datagrams, inspect {ins['records']}")
    rejected = {}
    for s in ins["streams"]:
        for k, v in s["rejected"].items():
            rejected[k] = rejected.get(k, 0) + v
    for k, v in ins["rejected"].items():
        rejected[k] = rejected.get(k, 0) + v
    undecoded = sum(not r[f"{kind}.frame"] for r in recs)
    if kind == "codif":
        want = (rejected.get("bad_sync", 0), rejected.get("size_mismatch", 0))
        if (undecoded, mismatch) != want or (must_reject and 0 in want):
            fail(name, f"not CODIF / size mismatch: tshark {undecoded}/{mismatch}, inspect {want}")
    elif undecoded != sum(rejected.values()) or mismatch != 0 or (must_reject and not undecoded):
        fail(name, f"not VDIF: tshark {undecoded} (+{mismatch} mismatched), inspect {rejected}")
    streams = {}
    for r in recs:
        if decoded_whole(kind, r):
            streams.setdefault(stream_key(kind, r), []).append(r)
    want = {stream_key(kind, None, s): s for s in ins["streams"] if s["frames"]}
    if set(streams) != set(want):
        fail(name, f"streams: tshark {sorted(streams)}, inspect {sorted(want)}")
    for key, recs_of in streams.items():
        compare_stream(f"{name} {key}", kind, recs_of, want[key])
    print(f"ok {name}: {len(streams)} streams, {len(recs)} datagrams agree with rocecap inspect")


# ---- EDV 1-4 -------------------------------------------------------------------------------

def vdif_words(edv, w4, w5, w6, w7, thread):
    frame_bytes = 32 + 64
    w0 = 1000
    w1 = (3 << 24) | 17          # epoch 3, frame 17
    w2 = (1 << 29) | (0 << 24) | (frame_bytes // 8)
    w3 = (7 << 26) | (thread << 16) | 0x4142  # 8 bits, station AB
    return struct.pack("<8I", w0, w1, w2, w3, (edv << 24) | w4, w5, w6, w7) + bytes(64)


def datagram(payload, n):
    udp = struct.pack(">HHHH", 50000, 36001, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), n, 0, 1, 17, 0,
                     bytes([192, 0, 2, 11]), bytes([239, 17, 0, 1]))
    eth = bytes.fromhex("01005e110001") + bytes.fromhex("020000000001") + b"\x08\x00"
    return eth + ip + udp


def write_edv(pcap, expect):
    frames = [
        (1, {"vdif.sample_unit": "MHz", "vdif.sample_rate": 32, "vdif.edv_sync": 0xACABFEED,
             "vdif.edv1.das_id": "DASNAME1"},
         (1 << 23) | 32, 0xACABFEED) + struct.unpack("<II", b"DASNAME1"),
        (2, {"vdif.edv2.pol": 1, "vdif.edv2.bl_quadrant": 2, "vdif.edv2.bl_correlator": 1,
             "vdif.edv2.sync": 0xA5EA5, "vdif.edv2.pic_status": 0x12345678,
             "vdif.edv2.psn": 0x0000000B0000000A},
         1 | (2 << 1) | (1 << 3) | (0xA5EA5 << 4), 0x12345678, 0xA, 0xB),
        (3, {"vdif.sample_unit": "kHz", "vdif.sample_rate": 4000, "vdif.edv_sync": 0xACABFEED,
             "vdif.edv3.loif_tuning": 123456789, "vdif.edv3.dbe_unit": 9, "vdif.edv3.if_nr": 5,
             "vdif.edv3.subband": 6, "vdif.edv3.sideband": "upper", "vdif.edv3.major_rev": 3,
             "vdif.edv3.minor_rev": 4, "vdif.edv3.personality": 0x42},
         4000, 0xACABFEED, 123456789,
         (9 << 24) | (5 << 20) | (6 << 17) | (1 << 16) | (3 << 12) | (4 << 8) | 0x42),
        (4, {"vdif.edv4.mask_length": 60, "vdif.edv_sync": 0xACABFEED,
             "vdif.edv4.validity_mask": (1 << 59) + 1},
         60 << 16, 0xACABFEED, 1, 1 << 27),
    ]
    with open(pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n, (edv, _, *words) in enumerate(frames):
            pkt = datagram(vdif_words(edv, *words, thread=edv), n)
            f.write(struct.pack("<IIII", 1000 + n, 0, len(pkt), len(pkt)) + pkt)
    json.dump([dict(edv=e, fields=x) for e, x, *_ in frames], open(expect, "w"))


def flatten(tree, out):
    for k, v in tree.items():
        if isinstance(v, dict):
            flatten(v, out)
        else:
            out.setdefault(k, v)
    return out


def as_number(v):
    v = v[0] if isinstance(v, list) else v
    return int(v, 16) if isinstance(v, str) and v.startswith("0x") else v


def check_edv(tshark_json, expect):
    packets = json.load(open(tshark_json))
    want = json.load(open(expect))
    assert len(packets) == len(want), (len(packets), len(want))
    for p, w in zip(packets, want):
        got = flatten(p["_source"]["layers"]["vdif"], {})
        if int(as_number(got["vdif.edv"])) != w["edv"]:
            fail(f"EDV {w['edv']}", f"vdif.edv {got['vdif.edv']}")
        for k, v in w["fields"].items():
            g = as_number(got.get(k))
            g = int(g) if isinstance(v, int) and g is not None else g
            if g != v:
                fail(f"EDV {w['edv']}", f"{k}: tshark {got.get(k)!r}, built {v!r}")
        # The EDV 1/3 sample rate gives the frame rate, hence the frame's time.
        if w["edv"] in (1, 3):
            rate = (32e6 if w["edv"] == 1 else 4e6) * 2  # real samples: twice the field
            fps = int(rate // 64)                      # 64 one-byte samples per frame
            if int(got["vdif.frames_per_second"]) != fps:
                fail(f"EDV {w['edv']}", f"frames per second {got['vdif.frames_per_second']}, not {fps}")
    print(f"ok EDV: {len(want)} frames with EDV 1-4 decoded as built")


def main(argv):
    if argv[0] == "--edv":
        write_edv(argv[1], argv[2])
    elif argv[0] == "--edv-check":
        check_edv(argv[1], argv[2])
    else:
        for spec in argv[1:]:  # NAME:KIND[:rejects], rejects: the capture has rejected frames
            name, kind, *flag = spec.split(":")
            compare(argv[0], name, kind, flag == ["rejects"])


if __name__ == "__main__":
    main(sys.argv[1:])
