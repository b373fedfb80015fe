#!/usr/bin/python3
"""A hold-mode consumer that stops: reads and acknowledges --frames frames of each of its
streams, then neither reads nor acknowledges (nor sends anything) and waits for rocecapd to
detach it.

    hold_stall.py --socket PATH --streams NAME,... --frames N --out JSON [--timeout S]

Writes JSON: {"detached": REASON or null, "closed": bool, "stalled_at": {stream: position},
"seconds_to_detach": S}. Exit 0 when rocecapd said `detached REASON` within --timeout, else 1.
"""

import argparse
import json
import os
import select
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from rocecap_consumer import Client, Frame  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--socket", required=True)
    p.add_argument("--streams", required=True)
    p.add_argument("--frames", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            client = Client(args.socket, streams=args.streams, mode="hold", name="stall")
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    result = {"detached": None, "closed": False, "stalled_at": {}, "seconds_to_detach": None}
    with client:
        got = {s.name: 0 for s in client.streams}
        while any(n < args.frames for n in got.values()) and time.monotonic() < deadline:
            for s in client.streams:
                while got[s.name] < args.frames:
                    event = s.next()
                    if event is None:
                        break
                    if isinstance(event, Frame):
                        got[s.name] += 1
                        s.done_with(event)
            client.report()
            time.sleep(0.001)
        result["stalled_at"] = {s.name: s.ack_position for s in client.streams}
        stalled = time.monotonic()
        # From now on nothing is read or sent: only rocecapd's messages are looked at.
        sock = client._sock  # noqa: SLF001 (a test looks at the raw connection)
        while time.monotonic() < deadline:
            ready, _, _ = select.select([sock], [], [], 0.1)
            if not ready:
                continue
            data = sock.recv(4096)
            if not data:
                result["closed"] = True
                break
            text = data.decode("ascii", "replace").strip()
            if text.startswith("detached"):
                result["detached"] = text[len("detached"):].strip()
                result["seconds_to_detach"] = round(time.monotonic() - stalled, 3)
                # rocecapd closes the connection after telling us.
                ready, _, _ = select.select([sock], [], [], 2.0)
                result["closed"] = bool(ready) and sock.recv(4096) == b""
                break
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"hold_stall: {result}", file=sys.stderr)
    return 0 if result["detached"] else 1


if __name__ == "__main__":
    sys.exit(main())
