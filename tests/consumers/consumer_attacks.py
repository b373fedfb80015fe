#!/usr/bin/python3
"""Hostile and broken clients against a running rocecapd's consumer socket (the security test).

    consumer_attacks.py --socket PATH --pid ROCECAPD_PID --offered NAME --not-offered NAME
                        --max-consumers N --out JSON

Each attack is a fresh connection speaking SOCK_SEQPACKET directly (no client library):
garbage and malformed hellos (must get `error ...`), closing mid-handshake, a hello for a
stream not in consumers.streams (`error ... not offered`), oversized messages (before and
after attaching), 1000 connections at once kept open (beyond max_consumers: `error busy`), an
attached client that tries mmap(PROT_WRITE, MAP_SHARED), write() and ftruncate() on every
descriptor it was given and sends descriptors and bogus acks to rocecapd, and connections that
never say hello (dropped at the hello deadline). Finally rocecapd's open descriptors must be
back to what they were (no descriptor leaked or kept).

Writes JSON: {"refused_expected": N, "checks": [...], "failures": [...], "notes": [...]}.
Exit 0 when no check failed.
"""

import argparse
import errno
import json
import mmap
import os
import resource
import select
import subprocess
import socket
import sys
import time

failures, checks, notes = [], [], []
refused_expected = 0


def ok(cond, text):
    (checks if cond else failures).append(text)
    if not cond:
        print(f"FAIL: {text}")
    return cond


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    return s


def receive(s, timeout=3.0):
    """(text, fds) of the next message; ("", []) when closed; None on timeout."""
    poller = select.poll()  # not select(): the flood's descriptors pass FD_SETSIZE
    poller.register(s, select.POLLIN)
    if not poller.poll(timeout * 1000):
        return None
    try:
        data, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(4 * 16))
    except (ConnectionResetError, BrokenPipeError):
        return "", []
    fds = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            n = len(payload) // 4
            fds += list(int.from_bytes(payload[4 * i:4 * i + 4], "little", signed=True)
                        for i in range(n))
    return data.decode("ascii", "replace"), fds


def closed_after(s, timeout=3.0):
    r = receive(s, timeout)
    return r is not None and r[0] == ""


def expect_error(name, message, want, counted=True):
    """Sends message on a new connection; rocecapd must answer `error ...want...` and close."""
    global refused_expected
    s = connect(ARGS.socket)
    try:
        s.send(message)
        r = receive(s)
        text = r[0] if r else None
        good = text is not None and text.startswith("error") and want in text
        ok(good, f"{name}: answered {text!r}, expected an error naming {want!r}")
        ok(closed_after(s), f"{name}: rocecapd closed the connection after the error")
        if good and counted:
            refused_expected += 1
        return text
    finally:
        s.close()


def hello(streams, mode="lossy", name="attacker"):
    return f"hello version=1 mode={mode} streams={streams} name={name}".encode()


def attach(streams, mode="lossy", name="attacker"):
    """A raw attach: (socket, [(stream message, fds)], ready text)."""
    s = connect(ARGS.socket)
    s.send(hello(streams, mode, name))
    got = []
    while True:
        r = receive(s)
        if r is None or r[0] == "":
            raise RuntimeError(f"attach {streams}: no ready (got {got})")
        text, fds = r
        if text.startswith("ready"):
            return s, got, text
        if not text.startswith("stream"):
            raise RuntimeError(f"attach {streams}: {text!r}")
        got.append((text, fds))


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd")) if pid else 0


def garbage():
    expect_error("binary garbage", bytes(range(256)) * 4, "malformed")
    expect_error("empty hello", b"hello", "hello needs")
    expect_error("wrong version", b"hello version=2 mode=lossy streams=all", "version")
    expect_error("bad mode", b"hello version=1 mode=eager streams=all", "mode")
    expect_error("no key=value", b"hello version=1 lossy", "malformed")
    expect_error("bad stream name", b"hello version=1 mode=lossy streams=../../etc/passwd%", "malformed")
    expect_error("name too long", hello("all", name="x" * 200), "name")
    expect_error("5000 streams", b"hello version=1 mode=lossy streams=" +
                 b",".join(b"a%d" % i for i in range(5000))[:4000], "not offered")
    expect_error("not ASCII", "hello version=1 mode=lossy streams=ant\u00e9".encode(), "malformed")
    expect_error("NUL in hello", b"hello version=1\x00 mode=lossy streams=all", "")


