#!/usr/bin/env python3
"""Checks rocecapd's pcap output with a real reader, tshark.

Every pcap file the manifest lists must be read by `tshark -r` to its end without complaint;
per stream (destination group:port, source) the number of frames must be what the run placed:
  - with --summary (a complete run of `rocecap gen` traffic): datagrams - bad_sync - truncated
    - duplicated, the frames of each stream that reached a file;
  - without: the manifest's packets - duplicate - late_dropped of that stream;
every UDP length must be 8 + the CODIF frame bytes of the run (--summary) or one value per
stream, frames of no configured stream must be absent, and timestamps (frame.time_epoch) must
never decrease within a file.

usage: pcap_check.py --manifest M [--summary S] [--output-dir D]
Exit status: 0 ok, 1 a check failed (all printed), 2 unreadable input or tshark missing.
"""
import argparse
import collections
import json
import os
import subprocess
import sys


def tshark_fields(path):
    """[(time_ns, src, dst, dport, udp_length)] and tshark's stderr."""
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src",
           "-e", "ip.dst", "-e", "udp.dstport", "-e", "udp.length"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rows = []
    for line in p.stdout.splitlines():
        t, src, dst, port, length = line.split("\t")
        sec, _, frac = t.partition(".")
        rows.append((int(sec) * 1_000_000_000 + int((frac + "000000000")[:9]), src, dst,
                     int(port) if port else -1, int(length) if length else -1))
    # tshark warns on stderr when run as root; anything else there is a complaint.
    err = [l for l in p.stderr.splitlines() if not l.startswith('Running as user "root"')]
    return p.returncode, "\n".join(err).strip(), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--summary")
    ap.add_argument("--output-dir")
    args = ap.parse_args()
    try:
        manifest = json.load(open(args.manifest))
        summary = json.load(open(args.summary)) if args.summary else None
    except (OSError, ValueError) as e:
        print(f"pcap_check.py: {e}")
        return 2
    root = args.output_dir or os.path.dirname(os.path.dirname(os.path.abspath(args.manifest)))
    failures = []

    want = {}
    if summary:
        for s in summary["streams"]:
            want[(s["group"], s["port"], s["source"])] = (
                s["datagrams"] - len(s["bad_sync"]) - len(s["truncated"]) - len(s["duplicated"]))
        lengths = {8 + 64 + summary["frame"]["payload_bytes"]}
    else:
        for s in manifest["streams"]:
            want[(s["group"], s["port"], s["source"])] = (
                s["packets"] - s["duplicate"] - s["late_dropped"])
        lengths = None

    files = [f["path"] for i in manifest["interfaces"] for f in i["files"] if f["format"] == "pcap"]
    if not files:
        failures.append("the manifest lists no pcap file")
    got = collections.Counter()
    seen_lengths = collections.defaultdict(set)
    total = 0
    for rel in files:
        path = os.path.join(root, rel)
        rc, err, rows = tshark_fields(path)
        if rc != 0 or err:
            failures.append(f"tshark -r {path}: exit {rc}: {err}")
        last = None
        for n, (t, src, dst, port, length) in enumerate(rows, 1):
            if last is not None and t < last:
                failures.append(f"{path}: frame {n} has timestamp {t}, before frame {n - 1}'s {last}")
                break
            last = t
        for t, src, dst, port, length in rows:
            got[(dst, port, src)] += 1
            seen_lengths[(dst, port, src)].add(length)
        total += len(rows)
        print(f"tshark -r {rel}: {len(rows)} frames, timestamps non-decreasing")
    for key in sorted(set(want) | set(got)):
        name = f"{key[0]}:{key[1]} from {key[2]}"
        if key not in want:
            failures.append(f"{name}: {got[key]} frames in the pcap files, not a configured stream")
            continue
        if got[key] != want[key]:
            failures.append(f"{name}: {got[key]} frames in the pcap files, expected {want[key]}")
        ls = seen_lengths.get(key, set())
        if lengths is not None and ls and ls != lengths:
            failures.append(f"{name}: UDP lengths {sorted(ls)}, expected {sorted(lengths)}")
        if lengths is None and len(ls) > 1:
            failures.append(f"{name}: UDP lengths vary: {sorted(ls)}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"ok: {len(files)} pcap file(s), {total} frames, per-stream counts and UDP lengths match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
