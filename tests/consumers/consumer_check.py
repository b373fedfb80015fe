#!/usr/bin/python3
"""Checks of the consumer end-to-end tests, from rocecapd's raw files and manifests alone.

    consumer_check.py same-run MANIFEST_A MANIFEST_B
        the two runs' per-stream counters, per-interface counters, rejected reasons and the
        sha256 of every raw file are equal (a run with consumers against one without)
    consumer_check.py power --out POWER_STAGE_STDOUT --manifest MANIFEST [--streams A,B]
        rocecap_power_stage's table: per stream, frames read and fill = the raw file's, missed 0,
        the layout it reports = the CODIF header's, and every channel's power sum, mean and the
        time-sample count = numpy's over the raw file's non-fill frames (in the layout it used)
    consumer_check.py frames --manifest MANIFEST --stream NAME --bin FILE --idx FILE
                             --summary JSON [--expect-missed]
        a consumer's frames (FILE, in order, with their frame indices in IDX) are each the raw
        file's frame at that index, byte for byte; read + missed = the raw file's frames; with
        --expect-missed, missed > 0; without, missed = 0
    consumer_check.py counts --manifest MANIFEST
        prints per stream: raw frames, fill frames

A fill frame in a raw file: a CODIF header with the invalid bit (current layout: word 1 bit
17; doc/codif.md) and data that is all zeros; their count must be the manifest's fill_frames.
Exit 0: all checks passed; 1: a FAIL line per failed check.
"""

import argparse
import hashlib
import json
import os
import re
import sys

import numpy as np

HEADER = 64
failures = []


def fail(text):
    failures.append(text)
    print(f"FAIL: {text}")


def load(path):
    with open(path) as f:
        return json.load(f)


def stream_name(s):
    return f"{s['antenna']}@{s['group']}:{s['port']}"


def raw_paths(manifest_path, s):
    base = os.path.dirname(os.path.dirname(manifest_path))  # output.directory
    return [os.path.join(base, f["path"]) for f in s["files"] if f["format"] == "raw"]


def raw_frames(manifest_path, s):
    """The stream's raw file(s) as an (n, frame bytes) uint8 array."""
    data = b"".join(open(p, "rb").read() for p in raw_paths(manifest_path, s))
    frame = HEADER + frame_data_bytes(data)
    if len(data) % frame:
        fail(f"{stream_name(s)}: raw file of {len(data)} bytes is no whole number of "
             f"{frame}-byte frames")
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, frame)


def frame_data_bytes(data):
    if len(data) < HEADER:
        return 0
    w3 = int.from_bytes(data[24:32], "little")
    return (w3 >> 32) * 8


def header_words(frames):
    return frames[:, :HEADER].copy().view("<u8")


def fill_mask(frames):
    w = header_words(frames)
    invalid = ((w[:, 1] >> np.uint64(17)) & np.uint64(1)).astype(bool)
    zero = ~frames[:, HEADER:].any(axis=1)
    return invalid & zero


def streams_by_name(manifest_path):
    return {stream_name(s): s for s in load(manifest_path)["streams"]}


