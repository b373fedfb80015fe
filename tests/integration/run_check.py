#!/usr/bin/env python3
"""Checks a finished rocecapd run against what `rocecap gen` sent.

The expectation is built independently of rocecapd's code: from the generator's own pcap of
the traffic (`rocecap gen --pcap`, same arguments and seed as the run that was sent) and its
JSON summary, following doc/codif.md and doc/design.md literally:

  raw       per stream, every frame index from the first to the last one that arrived intact,
            in time order, each once; an index that never arrived intact (dropped, bad sync,
            truncated) is a fill frame: the stream's header with that frame/seconds, the invalid
            bit set and a zero data array.
  codifhdr  the 64-byte headers of those raw frames.
  manifest  per stream: packets = datagrams - bad_sync - truncated, duplicate = duplicated,
            late = swapped, invalid, lost = fill_frames = the fill frames above, gaps = their
            runs; per run: rejected bad_sync and size_mismatch (truncated), no_stream (foreign
            copies); no NIC or ring-full drops; state stopped.

usage: run_check.py expect --summary S --reference-pcap P --manifest M
       run_check.py expect --partial ... (a run stopped early: only what it wrote so far)
       run_check.py consistent --manifest M [--frame-bytes N]

`consistent` checks a run that was stopped at an arbitrary point (no expectation of what was
sent): state stopped, every file exists with its manifest size, raw and codifhdr files are
whole frames, raw frames = packets delivered + fill frames, codifhdr frames = raw frames.
Exit status: 0 all checks passed, 1 a check failed (each failure printed), 2 unreadable input.
"""
import argparse
import json
import os
import struct
import sys

CODIF_HEADER = 64
INVALID_BIT = 1 << 17  # word 1, bit 17 (v3 layout)


class Failures:
    def __init__(self):
        self.items = []

    def check(self, ok, message):
        if not ok:
            self.items.append(message)
        return ok


