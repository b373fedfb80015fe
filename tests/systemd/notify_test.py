#!/usr/bin/env python3
"""rocecapd speaks the systemd notification protocol, read as systemd reads it.

A NOTIFY_SOCKET datagram socket is bound; rocecapd replays ~5 s of `rocecap gen` traffic at
recorded pace with WATCHDOG_USEC=1 s. It must send EXTEND_TIMEOUT_USEC then READY=1 first, STATUS= lines naming its
streams, WATCHDOG=1 pings while capturing, and STOPPING=1 when the replay ends, then exit 0.

usage: notify_test.py ROCECAPD ROCECAP
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CONFIG = """run: {{name: notify}}
capture:
  backend: pcap-file
  pcap_file: {pcap}
  replay_pace: recorded
  interfaces:
    - {{name: rec0, groups: [239.17.0.1:36001]}}
streams:
  format: codif
  antennas:
    - {{name: ant1, source: 192.0.2.11}}
    - {{name: ant2, source: 192.0.2.12}}
output:
  directory: {out}
  formats: [codifhdr]
metrics: {{enabled: false}}
"""


def main(rocecapd, rocecap):
    work = tempfile.mkdtemp(prefix="rocecap-notify-test.")
    ok = False
    try:
        pcap = os.path.join(work, "sent.pcap")
        subprocess.run([rocecap, "gen", "--groups", "239.17.0.1:36001", "--sources",
                        "192.0.2.11,192.0.2.12", "--duration", "5", "--rate", "1000",
                        "--payload-bytes", "1024", "--pcap", pcap,
                        "--summary", os.path.join(work, "summary.json")],
                       check=True, stdout=subprocess.DEVNULL)
        config = os.path.join(work, "run.yaml")
        with open(config, "w") as f:
            f.write(CONFIG.format(pcap=pcap, out=os.path.join(work, "out")))
        sock_path = os.path.join(work, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        sock.settimeout(0.2)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="1000000")
        env.pop("WATCHDOG_PID", None)
        log = open(os.path.join(work, "rocecapd.log"), "w")
        proc = subprocess.Popen([rocecapd, "--config", config], env=env, stderr=log)
        messages = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                messages.append(sock.recv(4096).decode())
            except socket.timeout:
                if proc.poll() is not None:
                    break
        if proc.poll() is None:
            proc.kill()
        rc = proc.wait()
        problems = check(messages, rc)
        for p in problems:
            print("FAIL:", p)
        if problems:
            print("messages:", messages)
            with open(os.path.join(work, "rocecapd.log")) as f:
                print(f.read())
        else:
            pings = sum(m == "WATCHDOG=1" for m in messages)
            print(f"PASS: {len(messages)} notifications, {pings} watchdog pings")
        ok = not problems
        return 0 if ok else 1
    finally:
        if ok:
            shutil.rmtree(work)
        else:
            print("kept", work)


def check(messages, rc):
    problems = []
    if rc != 0:
        problems.append(f"rocecapd exited {rc}")
    # Start-up asks for more time first (EXTEND_TIMEOUT_USEC), then READY=1 once capturing.
    if not messages or not messages[0].startswith("EXTEND_TIMEOUT_USEC=120000000\n"):
        problems.append("the first notification is not EXTEND_TIMEOUT_USEC=120000000")
    if len(messages) < 2 or not messages[1].startswith("READY=1\n"):
        problems.append("READY=1 is not the notification after EXTEND_TIMEOUT_USEC")
    if not any(m.startswith("STATUS=capturing 2 streams: ") for m in messages):
        problems.append("no STATUS= naming the 2 streams")
    pings = sum(m == "WATCHDOG=1" for m in messages)
    if pings < 6:  # ~5 s of capture with a ping due every 0.5 s
        problems.append(f"only {pings} WATCHDOG=1 pings")
    if not messages or messages[-1] != "STOPPING=1\nSTATUS=stopping: capture ended":
        problems.append("the last notification is not STOPPING=1 with the reason")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