def sha256(paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def same_run(args):
    a, b = load(args.a), load(args.b)
    sa = {stream_name(s): s for s in a["streams"]}
    sb = {stream_name(s): s for s in b["streams"]}
    if sorted(sa) != sorted(sb):
        fail(f"streams differ: {sorted(sa)} vs {sorted(sb)}")
    for name in sorted(set(sa) & set(sb)):
        x, y = dict(sa[name]), dict(sb[name])
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                fail(f"{name}: manifest {key} {x.get(key)!r} with consumers, {y.get(key)!r} without")
        ha, hb = sha256(raw_paths(args.a, x)), sha256(raw_paths(args.b, y))
        if ha != hb:
            fail(f"{name}: raw file sha256 {ha} with consumers, {hb} without")
    ia = [{k: v for k, v in i.items()} for i in a["interfaces"]]
    ib = [{k: v for k, v in i.items()} for i in b["interfaces"]]
    if ia != ib:
        fail(f"interfaces differ: {ia} with consumers, {ib} without")
    if a.get("rejected") != b.get("rejected"):
        fail(f"rejected differ: {a.get('rejected')} vs {b.get('rejected')}")
    for i in a["interfaces"]:
        for key in ("ring_full_drops", "dump_pinned_drops", "nic_drops"):
            if i.get(key):
                fail(f"interface {i['name']}: {key} {i[key]} (capture lost frames)")
    if not failures:
        print(f"same run: {len(sa)} streams, counters and raw sha256 equal")


def values(frames, nbits):
    """The data of every frame as int values, in order (power_stage.cpp value_at)."""
    data = frames[:, HEADER:]
    if nbits == 16:
        return data.copy().view("<i2").astype(np.int64)
    if nbits == 8:
        return data.view(np.int8).astype(np.int64)
    lo = (data & 0x0F).astype(np.int64)
    hi = (data >> 4).astype(np.int64)
    v = np.stack([lo, hi], axis=-1).reshape(data.shape[0], -1)  # low nibble first
    return (v ^ 8) - 8


def parse_power_output(path):
    """{stream: {read, missed, fill, layout:(nchan, nbits, complex), samples, power: [(sum, mean)]}}"""
    out, cur = {}, None
    for line in open(path):
        m = re.match(r"stream (\S+) \(", line)
        if m:
            cur = out.setdefault(m.group(1), {"power": []})
            continue
        if cur is None:
            continue
        m = re.match(r"\s+frames read (\d+)\s+missed (\d+)\s+fill (\d+)", line)
        if m:
            cur["read"], cur["missed"], cur["fill"] = map(int, m.groups())
            continue
        m = re.match(r"\s+(\d+) channels, (\d+)-bit (complex|real), (\d+) time samples", line)
        if m:
            cur["layout"] = (int(m.group(1)), int(m.group(2)), m.group(3) == "complex")
            cur["samples"] = int(m.group(4))
            continue
        m = re.match(r"\s+(\d+)\s+(\S+)\s+(\S+)\s*$", line)
        if m and "layout" in cur:
            cur["power"].append((m.group(2), m.group(3)))
    return out


def power(args):
    got = parse_power_output(args.out)
    streams = streams_by_name(args.manifest)
    want_streams = sorted(args.streams.split(",")) if args.streams else sorted(streams)
    if sorted(got) != want_streams:
        fail(f"power_stage reported streams {sorted(got)}, expected {want_streams}")
    for name in sorted(set(got) & set(streams)):
        g, s = got[name], streams[name]
        frames = raw_frames(args.manifest, s)
        fill = fill_mask(frames)
        if int(fill.sum()) != s["fill_frames"]:
            fail(f"{name}: {int(fill.sum())} fill frames in the raw file, manifest says "
                 f"{s['fill_frames']}")
        if g.get("read") != len(frames) or g.get("fill") != int(fill.sum()) or g.get("missed"):
            fail(f"{name}: power_stage read {g.get('read')} frames ({g.get('fill')} fill, "
                 f"{g.get('missed')} missed); the raw file holds {len(frames)} "
                 f"({int(fill.sum())} fill)")
        if "layout" not in g:
            fail(f"{name}: power_stage summed no power")
            continue
        w = header_words(frames[~fill][:1])[0]
        header_layout = (int(w[3] & np.uint64(0xFFFF)), int((w[1] >> np.uint64(8)) & np.uint64(0xFF)),
                         bool((w[1] >> np.uint64(18)) & np.uint64(1)))
        if g["layout"] != header_layout:
            fail(f"{name}: power_stage took the layout (nchan, nbits, complex) = {g['layout']} "
                 f"from the CODIF header, which says {header_layout} (complex is word 1 bit 18, "
                 "doc/codif.md)")
        # power_stage's sums in the layout it used, so its arithmetic is checked either way.
        nchan, nbits, cplx = g["layout"]
        parts = 2 if cplx else 1
        v = values(frames[~fill], nbits)
        per_frame = v.shape[1] // (nchan * parts)
        v = v[:, :per_frame * nchan * parts].reshape(-1, per_frame, nchan, parts)
        sums = (v * v).sum(axis=(0, 1, 3)).astype(np.float64)
        samples = v.shape[0] * per_frame
        if g["samples"] != samples:
            fail(f"{name}: power_stage summed {g['samples']} time samples, numpy {samples}")
        want = [("%.6g" % p, "%.6g" % (p / samples if samples else 0.0)) for p in sums]
        if g["power"] != want:
            fail(f"{name}: power per channel (sum, mean) {g['power']}, numpy {want}")
        # The printed sums carry 6 digits; the exact integer sums are within that rounding.
        for c, (text, _) in enumerate(g["power"][:len(sums)]):
            if abs(float(text) - sums[c]) > 5e-6 * sums[c]:
                fail(f"{name}: channel {c} power {text} vs numpy {sums[c]:.0f}")
    if not failures:
        print(f"power_stage: {len(got)} streams, frames, fill and power per channel as numpy")


def frames_check(args):
    s = streams_by_name(args.manifest).get(args.stream)
    if s is None:
        fail(f"no stream {args.stream} in {args.manifest}")
        return
    raw = raw_frames(args.manifest, s)
    first = s["first_frame"]["index"]
    summary = load(args.summary)[args.stream]
    got = np.fromfile(args.bin, dtype=np.uint8)
    idx = np.loadtxt(args.idx, dtype=np.uint64, ndmin=1) if os.path.getsize(args.idx) else \
        np.zeros(0, dtype=np.uint64)
    size = raw.shape[1]
    if got.size % size or got.size // size != len(idx):
        fail(f"{args.stream}: {got.size} bytes got for {len(idx)} frame indices")
        return
    got = got.reshape(-1, size)
    pos = idx.astype(np.int64) - first
    if len(pos) and (pos.min() < 0 or pos.max() >= len(raw)):
        fail(f"{args.stream}: frame indices {idx.min()}..{idx.max()} outside the raw file's "
             f"{first}..{first + len(raw) - 1}")
        return
    if len(pos) > 1 and (np.diff(pos) <= 0).any():
        fail(f"{args.stream}: frame indices not increasing")
    bad = np.nonzero((got != raw[pos]).any(axis=1))[0]
    if len(bad):
        fail(f"{args.stream}: {len(bad)} of {len(pos)} frames differ from the raw file's frame "
             f"at their index (first: index {int(idx[bad[0]])}): a torn frame was returned")
    read, missed = summary["read"], summary["missed"]
    if read != len(pos) or read + missed != len(raw):
        fail(f"{args.stream}: read {read} + missed {missed} != {len(raw)} frames in the raw file "
             f"(frames written {len(pos)})")
    if args.expect_missed and missed == 0:
        fail(f"{args.stream}: the slow consumer missed nothing; the test did not make it fall "
             "behind")
    if not args.expect_missed and missed:
        fail(f"{args.stream}: {missed} frames missed")
    if not failures:
        print(f"{args.stream}: {read} frames read, each the raw file's frame at its index, "
              f"{missed} missed, read + missed = {len(raw)} raw frames")


def counts(args):
    for name, s in sorted(streams_by_name(args.manifest).items()):
        frames = raw_frames(args.manifest, s)
        print(name, len(frames), int(fill_mask(frames).sum()))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("same-run")
    q.add_argument("a")
    q.add_argument("b")
    q = sub.add_parser("power")
    q.add_argument("--out", required=True)
    q.add_argument("--manifest", required=True)
    q.add_argument("--streams", help="the streams it read, comma-separated (default: all)")
    q = sub.add_parser("frames")
    q.add_argument("--manifest", required=True)
    q.add_argument("--stream", required=True)
    q.add_argument("--bin", required=True)
    q.add_argument("--idx", required=True)
    q.add_argument("--summary", required=True)
    q.add_argument("--expect-missed", action="store_true")
    q = sub.add_parser("counts")
    q.add_argument("--manifest", required=True)
    args = p.parse_args()
    {"same-run": same_run, "power": power, "frames": frames_check, "counts": counts}[args.cmd](args)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