def read_pcap(path):
    """Yields (timestamp_ns, frame bytes, wire length) for every record."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: shorter than a pcap file header")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    else:
        magic = struct.unpack_from(">I", data, 0)[0]
        endian = ">"
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{path}: not a pcap file (magic {magic:#x})")
    scale = 1 if magic == 0xA1B23C4D else 1000
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    if linktype != 1:
        raise ValueError(f"{path}: link type {linktype} is not Ethernet")
    pos = 24
    record = struct.Struct(endian + "IIII")
    while pos < len(data):
        if pos + 16 > len(data):
            raise ValueError(f"{path}: record header cut short at byte {pos}")
        sec, frac, caplen, wirelen = record.unpack_from(data, pos)
        pos += 16
        if pos + caplen > len(data):
            raise ValueError(f"{path}: record data cut short at byte {pos}")
        yield sec * 1_000_000_000 + frac * scale, data[pos:pos + caplen], wirelen
        pos += caplen


def ipv4(b):
    return ".".join(str(x) for x in b)


def parse_udp(frame):
    """(src, dst, dport, udp payload) of an untagged or VLAN-tagged IPv4/UDP frame, or None."""
    off = 12
    ethertype = struct.unpack_from(">H", frame, off)[0]
    while ethertype in (0x8100, 0x88A8):
        off += 4
        ethertype = struct.unpack_from(">H", frame, off)[0]
    ip = off + 2
    if ethertype != 0x0800 or frame[ip + 9] != 17:
        return None
    ihl = (frame[ip] & 0x0F) * 4
    udp = ip + ihl
    ulen = struct.unpack_from(">H", frame, udp + 4)[0]
    dport = struct.unpack_from(">H", frame, udp + 2)[0]
    return ipv4(frame[ip + 12:ip + 16]), ipv4(frame[ip + 16:ip + 20]), dport, frame[udp + 8:udp + ulen]


class Timing:
    def __init__(self, frame_params):
        p = frame_params
        if p["layout"] != "v3":
            raise ValueError("run_check.py knows the v3 header layout only")
        sample_bits = p["nchan"] * p["nbits"] * (2 if p["complex"] else 1)
        samples_per_frame = p["payload_bytes"] * 8 // sample_bits
        self.frames_per_period = p["total_samples"] // samples_per_frame
        self.period = p["period"]
        self.payload_bytes = p["payload_bytes"]

    def index(self, header):
        frame, seconds = struct.unpack_from("<II", header, 0)
        return seconds // self.period * self.frames_per_period + frame

    def fill(self, template, index):
        """The fill frame for `index`: template header at that time, invalid, zero data."""
        words = list(struct.unpack_from("<8Q", template, 0))
        seconds = index // self.frames_per_period * self.period
        words[0] = (seconds << 32) | (index % self.frames_per_period)
        words[1] |= INVALID_BIT
        return struct.pack("<8Q", *words) + bytes(self.payload_bytes)


def stream_key(group, port, source):
    return f"{group}:{port} from {source}"


def expected_streams(summary, reference_pcap, fail):
    """Per stream key: (first index, list of frames in file order, fill count, gap runs)."""
    timing = Timing(summary["frame"])
    streams = {stream_key(s["group"], s["port"], s["source"]): s for s in summary["streams"]}
    bad = {k: set(s["bad_sync"]) | set(s["truncated"]) for k, s in streams.items()}
    frames = {k: {} for k in streams}
    datagrams = {k: 0 for k in streams}
    for _, frame, _ in read_pcap(reference_pcap):
        parsed = parse_udp(frame)
        if parsed is None:
            continue
        src, dst, dport, payload = parsed
        key = stream_key(dst, dport, src)
        if key not in streams:
            continue  # a foreign copy
        datagrams[key] += 1
        index = timing.index(payload)
        if index in bad[key]:
            continue
        if index in frames[key]:
            fail.check(frames[key][index] == payload,
                       f"reference pcap: {key}: frame {index} sent twice with different bytes")
            continue
        fail.check(len(payload) == CODIF_HEADER + timing.payload_bytes,
                   f"reference pcap: {key}: frame {index} is {len(payload)} bytes")
        frames[key][index] = payload
    result = {}
    for key, s in streams.items():
        fail.check(datagrams[key] == s["datagrams"],
                   f"reference pcap: {key}: {datagrams[key]} datagrams, the summary says "
                   f"{s['datagrams']} (not the same gen arguments?)")
        got = frames[key]
        if not got:
            result[key] = (None, [], 0, [])
            continue
        first, last = min(got), max(got)
        template = got[first]
        out, gaps, fills = [], [], 0
        for index in range(first, last + 1):
            if index in got:
                out.append(got[index])
                continue
            out.append(timing.fill(template, index))
            fills += 1
            if gaps and gaps[-1][0] + gaps[-1][1] == index:
                gaps[-1][1] += 1
            else:
                gaps.append([index, 1])
        result[key] = (first, out, fills, gaps)
    return result


def manifest_streams(manifest):
    return {stream_key(s["group"], s["port"], s["source"]): s for s in manifest["streams"]}


def files_of(stream, fmt, root):
    return [os.path.join(root, f["path"]) for f in stream["files"] if f["format"] == fmt]


def read_files(paths):
    return b"".join(open(p, "rb").read() for p in paths)


def first_difference(expected_frames, data, frame_bytes):
    for n, frame in enumerate(expected_frames):
        got = data[n * frame_bytes:(n + 1) * frame_bytes]
        if got != frame:
            if not got:
                return f"the file ends before frame {n} of {len(expected_frames)}"
            at = next((i for i in range(min(len(got), len(frame))) if got[i] != frame[i]),
                      min(len(got), len(frame)))
            return f"frame {n} differs at byte {at}"
    return f"{len(data) - len(expected_frames) * frame_bytes} bytes more than expected"


def check_files_listed(manifest, root, fail):
    """Every file in the manifest exists with the size the manifest gives."""
    entries = [f for s in manifest["streams"] for f in s["files"]]
    entries += [f for i in manifest["interfaces"] for f in i["files"]]
    for f in entries:
        path = os.path.join(root, f["path"])
        if fail.check(os.path.isfile(path), f"manifest lists {path}, which does not exist"):
            size = os.path.getsize(path)
            fail.check(size == f["bytes"], f"{path}: {size} bytes, the manifest says {f['bytes']}")
    return entries


def check_run_totals(manifest, summary, fail):
    fail.check(manifest["state"] == "stopped", f"manifest state is {manifest['state']!r}")
    for i in manifest["interfaces"]:
        fail.check(i["nic_drops"] == 0,
                   f"interface {i['name']}: {i['nic_drops']} packets dropped by the kernel/NIC "
                   "(real loss: the byte comparison cannot hold; lower the rate)")
        fail.check(i["ring_full_drops"] == 0,
                   f"interface {i['name']}: {i['ring_full_drops']} ring-full drops")
    want = {
        "bad_sync": sum(len(s["bad_sync"]) for s in summary["streams"]),
        "size_mismatch": sum(len(s["truncated"]) for s in summary["streams"]),
        "no_stream": sum(len(f["indices"]) for f in summary.get("foreign", [])),
    }
    want = {k: v for k, v in want.items() if v}
    fail.check(manifest["rejected"] == want,
               f"manifest rejected {manifest['rejected']}, expected {want}")


def check_stream(key, s, m, expectation, timing, root, fail, partial=False):
    first, frames, fills, gaps = expectation
    frame_bytes = CODIF_HEADER + timing.payload_bytes
    if partial:
        # A run stopped early: its files hold the expected stream up to its last frame, except
        # that the stop may fall between the two frames of a swapped pair (sent i+1, i).
        n = m["last_frame"]["index"] - first + 1 if m["last_frame"] else 0
        frames = frames[:n]
        gaps = [[g, c] for g, c in gaps if g < first + n]
        behind = first + n - 2
        if n >= 2 and behind in s["swapped"] and m["gaps"] != gaps:
            frames = frames[:-2] + [timing.fill(frames[0], behind), frames[-1]]
            gaps = gaps + [[behind, 1]]
            if len(gaps) > 1 and gaps[-2][0] + gaps[-2][1] == behind:
                gaps = gaps[:-2] + [[gaps[-2][0], gaps[-2][1] + 1]]
        fills = sum(c for _, c in gaps)
        fail.check(m["lost"] == fills and m["fill_frames"] == fills,
                   f"{key}: lost {m['lost']}, fill_frames {m['fill_frames']}, expected {fills}")
        fail.check(m["gaps"] == gaps, f"{key}: manifest gaps differ from the expected {gaps[:8]}")
    counts = {
        "packets": s["datagrams"] - len(s["bad_sync"]) - len(s["truncated"]),
        "bytes": (s["datagrams"] - len(s["bad_sync"]) - len(s["truncated"])) * frame_bytes,
        "duplicate": len(s["duplicated"]),
        "late": len(s["swapped"]),
        "late_dropped": 0,
        "invalid": len(s["invalid"]),
        "resync": 0,
        "lost": fills,
        "fill_frames": fills,
        "write_errors": 0,
        "gaps_not_listed": 0,
    }
    for field, want in ({} if partial else counts).items():
        fail.check(m[field] == want, f"{key}: manifest {field} {m[field]}, expected {want}")
    fail.check(m["gaps"] == gaps, f"{key}: manifest gaps {m['gaps'][:8]}..., expected {gaps[:8]}...")
    if first is not None and m["first_frame"]:
        fail.check(m["first_frame"]["index"] == first,
                   f"{key}: first frame {m['first_frame']['index']}, expected {first}")
    raw = read_files(files_of(m, "raw", root))
    fail.check(raw == b"".join(frames),
               f"{key}: raw files ({len(raw)} bytes) differ from the expected time-aligned stream "
               f"({len(frames)} frames of {frame_bytes} bytes): "
               + first_difference(frames, raw, frame_bytes))
    heads = read_files(files_of(m, "codifhdr", root))
    if files_of(m, "codifhdr", root) or heads:
        want = [f[:CODIF_HEADER] for f in frames]
        fail.check(heads == b"".join(want),
                   f"{key}: codifhdr files ({len(heads)} bytes) differ from the headers of the "
                   f"expected stream: " + first_difference(want, heads, CODIF_HEADER))
    return len(frames), fills


def expect(args):
    fail = Failures()
    summary = json.load(open(args.summary))
    manifest = json.load(open(args.manifest))
    root = args.output_dir or os.path.dirname(os.path.dirname(os.path.abspath(args.manifest)))
    timing = Timing(summary["frame"])
    expectation = expected_streams(summary, args.reference_pcap, fail)
    if not args.partial:
        check_run_totals(manifest, summary, fail)
    check_files_listed(manifest, root, fail)
    got = manifest_streams(manifest)
    total_frames = total_fills = 0
    for s in summary["streams"]:
        key = stream_key(s["group"], s["port"], s["source"])
        if not fail.check(key in got, f"{key}: not in the manifest"):
            continue
        n, fills = check_stream(key, s, got[key], expectation[key], timing, root, fail,
                                args.partial)
        total_frames += n
        total_fills += fills
    fail.check(len(got) == len(summary["streams"]),
               f"manifest has {len(got)} streams, the generator sent {len(summary['streams'])}")
    counts = ("gaps and fill counts match up to each stream's last frame" if args.partial else
              "manifest counts match the summary")
    return report(fail, f"{len(got)} streams, {total_frames} raw frames ({total_fills} fill) "
                        f"byte-identical to the expectation; {counts}")


def consistent(args):
    fail = Failures()
    manifest = json.load(open(args.manifest))
    root = args.output_dir or os.path.dirname(os.path.dirname(os.path.abspath(args.manifest)))
    check_files_listed(manifest, root, fail)
    fail.check(manifest["state"] == "stopped", f"manifest state is {manifest['state']!r}")
    raw_total = 0
    for m in manifest["streams"]:
        key = stream_key(m["group"], m["port"], m["source"])
        raw_bytes = sum(os.path.getsize(p) for p in files_of(m, "raw", root) if os.path.exists(p))
        head_bytes = sum(os.path.getsize(p) for p in files_of(m, "codifhdr", root)
                         if os.path.exists(p))
        fb = args.frame_bytes
        fail.check(raw_bytes % fb == 0, f"{key}: raw files hold {raw_bytes} bytes, not whole "
                                        f"{fb}-byte frames")
        frames = raw_bytes // fb
        delivered = m["packets"] - m["duplicate"] - m["late_dropped"]
        fail.check(frames == delivered + m["fill_frames"],
                   f"{key}: {frames} raw frames, manifest says {m['packets']} packets - "
                   f"{m['duplicate']} duplicate - {m['late_dropped']} late dropped + "
                   f"{m['fill_frames']} fill = {delivered + m['fill_frames']}")
        fail.check(m["fill_frames"] == m["lost"],
                   f"{key}: fill_frames {m['fill_frames']} != lost {m['lost']}")
        fail.check(head_bytes == frames * CODIF_HEADER,
                   f"{key}: codifhdr files hold {head_bytes} bytes, expected {frames} headers")
        fail.check(m["write_errors"] == 0, f"{key}: {m['write_errors']} write errors")
        raw_total += frames
    return report(fail, f"{len(manifest['streams'])} streams, {raw_total} raw frames: files "
                        "whole and consistent with the manifest")


def report(fail, ok_line):
    for item in fail.items:
        print("FAIL: " + item)
    if fail.items:
        return 1
    print("ok: " + ok_line)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    e = sub.add_parser("expect")
    e.add_argument("--summary", required=True)
    e.add_argument("--reference-pcap", required=True)
    e.add_argument("--manifest", required=True)
    e.add_argument("--partial", action="store_true",
                   help="the run was stopped early: files up to each stream's last frame")
    e.add_argument("--output-dir", help="output.directory (default: the manifest's grandparent)")
    c = sub.add_parser("consistent")
    c.add_argument("--manifest", required=True)
    c.add_argument("--frame-bytes", type=int, required=True)
    c.add_argument("--output-dir")
    args = ap.parse_args()
    try:
        return expect(args) if args.mode == "expect" else consistent(args)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"run_check.py: cannot read the inputs: {e!r}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
