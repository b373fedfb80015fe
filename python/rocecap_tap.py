#!/usr/bin/python3
"""rocecap_tap: copy one stream of a running rocecapd to a file, as the raw writer would.

    rocecap_tap.py --socket PATH --stream NAME --out FILE [--frames N] [--timeout S]
                   [--mode lossy|hold]

Writes every frame of the stream (fill frames included, in time order) to FILE from the moment
it connects until the stream ends or N frames were written. Frames the tap was too slow for are
not written (there is no fill for them); they are counted. At the end it prints
`frames=W missed=M fill=F` to stderr.

--timeout S bounds the whole run: if the stream has neither ended nor given N frames after S
seconds, the tap stops with an error (what was written stays in FILE).

Exit codes: 0 done, nothing missed; 1 error (the message names the socket or the file);
2 done, but frames were missed.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rocecap_consumer import Client, ConsumerError, Ended, Frame, Missed  # noqa: E402

PROG = "rocecap_tap"
REPORT_EVERY_S = 0.02   # progress/acks to rocecapd: often enough for hold mode's bound
IDLE_SLEEP_S = 0.0005   # poll interval when nothing is published
STALL_AFTER_LOSS_S = 5.0  # connection gone and nothing published for this long: give up


class TapError(Exception):
    """Ends the tap with exit code 1; the message names what failed."""


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="rocecapd's consumers socket")
    parser.add_argument("--stream", required=True,
                        help="one stream name, e.g. ant01@239.17.0.1:36001")
    parser.add_argument("--out", required=True, help="file to write the frames to")
    parser.add_argument("--frames", type=int, default=None, help="stop after N frames")
    parser.add_argument("--timeout", type=float, default=None,
                        help="give up after S seconds (error)")
    parser.add_argument("--mode", choices=("lossy", "hold"), default="lossy")
    args = parser.parse_args(argv)
    if args.frames is not None and args.frames < 0:
        parser.error("--frames must be >= 0")
    if args.timeout is not None and args.timeout <= 0:
        parser.error("--timeout must be > 0")
    return args


class Tally:
    """What the summary line reports, kept up to date so an error still reports it."""

    def __init__(self):
        self.written = self.fill = self.missed = 0


def tap(args, out, tally):
    """Copies frames to `out` until the stream ends or --frames; raises TapError."""
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    handshake_timeout = 10.0 if deadline is None else max(0.1, min(10.0, args.timeout))
    try:
        client = Client(args.socket, streams=[args.stream], mode=args.mode, name="tap",
                        timeout=handshake_timeout)
    except (ConsumerError, OSError, ValueError) as e:
        raise TapError(f"{args.socket}: {e}") from None
    with client:
        if len(client.streams) != 1:
            names = ", ".join(s.name for s in client.streams) or "none"
            raise TapError(f"{args.socket}: --stream {args.stream} selects "
                           f"{len(client.streams)} streams ({names}); name exactly one")
        stream = client.streams[0]
        if stream.payload_memory != "host":
            raise TapError(f"{args.socket}: stream {stream.name} keeps its payload in GPU "
                           "memory; the tap reads host memory only")
        last_report = time.monotonic()
        connection_told = False
        stalled_since = None
        last_published = stream.published
        while args.frames is None or tally.written < args.frames:
            event = stream.next()
            tally.missed = stream.frames_missed
            if isinstance(event, Frame):
                data = stream.frame_bytes(event)
                tally.missed = stream.frames_missed
                if data is None:
                    continue  # torn while copying: counted missed by the stream
                try:
                    out.write(data)
                except OSError as e:
                    raise TapError(f"{args.out}: {e.strerror or e}") from None
                tally.written += 1
                tally.fill += event.fill
                stream.done_with(event)
            elif isinstance(event, Missed):
                continue
            elif isinstance(event, Ended):
                break
            now = time.monotonic()
            if event is None or now - last_report >= REPORT_EVERY_S:
                if now - last_report >= REPORT_EVERY_S:
                    last_report = now
                    if not client.report() and not connection_told:
                        connection_told = True
                        print(f"{PROG}: {args.socket}: rocecapd dropped the connection: "
                              f"{client.detach_reason}; reading on without it", file=sys.stderr)
                if deadline is not None and now > deadline:
                    raise TapError(f"{args.socket}: timed out after {args.timeout} s "
                                   f"({tally.written} frames written)")
                if not client.connected:
                    published = stream.published
                    if published != last_published:
                        last_published, stalled_since = published, None
                    elif stalled_since is None:
                        stalled_since = now
                    elif now - stalled_since > STALL_AFTER_LOSS_S:
                        raise TapError(f"{args.socket}: connection lost and stream "
                                       f"{stream.name} stalled without ending")
            if event is None:
                time.sleep(IDLE_SLEEP_S)
        client.report()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    tally = Tally()
    status = 0
    try:
        try:
            out = open(args.out, "wb")
        except OSError as e:
            raise TapError(f"{args.out}: {e.strerror or e}") from None
        try:
            tap(args, out, tally)
        finally:
            try:
                out.close()
            except OSError as e:
                raise TapError(f"{args.out}: {e.strerror or e}") from None
    except TapError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 1
    print(f"frames={tally.written} missed={tally.missed} fill={tally.fill}", file=sys.stderr)
    if status == 0 and tally.missed:
        status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