def mid_handshake():
    # Connect and close at once; hello and close before reading the stream messages; hello and
    # close after reading one stream message: rocecapd must shrug each off.
    for _ in range(20):
        connect(ARGS.socket).close()
    for _ in range(20):
        s = connect(ARGS.socket)
        s.send(hello(ARGS.offered))
        s.close()
    for _ in range(5):
        s = connect(ARGS.socket)
        s.send(hello("all"))
        r = receive(s)
        if r:
            for fd in r[1]:
                os.close(fd)
        s.close()
    checks.append("closing mid-handshake: 45 connections")


def not_offered():
    expect_error("stream not offered", hello(ARGS.not_offered), "not offered")
    antenna = ARGS.not_offered.split("@")[0]
    if antenna not in ARGS.offered:
        expect_error("antenna not offered", hello(antenna), "not offered")
    expect_error("unknown stream", hello("ant9@239.1.1.1:1"), "not offered")


def oversized():
    for size in (4097, 65536):
        s = connect(ARGS.socket)
        try:
            s.send(b"hello version=1 mode=lossy streams=all " + b"x" * (size - 39))
            r = receive(s)
            ok(r is not None and r[0].startswith("error") and "longer" in r[0],
               f"oversized hello of {size} bytes: answered {r and r[0]!r}")
            ok(closed_after(s), f"oversized hello of {size} bytes: connection closed")
        finally:
            s.close()
    # Attached, then an oversized ack: the consumer is dropped.
    s, streams, _ = attach(ARGS.offered, name="oversize")
    for _, fds in streams:
        for fd in fds:
            os.close(fd)
    s.send(b"ack " + b"9" * 5000)
    r = receive(s)
    ok(r is not None and (r[0] == "" or r[0].startswith("error")),
       f"oversized ack after attaching: answered {r and r[0]!r}, expected an error and close")
    s.close()


def read_only_memory():
    s, streams, ready = attach(ARGS.offered, name="writer")
    ok(len(streams) >= 1, f"attached for the write attempts ({ready})")
    tried = 0
    for text, fds in streams:
        for k, fd in enumerate(fds):
            size = os.fstat(fd).st_size
            if size == 0:
                continue
            tried += 1
            try:
                m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
                m.close()
                ok(False, f"mmap(PROT_WRITE, MAP_SHARED) of descriptor {k} of {text!r} succeeded")
            except OSError as e:
                ok(e.errno == errno.EACCES, f"mmap(PROT_WRITE, MAP_SHARED) of descriptor {k}: "
                   f"{os.strerror(e.errno)} (expected EACCES)")
            try:
                os.write(fd, b"x")
                ok(False, f"write() to descriptor {k} of {text!r} succeeded")
            except OSError as e:
                ok(e.errno == errno.EBADF, f"write() to descriptor {k}: {os.strerror(e.errno)}")
            try:
                os.ftruncate(fd, 0)
                ok(False, f"ftruncate() of descriptor {k} of {text!r} succeeded")
            except OSError as e:
                ok(e.errno in (errno.EBADF, errno.EINVAL), f"ftruncate() of descriptor {k}: "
                   f"{os.strerror(e.errno)}")
    ok(tried >= 3, f"{tried} descriptors tried for writing")
    # Descriptors sent to rocecapd (it must discard them) and bogus acks: ignored.
    r, w = os.pipe()
    for _ in range(200):
        s.sendmsg([b"ack 0 1 1 1 1\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                         r.to_bytes(4, "little") + w.to_bytes(4, "little"))])
    for line in (b"ack 999999 1 2 3 4", b"ack 0 18446744073709551615 0 0 18446744073709551615",
                 b"ack -1 -1 -1 -1 -1", b"ack 0 99999999999999999999999 1 1 1", b"\n" * 4000,
                 b"detached please", b"hello version=1 mode=lossy streams=all"):
        s.send(line)
    os.close(r)
    os.close(w)
    time.sleep(0.2)
    ok(receive(s, 0.2) is None, "an attached client's descriptors, bogus acks and a second hello "
       "are ignored (the connection stays)")
    for _, fds in streams:
        for fd in fds:
            os.close(fd)
    s.close()
    # Descriptors sent with a hello: refused or attached, never kept.
    s = connect(ARGS.socket)
    r, w = os.pipe()
    s.sendmsg([hello(ARGS.offered, name="fds")], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                   r.to_bytes(4, "little"))])
    os.close(r)
    os.close(w)
    while True:
        got = receive(s)
        if got is None or got[0] == "" or got[0].startswith("ready"):
            break
        for fd in got[1]:
            os.close(fd)
    s.close()


