#!/usr/bin/python3
"""Per-channel power sums of a raw CODIF file (rocecapd's raw output), computed with numpy.

The reference a consumer stage's sums are checked against (rocecap_power_stage,
rocecap_gpu_power): every frame's data array is taken as time-major, channel-minor samples,
two's complement, 4-bit (low nibble first), 8-bit or 16-bit little-endian, complex as real
then imaginary. Fill frames are all zeros and add nothing, so the whole file is summed.

usage: raw_power.py RAW_FILE FRAME_BYTES NCHAN NBITS complex|real
prints: one line per channel, "channel power".
"""
import sys

import numpy as np


def values(data, nbits):
    if nbits == 16:
        return data.view("<i2").astype(np.int64)
    if nbits == 8:
        return data.view(np.int8).astype(np.int64)
    lo = (data & 0x0F).astype(np.int64)
    hi = (data >> 4).astype(np.int64)
    out = np.empty(data.size * 2, dtype=np.int64)
    out[0::2], out[1::2] = lo, hi
    return (out ^ 8) - 8


def main():
    path, frame_bytes, nchan, nbits, kind = sys.argv[1:6]
    frame_bytes, nchan, nbits = int(frame_bytes), int(nchan), int(nbits)
    parts = 2 if kind == "complex" else 1
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size % frame_bytes:
        sys.exit(f"{path}: {raw.size} bytes, not a whole number of {frame_bytes}-byte frames")
    frames = raw.reshape(-1, frame_bytes)[:, 64:]
    v = values(np.ascontiguousarray(frames).reshape(-1), nbits)
    per_frame = v.size // frames.shape[0]
    samples = per_frame // (nchan * parts)
    v = v.reshape(frames.shape[0], per_frame)[:, : samples * nchan * parts]
    v = v.reshape(-1, nchan, parts)
    power = (v * v).sum(axis=(0, 2))
    for c, p in enumerate(power):
        print(c, int(p))


if __name__ == "__main__":
    main()
