#!/usr/bin/env python3
"""Inclusive instruction counts from a callgrind output file, for bench/verbs_capture_bench.sh.

Prints one line per function whose name contains one of the given substrings (its inclusive
Ir: own cost plus the calls it made), and `foreign=<Ir>`: the inclusive cost of every call from
code outside OBJECT into code of OBJECT (a shared library whose path contains OBJECT), i.e.
what the profiled code spent inside that library, including what the library itself called.
Usage: callgrind_split.py <callgrind.out> <object-substring> <function-substring>...
"""
import re
import sys


def parse(path, obj_sub, fn_subs):
    names = {}  # (kind, id) -> name, for callgrind's name compression
    incl = {s: 0 for s in fn_subs}
    foreign = 0
    ob = fn = cob = cfn = None
    after_calls = False

    def name(kind, value):
        m = re.match(r"\((\d+)\)\s*(.*)", value)
        if not m:
            return value
        key = (kind, m.group(1))
        if m.group(2):
            names[key] = m.group(2)
        return names.get(key, "")

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            head, _, value = line.partition("=")
            if head in ("ob", "fn", "cob", "cfn", "cfi", "cfl", "fl", "fi", "fe") and _:
                kind = {"cob": "ob", "cfn": "fn", "cfi": "fl", "cfl": "fl", "fi": "fl", "fe": "fl"}.get(head, head)
                v = name(kind, value)
                if head == "ob":
                    ob = v
                elif head == "fn":
                    fn, cob, cfn = v, None, None
                elif head == "cob":
                    cob = v
                elif head == "cfn":
                    cfn = v
                continue
            if head == "calls" and _:
                after_calls = True
                continue
            if not (line[0].isdigit() or line[0] in "+-*"):
                continue
            cost = int(line.split()[-1])
            for s in fn_subs:
                if fn and s in fn:
                    incl[s] += cost
            if after_calls:
                callee_ob = cob if cob is not None else ob
                if obj_sub in (callee_ob or "") and obj_sub not in (ob or ""):
                    foreign += cost
                after_calls = False
                cob = None  # cob/cfn apply to one call
    return incl, foreign


def main():
    path, obj_sub, *fn_subs = sys.argv[1:]
    incl, foreign = parse(path, obj_sub, fn_subs)
    for s in fn_subs:
        print(f"{s}={incl[s]}")
    print(f"foreign={foreign}")


if __name__ == "__main__":
    main()