def reopen():
    """Re-opening a received descriptor through /proc/self/fd for writing must fail too (the
    memory's inode must not grant write to the consumer). Meaningful only when not root."""
    s, streams, _ = attach(ARGS.offered, name="reopen")
    for text, fds in streams:
        for k, fd in enumerate(fds):
            try:
                w = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
                os.close(w)
                ok(False, f"descriptor {k} of {text.split()[2]} re-opened O_RDWR through "
                   f"/proc/self/fd by uid {os.getuid()} gid {os.getgid()}: the consumer can "
                   "write rocecapd's ring memory")
            except OSError as e:
                ok(e.errno == errno.EACCES, f"re-opening descriptor {k} O_RDWR: "
                   f"{os.strerror(e.errno)}")
            os.close(fd)
    s.close()


def flood(count=1000):
    global refused_expected
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, 4 * count + 256)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    except (ValueError, OSError) as e:
        notes.append(f"could not raise RLIMIT_NOFILE to {want}: {e}")
    socks = []
    for _ in range(count):
        socks.append(connect(ARGS.socket))
    for s in socks:
        try:
            s.send(hello(ARGS.offered, name="flood"))
        except OSError:
            pass
    busy = attached = closed = other = 0
    pending = {s.fileno(): s for s in socks}
    state = {}
    end = time.monotonic() + 10
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLIN)
    while pending and time.monotonic() < end:
        for fd, _ in poller.poll(200):
            s = pending.get(fd)
            if s is None:
                continue
            r = receive(s, 0)
            if r is None:
                continue
            text, fds = r
            for passed in fds:
                os.close(passed)
            if text.startswith("stream"):
                continue  # an attach in progress: its ready follows
            poller.unregister(fd)
            if text.startswith("error busy"):
                state[s.fileno()] = "busy"
                del pending[s.fileno()]
            elif text.startswith("ready"):
                state[s.fileno()] = "attached"
                del pending[s.fileno()]
            elif text == "" or text.startswith("error"):
                state[s.fileno()] = "closed:" + text
                del pending[s.fileno()]
    for v in state.values():
        if v == "busy":
            busy += 1
        elif v == "attached":
            attached += 1
        elif v.startswith("closed"):
            closed += 1
    other = count - busy - attached - closed
    refused_expected += busy
    room = ARGS.max_consumers - 1  # the well-behaved consumer holds one place
    ok(attached <= room, f"{count} connections at once: {attached} attached, at most {room}")
    ok(attached >= 1, f"{count} connections at once: {attached} attached (expected some)")
    ok(busy >= count - room and busy + attached == count,
       f"{count} connections at once: {busy} told `error busy`, {attached} attached, "
       f"{closed} closed otherwise, {other} unanswered (expected busy = {count} - attached)")
    print(f"flood: {busy} busy, {attached} attached, {closed} closed, {other} unanswered")
    for s in socks:
        s.close()
    time.sleep(0.5)  # rocecapd notices the closes before the next attack connects


