"""rocecap quicklook: pictures of a run directory, for a person to look at.

Run by `rocecap quicklook RUN_DIR` (tools/quicklook_command.cpp) with Debian's python3, numpy
and matplotlib. Reads the run's manifest.json and raw files (CODIF or VDIF, as rocecapd wrote
them, on every output target) and writes, per antenna, a PNG with one row per stream of that
antenna: the bandpass (power per channel from the voltages, by FFT over a chosen span), the
power against time, and the loss timeline (the manifest's gaps, write-error and storage-lost
gaps); and summary.png, one page for the run. quicklook.json holds the numbers each picture
shows, so tests (tests/tools/quicklook_test.sh) check what is drawn.

Samples: 8- and 16-bit, real or complex, channels interleaved per time sample; CODIF two's
complement, VDIF offset binary (tools/lib/tone.hpp, doc/vdif.md). Other widths are named in the
picture and the JSON, and only their loss timeline is drawn. Frames with the invalid bit
(rocecapd's fill frames for lost frames) carry no samples and are left out of the power.
Only a bounded number of frames is read per stream (--max-frames), evenly spread, so a quick
look at a long run stays quick.

Exit codes: 0 pictures written; 1 the run cannot be read (or a listed file cannot: the others are
still drawn); 2 bad command line (run directly; `rocecap quicklook` checks its options first);
3 numpy or matplotlib missing.
"""

import argparse
import datetime
import json
import os
import re
import struct
import sys
import tempfile
import textwrap

PROG = "rocecap quicklook"
SYNC_V3 = 0xFEEDCAFE
SYNC_V1 = 0xABADDEED
LOSS_COLOURS = {"lost": "tab:red", "write_error": "tab:orange", "storage_lost": "tab:purple"}


class RunError(Exception):
    """The run (or a file it lists) cannot be read as asked; the message names it."""


def fail(message, code):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(code)


def import_plotting():
    try:
        import numpy  # noqa: F401
        import matplotlib
    except ImportError as e:
        fail(f"needs numpy and matplotlib ({e.name} is missing): "
             "apt-get install python3-numpy python3-matplotlib", 3)
    matplotlib.use("Agg")  # files only: no display on a capture host


# ---- headers ---------------------------------------------------------------------------------

def epoch_unix(epoch):
    """Unix seconds of half-year `epoch` since 2000 (1 January or 1 July)."""
    year, half = 2000 + epoch // 2, epoch % 2
    start = datetime.datetime(year, 7 if half else 1, 1, tzinfo=datetime.timezone.utc)
    return start.timestamp()


def codif_header(raw):
    w = struct.unpack("<8Q", raw[:64])
    if w[5] & 0xFFFFFFFF == SYNC_V3:
        h = dict(frame=w[0] & 0xFFFFFFFF, seconds=w[0] >> 32, epoch=w[1] & 0xFF,
                 nbits=(w[1] >> 8) & 0xFF, invalid=bool(w[1] >> 17 & 1),
                 complex=bool(w[1] >> 18 & 1), period=w[1] >> 48, nchan=w[3] & 0xFFFF,
                 data_bytes=(w[3] >> 32) * 8, total_samples=w[4])
    elif w[5] >> 32 == SYNC_V1:
        h = dict(frame=w[0] & 0xFFFFFFFF, seconds=(w[0] >> 32) & 0x3FFFFFFF,
                 complex=bool(w[0] >> 62 & 1), invalid=bool(w[0] >> 63), epoch=(w[1] >> 26) & 0x3F,
                 data_bytes=((w[1] >> 32) & 0xFFFFFF) * 8, nbits=(w[1] >> 56) & 0x1F,
                 nchan=((w[2] >> 32) & 0xFFFF) + 1, period=(w[3] >> 32) & 0xFFFF,
                 total_samples=w[4])
    else:
        return None
    h.update(header_bytes=64, frame_bytes=64 + h["data_bytes"], format="codif")
    return h


