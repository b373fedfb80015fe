#!/usr/bin/env python3
"""Stops one thread of a process (found by its name) for a while, leaving the others running.

PTRACE_SEIZE + PTRACE_INTERRUPT stop only the seized thread (no group stop, unlike SIGSTOP),
so a test can stall rocecapd's writer while its capture thread and the NIC keep going.
usage: freeze_thread.py PID THREAD_NAME SECONDS
"""
import ctypes
import os
import sys
import time

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) != 0:
        sys.exit(f"ptrace({req}, {tid}): {os.strerror(ctypes.get_errno())}")


def find_thread(pid, name):
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            if f.read().strip() == name:
                return int(tid)
    sys.exit(f"no thread {name!r} in process {pid}")


def main():
    pid, name, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    tid = find_thread(pid, name)
    ptrace(PTRACE_SEIZE, tid)
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, os.__dict__.get("WALL", 0x40000000))
    print(f"thread {name} ({tid}) stopped for {seconds} s", flush=True)
    time.sleep(seconds)
    ptrace(PTRACE_DETACH, tid)


if __name__ == "__main__":
    main()