def queued_hello():
    """Refused at accept with its hello already queued: the client must read "error busy".

    With rocecapd's consumer thread stopped (ptrace, tests/integration/freeze_thread.py), 64
    silent connections fill the places of connections owing their hello, then 20 more connect
    and send their hello at once. When the thread runs again it accepts them all and refuses the
    20 at accept. Closing a unix socket with unread data resets the peer (Linux
    unix_release_sock), and a SOCK_SEQPACKET receive reports that reset before the queued
    message: a daemon that closed at once would leave these clients without the reason.
    """
    global refused_expected
    if not ARGS.pid:
        notes.append("queued_hello: no --pid, not run")
        return
    freeze = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                          "freeze_thread.py")
    frozen = subprocess.Popen([sys.executable, freeze, str(ARGS.pid), "rc-consumers", "1.5"],
                              stdout=subprocess.PIPE, text=True)
    if "stopped" not in frozen.stdout.readline():
        frozen.wait()
        ok(False, "queued_hello: could not stop rocecapd's consumer thread")
        return
    silent_socks = [connect(ARGS.socket) for _ in range(64)]
    late = [connect(ARGS.socket) for _ in range(20)]
    for s in late:
        s.send(hello(ARGS.offered, name="queued"))
    frozen.wait()
    answers = [receive(s, 5.0) for s in late]
    busy = sum(1 for r in answers if r is not None and r[0].startswith("error busy"))
    shown = sorted({("reset/closed" if r and r[0] == "" else repr(r and r[0][:40])) for r in answers})
    ok(busy == len(late), f"queued_hello: {busy} of {len(late)} refused clients whose hello was "
       f"already queued read `error busy` (others: {shown})")
    refused_expected += len(late)
    for s in silent_socks + late:
        s.close()
    time.sleep(0.5)  # rocecapd notices the closes before the next attack connects


def silent():
    """Connections that never say hello: dropped at the hello deadline (counted refused)."""
    global refused_expected
    socks = [connect(ARGS.socket) for _ in range(5)]
    start = time.monotonic()
    for s in socks:
        r = receive(s, 6.0)
        ok(r is not None and r[0] == "", f"a silent connection was closed at the hello deadline "
           f"(after {time.monotonic() - start:.1f} s; got {r and r[0]!r})")
        s.close()
    refused_expected += len(socks)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--socket", required=True)
    p.add_argument("--pid", type=int, required=True, help="rocecapd's; 0: no descriptor count")
    p.add_argument("--offered", required=True)
    p.add_argument("--not-offered", required=True)
    p.add_argument("--max-consumers", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--only", help="run this one attack (e.g. reopen)")
    ARGS = p.parse_args()
    fds_before = fd_count(ARGS.pid)
    start = time.monotonic()
    attacks = (garbage, mid_handshake, not_offered, oversized, read_only_memory, queued_hello,
               flood, silent)
    if ARGS.only:
        attacks = [globals()[ARGS.only]]
    for attack in attacks:
        t = time.monotonic()
        try:
            attack()
        except Exception as e:  # an attack that could not be carried out is a failure
            where = e.__traceback__
            while where.tb_next:
                where = where.tb_next
            ok(False, f"{attack.__name__}: {type(e).__name__}: {e} (line {where.tb_lineno})")
        print(f"{attack.__name__}: {time.monotonic() - t:.2f} s", file=sys.stderr)
    # rocecapd's descriptors: back to what they were once it noticed every close.
    fds_after = fd_count(ARGS.pid)
    for _ in range(30):
        if fds_after <= fds_before:
            break
        time.sleep(0.1)
        fds_after = fd_count(ARGS.pid)
    ok(fds_after <= fds_before, f"rocecapd holds {fds_after} descriptors after the attacks, "
       f"{fds_before} before")
    for n in notes:
        print(f"NOTE: {n}")
    with open(ARGS.out, "w") as f:
        json.dump({"refused_expected": refused_expected, "checks": checks, "failures": failures,
                   "notes": notes, "seconds": round(time.monotonic() - start, 2)}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