def vdif_header(raw):
    w = struct.unpack("<4I", raw[:16])
    legacy = bool(w[0] >> 30 & 1)
    hb = 16 if legacy else 32
    h = dict(seconds=w[0] & 0x3FFFFFFF, invalid=bool(w[0] >> 31), frame=w[1] & 0xFFFFFF,
             epoch=(w[1] >> 24) & 0x3F, frame_bytes=(w[2] & 0xFFFFFF) * 8,
             nchan=1 << ((w[2] >> 24) & 0x1F), nbits=((w[3] >> 26) & 0x1F) + 1,
             complex=bool(w[3] >> 31), header_bytes=hb, format="vdif")
    h["data_bytes"] = h["frame_bytes"] - hb
    return h if h["data_bytes"] > 0 else None


def samples_per_frame(h):
    bits = h["nchan"] * h["nbits"] * (2 if h["complex"] else 1)
    return h["data_bytes"] * 8 // bits if bits else 0


class Timeline:
    """Frame index <-> time for one stream: frames per second and the frame's start."""

    def __init__(self, h, vdif_fps):
        self.spf = samples_per_frame(h)
        if h["format"] == "codif":
            fpp = h["total_samples"] // self.spf if self.spf else 0
            self.fps = fpp / h["period"] if h["period"] else 0
            self.fpp, self.period = fpp, h["period"]
        else:
            self.fps = vdif_fps or 0
        self.epoch = epoch_unix(h["epoch"])

    def index(self, h):
        if h["format"] == "codif":
            return (h["seconds"] // self.period) * self.fpp + h["frame"]
        return h["seconds"] * int(self.fps) + h["frame"]

    def seconds(self, h):
        """Unix time of the frame's start."""
        return self.epoch + h["seconds"] + (h["frame"] / self.fps if self.fps else 0)


# ---- the run ---------------------------------------------------------------------------------

def load_manifest(run_dir):
    path = run_dir if run_dir.endswith("manifest.json") else os.path.join(run_dir, "manifest.json")
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except OSError as e:
        raise RunError(f"{path}: cannot read: {e.strerror}") from e
    except ValueError as e:
        raise RunError(f"{path}: not JSON: {e}") from e
    if not isinstance(m, dict) or "streams" not in m:
        raise RunError(f"{path}: not a rocecapd manifest (no streams)")
    return m, os.path.dirname(os.path.abspath(path))


def target_dirs(manifest, run_dir):
    """Output directories by target index: the manifest's targets, or the run dir's parent."""
    parent = os.path.dirname(run_dir)
    targets = manifest.get("targets") or []
    return [t.get("directory", parent) for t in targets] or [parent]


def run_file_text(manifest):
    return (manifest.get("config") or {}).get("text") or ""


def undrawable(manifest):
    """Why the run's raw files hold no frame headers to read, or None."""
    text = run_file_text(manifest)
    if re.search(r"\bstrip_headers\s*:\s*true\b", text):
        return "raw files hold data only (output.strip_headers): no headers to time the samples"
    if re.search(r"\bformat\s*:\s*udp\b", text):
        return "streams.format udp: payloads are not CODIF or VDIF frames"
    return None


def run_file_value(manifest, key):
    text = run_file_text(manifest)
    m = re.search(r"\b" + key + r"\s*:\s*([0-9]+)", text)
    return int(m.group(1)) if m else None


def vdif_frames_per_second(manifest, stream, spf):
    fps = run_file_value(manifest, "frames_per_second")
    rate = run_file_value(manifest, "sample_rate")
    if fps is None and rate and spf:
        fps = rate // spf
    if fps is None:  # from the manifest's own first and last frame
        a, b = stream.get("first_frame"), stream.get("last_frame")
        if a and b and b["unix_ns"] > a["unix_ns"]:
            fps = round((b["index"] - a["index"]) * 1e9 / (b["unix_ns"] - a["unix_ns"]))
    return fps


def stream_label(s):
    label = f"{s.get('antenna', '?')} {s.get('group', '?')}:{s.get('port', '?')}"
    return label + (f" thread {s['thread']}" if "thread" in s else "")


class RawFrames:
    """The frames of a stream's raw files, in order, read by position."""

    def __init__(self, stream, dirs, problems):
        self.files, self.counts, self.header = [], [], None
        for f in stream.get("files", []):
            if f.get("format") != "raw":
                continue
            path = os.path.join(dirs[f.get("target", 0)], f["path"])
            try:
                self._add(path)
            except OSError as e:
                problems.append(f"{path}: cannot read: {e.strerror}")
            except RunError as e:
                problems.append(str(e))

    def _add(self, path):
        with open(path, "rb") as fh:
            head = fh.read(64)
        if not head:
            return
        h = codif_header(head) if len(head) >= 64 else None
        h = h or vdif_header(head)
        if h is None or (self.header and h["frame_bytes"] != self.header["frame_bytes"]):
            raise RunError(f"{path}: no CODIF or VDIF frame at its start (headers stripped?)")
        self.header = self.header or h
        self.files.append(path)
        self.counts.append(os.path.getsize(path) // h["frame_bytes"])

    def total(self):
        return sum(self.counts)

    def read(self, positions):
        """(header, payload bytes) of the frames at these positions (ascending)."""
        size = self.header["frame_bytes"]
        out, k, base = [], 0, 0
        for fi, path in enumerate(self.files):
            with open(path, "rb") as fh:
                while k < len(positions) and positions[k] < base + self.counts[fi]:
                    fh.seek((positions[k] - base) * size)
                    raw = fh.read(size)
                    out.append(self.decode(raw))
                    k += 1
            base += self.counts[fi]
        return [x for x in out if x[0] is not None]

    def decode(self, raw):
        h = codif_header(raw) if self.header["format"] == "codif" else vdif_header(raw)
        return h, raw[self.header["header_bytes"]:]


# ---- numbers ---------------------------------------------------------------------------------

def samples(np, h, data):
    """Complex or real samples as an array (time, channel), or None for widths not decoded."""
    if h["nbits"] not in (8, 16):
        return None
    bits = h["nbits"]
    signed = h["format"] == "codif"
    dtype = ("<i" if signed else "<u") + str(bits // 8)
    x = np.frombuffer(data, dtype=dtype).astype(np.float64)
    if not signed:
        x -= 2 ** (bits - 1)
    if h["complex"]:
        x = x[0::2] + 1j * x[1::2]
    n = len(x) // h["nchan"] * h["nchan"]
    return x[:n].reshape(-1, h["nchan"])


def spectrum(np, x, fft):
    """Power per channel: per coarse channel `fft` bins (real: 2 x fft samples per segment)."""
    seg = fft if np.iscomplexobj(x) else 2 * fft
    nseg = x.shape[0] // seg
    if nseg == 0:
        return None
    y = x[: nseg * seg].reshape(nseg, seg, x.shape[1])
    if np.iscomplexobj(x):
        p = np.abs(np.fft.fftshift(np.fft.fft(y, axis=1), axes=1)) ** 2
    else:
        p = np.abs(np.fft.rfft(y, axis=1)[:, :fft, :]) ** 2
    return p.mean(axis=0).T.reshape(-1)  # coarse channel major


def spread(first, last, count):
    """Up to `count` positions evenly from first to last inclusive."""
    n = last - first + 1
    if n <= 0:
        return []
    if n <= count:
        return list(range(first, last + 1))
    step = (n - 1) / (count - 1) if count > 1 else 0
    return sorted({first + round(i * step) for i in range(count)})


def loss_intervals(stream, timeline, anchor):
    """(reason, first index, count, start s, end s) of every listed gap, times from `anchor`."""
    out = []
    def add(reason, gaps):
        for first, count in gaps or []:
            out.append((reason, first, count))
    add("lost", stream.get("gaps"))
    for key, reason in (("write_error_lost", "write_error"), ("storage_lost", "storage_lost")):
        for fmt in (stream.get(key) or {}).values():
            if isinstance(fmt, dict):
                add(reason, fmt.get("gaps"))
    first = stream.get("first_frame")
    if not first or not timeline.fps:
        return [dict(reason=r, first_index=f, count=c, start_s=None, end_s=None) for r, f, c in out]
    t0 = first["unix_ns"] / 1e9 - anchor
    def at(i):
        return t0 + (i - first["index"]) / timeline.fps
    return [dict(reason=r, first_index=f, count=c, start_s=at(f), end_s=at(f + c))
            for r, f, c in sorted(set(out), key=lambda g: (g[1], g[0]))]


class StreamLook:
    """What the pictures of one stream show."""

    def __init__(self, np, manifest, stream, dirs, args, anchor, problems):
        self.stream, self.label, self.fft = stream, stream_label(stream), args.fft
        self.note = undrawable(manifest)
        self.raw = RawFrames({} if self.note else stream, dirs, problems)
        self.bandpass = self.power_t = self.power = None
        self.timeline = None
        if self.raw.header is None:
            self.note = self.note or "no raw files with headers to read"
            self.losses = loss_intervals(stream, _RateOnly(manifest, stream), anchor)
            return
        h = self.raw.header
        fps = vdif_frames_per_second(manifest, stream, samples_per_frame(h)) \
            if h["format"] == "vdif" else None
        self.timeline = Timeline(h, fps)
        self.losses = loss_intervals(stream, self.timeline, anchor)
        self._measure(np, args, anchor)

    def _measure(self, np, args, anchor):
        frames = self.raw.read(spread(0, self.raw.total() - 1, args.max_frames))
        valid = [(h, d) for h, d in frames if not h["invalid"]]
        if valid and samples(np, valid[0][0], valid[0][1]) is None:
            self.note = f"{valid[0][0]['nbits']}-bit samples are not decoded (8 and 16 are)"
            return
        self.power_t = np.array([self.timeline.seconds(h) - anchor for h, _ in valid])
        self.power = np.array([np.mean(np.abs(samples(np, h, d)) ** 2) for h, d in valid])
        self._bandpass(np, valid, args, anchor)

    def _bandpass(self, np, valid, args, anchor):
        t = self.power_t
        lo = (t.min() if len(t) else 0) + args.start
        hi = lo + args.span if args.span else float("inf")
        chosen = [v for v, s in zip(valid, t) if lo <= s < hi]
        spectra = [spectrum(np, samples(np, h, d), args.fft) for h, d in chosen]
        spectra = [s for s in spectra if s is not None]
        self.frames_in_bandpass = len(spectra)
        self.bandpass_span = (lo, min(hi, t.max() if len(t) else lo))
        if spectra:
            self.bandpass = np.mean(spectra, axis=0)

    def hz_per_channel(self):
        tl = self.timeline
        if not tl or not tl.fps:
            return None
        rate = tl.spf * tl.fps  # samples per second per coarse channel
        h = self.raw.header
        return rate / (self.fft if h["complex"] else 2 * self.fft)

    def summary(self, np):
        s = self.stream
        out = dict(label=self.label, antenna=s.get("antenna"), group=s.get("group"),
                   port=s.get("port"), interface=s.get("interface"), note=self.note,
                   raw_files=len(self.raw.files), raw_frames=self.raw.total(),
                   losses=self.losses)
        if "thread" in s:
            out["thread"] = s["thread"]
        if self.power is not None:
            out["power"] = dict(frames=len(self.power), mean=float(np.mean(self.power))
                                if len(self.power) else None)
        if self.bandpass is not None:
            peak = int(np.argmax(self.bandpass))
            out["bandpass"] = dict(channels=len(self.bandpass), fft=self.fft, peak_channel=peak,
                                   hz_per_channel=self.hz_per_channel(),
                                   frames=self.frames_in_bandpass,
                                   span_s=list(self.bandpass_span))
        return out


class _RateOnly:
    """A stream without readable raw files: frames per second from its first and last frame."""

    def __init__(self, manifest, stream):
        a, b = stream.get("first_frame"), stream.get("last_frame")
        self.fps = 0
        if a and b and b["unix_ns"] > a["unix_ns"]:
            self.fps = (b["index"] - a["index"]) * 1e9 / (b["unix_ns"] - a["unix_ns"])


# ---- pictures --------------------------------------------------------------------------------

def utc(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def empty_panel(ax, text):
    """A panel with nothing to plot says why, wrapped to fit."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=8,
            transform=ax.transAxes)


def draw_bandpass(ax, look):
    ax.set_title(f"{look.label}: bandpass", fontsize=9)
    if look.bandpass is None:
        empty_panel(ax, look.note or "no samples")
        return
    ax.semilogy(look.bandpass, lw=0.8)
    peak = int(look.bandpass.argmax())
    ax.axvline(peak, color="tab:red", lw=0.6, ls=":")
    hz = look.hz_per_channel()
    unit = f", {hz / 1e3:.4g} kHz per channel" if hz else ""
    ax.set_xlabel(f"channel ({look.fft}-point FFT per coarse channel{unit})", fontsize=8)
    ax.set_ylabel("power", fontsize=8)
    ax.annotate(f"peak: channel {peak}", (peak, look.bandpass[peak]), fontsize=7,
                xytext=(5, -10), textcoords="offset points", color="tab:red")


def draw_power(ax, look):
    ax.set_title(f"{look.label}: power", fontsize=9)
    if look.power is None or not len(look.power):
        empty_panel(ax, look.note or "no valid frames")
        return
    ax.plot(look.power_t, look.power, ".", ms=2)
    ax.set_xlabel("seconds since the run's first frame", fontsize=8)
    ax.set_ylabel("mean power per sample", fontsize=8)


def draw_losses(ax, looks, t_end):
    """One row per stream: every listed gap as a bar where it was."""
    for row, look in enumerate(looks):
        for gap in look.losses:
            if gap["start_s"] is None:
                continue
            width = max(gap["end_s"] - gap["start_s"], t_end * 0.002)
            ax.broken_barh([(gap["start_s"], width)], (row - 0.4, 0.8),
                           color=LOSS_COLOURS[gap["reason"]])
    ax.set_yticks(range(len(looks)), [lk.label for lk in looks], fontsize=7)
    ax.set_ylim(len(looks) - 0.4, -0.6)  # first stream at the top, as in the table
    ax.set_xlim(0, max(t_end, 1e-6))
    ax.set_xlabel("seconds since the run's first frame", fontsize=8)
    from matplotlib.patches import Patch
    handles = [Patch(color=c, label=r.replace("_", " ")) for r, c in LOSS_COLOURS.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("loss timeline (manifest gaps, write errors, storage lost)", fontsize=9)


def antenna_page(plt, name, looks, t_end, path):
    fig, axes = plt.subplots(len(looks), 3, figsize=(16, 3.2 * len(looks)), squeeze=False)
    for row, look in enumerate(looks):
        draw_bandpass(axes[row][0], look)
        draw_power(axes[row][1], look)
        draw_losses(axes[row][2], [look], t_end)
    fig.suptitle(f"antenna {name}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def summary_text(manifest, anchor, t_end):
    lines = [f"run {manifest.get('run')}   state {manifest.get('state')}   "
             f"backend {manifest.get('backend')}   host {manifest.get('host')}   "
             f"rocecapd {manifest.get('version')}",
             f"started {manifest.get('started')}   stopped {manifest.get('stopped')}   "
             f"first frame {utc(anchor) if anchor else '-'}   span {t_end:.3f} s",
             f"{'stream':34} {'packets':>12} {'lost':>9} {'dup':>7} {'late':>7} "
             f"{'invalid':>8} {'write err':>9}"]
    for s in manifest.get("streams", []):
        we = sum(f.get("frames", 0) for f in (s.get("write_error_lost") or {}).values()
                 if isinstance(f, dict))
        lines.append(f"{stream_label(s):34} {s.get('packets', 0):>12} {s.get('lost', 0):>9} "
                     f"{s.get('duplicate', 0):>7} {s.get('late', 0):>7} "
                     f"{s.get('invalid', 0):>8} {we:>9}")
    return "\n".join(lines)


def summary_page(plt, np, manifest, looks, anchor, t_end, path):
    n = len(looks)
    heights = [0.6 + 0.16 * n, 3.2, 2.6, 0.8 + 0.3 * n]  # inches: table, bandpass, power, losses
    fig = plt.figure(figsize=(16, sum(heights) + 1))
    grid = fig.add_gridspec(4, 1, height_ratios=heights)
    top = fig.add_subplot(grid[0])
    top.axis("off")
    top.text(0, 1, summary_text(manifest, anchor, t_end), family="monospace", fontsize=8,
             va="top")
    bp = fig.add_subplot(grid[1])
    for look in looks:
        if look.bandpass is not None:
            bp.semilogy(look.bandpass / np.median(look.bandpass), lw=0.7, label=look.label)
    bp.set_title("bandpass of every stream (each divided by its median)", fontsize=9)
    bp.set_xlabel("channel", fontsize=8)
    if any(lk.bandpass is not None for lk in looks):
        bp.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    pw = fig.add_subplot(grid[2])
    for look in looks:
        if look.power is not None and len(look.power):
            pw.plot(look.power_t, look.power, ".", ms=2, label=look.label)
    pw.set_title("mean power per sample of every stream", fontsize=9)
    pw.set_xlim(0, max(t_end, 1e-6))
    pw.set_xlabel("seconds since the run's first frame", fontsize=8)
    draw_losses(fig.add_subplot(grid[3]), looks, t_end)
    fig.suptitle(f"rocecap quick look: {manifest.get('run')}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---- main ------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description="PNG quick look of a rocecapd run.")
    p.add_argument("run_dir", help="the run directory (or its manifest.json)")
    p.add_argument("--out", help="directory for the PNGs (default: ./quicklook-<run>)")
    p.add_argument("--fft", type=int, default=256, help="FFT channels per coarse channel")
    p.add_argument("--start", type=float, default=0.0,
                   help="bandpass span start, seconds after the stream's first frame read")
    p.add_argument("--span", type=float, default=0.0, help="bandpass span, seconds (0: all)")
    p.add_argument("--max-frames", type=int, default=512, help="frames read per stream")
    args = p.parse_args(argv)
    if args.fft < 1 or args.max_frames < 1 or args.span < 0 or args.start < 0:
        p.error("--fft and --max-frames must be at least 1, --start and --span at least 0")
    return args


def run_span(manifest):
    """Unix time of the run's first frame and seconds to its last, over every stream."""
    firsts = [s["first_frame"]["unix_ns"] for s in manifest["streams"] if s.get("first_frame")]
    lasts = [s["last_frame"]["unix_ns"] for s in manifest["streams"] if s.get("last_frame")]
    if not firsts:
        return 0.0, 0.0
    return min(firsts) / 1e9, (max(lasts) - min(firsts)) / 1e9


def main(argv):
    args = parse_args(argv)
    import_plotting()
    import numpy as np
    import matplotlib.pyplot as plt
    try:
        manifest, run_dir = load_manifest(args.run_dir)
    except RunError as e:
        fail(str(e), 1)
    out = args.out or f"quicklook-{manifest.get('run', 'run')}"
    os.makedirs(out, exist_ok=True)
    anchor, t_end = run_span(manifest)
    dirs, problems = target_dirs(manifest, run_dir), []
    looks = [StreamLook(np, manifest, s, dirs, args, anchor, problems)
             for s in manifest["streams"]]
    pages = {}
    for look in looks:
        pages.setdefault(look.stream.get("antenna", "?"), []).append(look)
    written = []
    for name, group in pages.items():
        path = os.path.join(out, f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png")
        antenna_page(plt, name, group, t_end, path)
        written.append(path)
    summary = os.path.join(out, "summary.png")
    summary_page(plt, np, manifest, looks, anchor, t_end, summary)
    written.append(summary)
    report = dict(run=manifest.get("run"), first_frame_unix=anchor, span_s=t_end,
                  images=written, problems=problems,
                  streams=[lk.summary(np) for lk in looks])
    with open(os.path.join(out, "quicklook.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    for path in written:
        print(path)
    for p in problems:
        print(f"{PROG}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="rocecap-quicklook-") as cache:
        # matplotlib keeps its font cache in the home directory; a service account's home
        # (/var/lib/rocecap) may not be writable, and matplotlib would warn about it on every run.
        if "MPLCONFIGDIR" not in os.environ and not os.access(os.path.expanduser("~"), os.W_OK):
            os.environ["MPLCONFIGDIR"] = cache
        sys.exit(main(sys.argv[1:]))
