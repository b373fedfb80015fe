#!/usr/bin/python3
"""Checks rocecap_gpu_power's tables against the run's raw files (raw_power.py's sums).

For every stream the GPU consumer printed: it read every frame of the raw file (fill frames
included) and missed none, and its per-channel power sums equal numpy's over the raw file to
the 6 significant digits it prints. Streams are named "<antenna>@<a.b.c.d>:<port>"; their raw
file is "<a.b.c.d>_<port>_<antenna>.0000.codif" in the run directory (2 x 4-bit complex
channels: the e2e generator's layout).

usage: gpu_power_check.py GPU_POWER_OUTPUT RUN_DIR FRAME_BYTES
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tables(path):
    streams, cur = {}, None
    for line in open(path):
        m = re.match(r"stream (\S+) \(", line)
        if m:
            cur = streams.setdefault(m.group(1), {"power": {}})
            continue
        m = re.match(r"\s+frames read (\d+)\s+missed (\d+)\s+fill (\d+)", line)
        if m and cur is not None:
            cur["read"], cur["missed"], cur["fill"] = map(int, m.groups())
            continue
        m = re.match(r"\s+(\d+)\s+(\S+)\s+\S+$", line)
        if m and cur is not None:
            cur["power"][int(m.group(1))] = float(m.group(2))
    return streams


def main():
    out, run_dir, frame_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    got = tables(out)
    fails = []
    if not got:
        fails.append(f"{out}: no stream table")
    for name, t in sorted(got.items()):
        antenna, where = name.split("@")
        addr, port = where.split(":")
        raw = os.path.join(run_dir, f"{addr}_{port}_{antenna}.0000.codif")
        frames = os.path.getsize(raw) // frame_bytes
        ref = subprocess.run([sys.executable, os.path.join(HERE, "raw_power.py"), raw,
                              str(frame_bytes), "2", "4", "complex"],
                             check=True, capture_output=True, text=True).stdout.split("\n")
        ref = {int(l.split()[0]): int(l.split()[1]) for l in ref if l.strip()}
        if t.get("read") != frames or t.get("missed") != 0:
            fails.append(f"{name}: read {t.get('read')}, missed {t.get('missed')}; "
                         f"the raw file has {frames} frames")
        for c, p in ref.items():
            g = t["power"].get(c)
            if g is None or abs(g - p) > 1e-5 * max(1.0, abs(p)):
                fails.append(f"{name} channel {c}: GPU power {g}, raw file {p}")
        print(f"{name}: {t.get('read')} frames ({t.get('fill')} fill), power {t['power']} "
              f"(raw file: {ref})")
    for f in fails:
        print("FAIL:", f)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
