#!/usr/bin/python3
"""A consumer for the end-to-end tests: reads streams of a running rocecapd with
python/rocecap_consumer.py and writes each stream's frames, in the order they came, to
DIR/<stream name with '/' and ':' replaced by '_'>.bin (the bytes the raw file holds).

    python_all_streams.py --socket PATH --dir DIR [--streams all|NAME,...] [--mode lossy|hold]
                          [--name WORD] [--timeout S] [--sleep S] [--index] [--summary FILE]

--streams all (default) asks for every stream the socket offers. --sleep S sleeps S seconds
after every frame (a deliberately slow consumer). --index also writes DIR/<stream>.idx: the
frame index (decimal) of every frame written, one a line, in the same order as the .bin file.
--summary FILE writes JSON: {stream name: {read, missed, fill, written, ended, index}}.

Connecting is retried until the socket answers (within --timeout). Ends when every stream
ended; exit 0 then, 1 on an error, a detach or the timeout (the summary is written anyway).
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from rocecap_consumer import Client, ConsumerError, Ended, Frame, Missed  # noqa: E402


CLOSED = "rocecapd closed the connection"  # Client.detach_reason when rocecapd just closed


def file_name(stream_name):
    return stream_name.replace("/", "_").replace(":", "_")


def connect(args, deadline):
    streams = None if args.streams == "all" else args.streams
    while True:
        try:
            return Client(args.socket, streams=streams, mode=args.mode, name=args.name,
                          timeout=max(0.5, min(10.0, deadline - time.monotonic())))
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--socket", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--streams", default="all")
    p.add_argument("--mode", choices=("lossy", "hold"), default="lossy")
    p.add_argument("--name", default="pyall")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--index", action="store_true")
    p.add_argument("--summary")
    args = p.parse_args()

    deadline = time.monotonic() + args.timeout
    os.makedirs(args.dir, exist_ok=True)
    status, why = 0, ""
    totals = {}
    try:
        client = connect(args, deadline)
    except (ConsumerError, OSError) as e:
        print(f"python_all_streams: {args.socket}: {e}", file=sys.stderr)
        return 1
    with client:
        streams = client.streams
        outs = [open(os.path.join(args.dir, file_name(s.name) + ".bin"), "wb") for s in streams]
        idxs = [open(os.path.join(args.dir, file_name(s.name) + ".idx"), "w") if args.index
                else None for s in streams]
        for s in streams:
            totals[s.name] = {"read": 0, "missed": 0, "fill": 0, "written": 0, "torn": 0,
                              "ended": False, "index": s.index}
        last_report = 0.0
        try:
            while not all(totals[s.name]["ended"] for s in streams):
                busy = False
                for k, s in enumerate(streams):
                    t = totals[s.name]
                    for _ in range(256):  # a bounded batch per stream
                        if t["ended"]:
                            break
                        event = s.next()
                        if event is None:
                            break
                        busy = True
                        if isinstance(event, Ended):
                            t["ended"] = True
                        elif isinstance(event, Missed):
                            pass  # counted by the stream
                        elif isinstance(event, Frame):
                            data = s.frame_bytes(event)
                            if data is None:
                                t["torn"] += 1  # counted missed by the stream
                                continue
                            outs[k].write(data)
                            if idxs[k] is not None:
                                idxs[k].write(f"{event.frame_index}\n")
                            t["written"] += 1
                            t["fill"] += int(event.fill)
                            s.done_with(event)
                            if args.sleep:
                                time.sleep(args.sleep)
                                break  # report often while slow
                now = time.monotonic()
                if client.connected and now - last_report > 0.005:
                    last_report = now
                    if not client.report() and client.detach_reason != CLOSED:
                        status, why = 1, f"rocecapd dropped us: {client.detach_reason}"
                        break
                    # Closed (rocecapd ends its run): the mappings stay; read on to the end.
                if now > deadline:
                    status, why = 1, f"timed out after {args.timeout} s"
                    break
                if not busy:
                    time.sleep(0.0005)
            if client.connected:
                client.report()
        finally:
            for f in outs + [i for i in idxs if i is not None]:
                f.close()
            for s in streams:
                totals[s.name]["read"] = s.frames_read
                totals[s.name]["missed"] = s.frames_missed
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(totals, f, indent=1, sort_keys=True)
    for name, t in sorted(totals.items()):
        print(f"{name}: written={t['written']} read={t['read']} missed={t['missed']} "
              f"fill={t['fill']} ended={t['ended']}", file=sys.stderr)
    if status:
        print(f"python_all_streams: {why}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
