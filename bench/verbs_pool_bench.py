#!/usr/bin/env python3
"""End to end through the verbs synthetic wire (issue 12): rocecapd as shipped (VerbsSource ->
Ingest -> rings -> writer pool) on softverbs' synthetic wire, paced by SOFTVERBS_WIRE_PACE, at a
ladder of frame rates; each rate run with the writer pool writing raw files to a target
("pool") and writer-less ("none": `formats: []` with a one-frame retention, so the writer
threads release every slot without writing: the capture-only figure), alternated A B per rate
and round. Per run: frames sent (the wire's bound), delivered (manifest packets), ring-full
drops, NIC drops (out_of_buffer: on the verbs path a slot goes back to the receive queue only
when the writer releases it, so a writer that falls behind shows here), other loss (sent minus
all of those), CPU seconds of the writer threads (rc-writer*) and of the capture thread
(rc-cap-*) from /proc/PID/task/*/schedstat, and the achieved rate (frames sent over the time
between rocecapd's "capturing" and "stopping" log lines; a loss-free run stops at its last
frame, one with loss at run.duration, so it is shown only for loss-free runs: a rung counts
only where the wire reached its rate). A mode stops climbing the ladder at its first rate with loss in a round.
Then, per mode, the highest rate at which every round lost nothing.

usage: verbs_pool_bench.py BUILD TARGET_DIR [--rates 2500,5000,...] [--streams 6] [--seconds 2]
       [--rounds 2] [--batch 64] [--writer-threads 1] [--poll-mode busy_poll|event] [--json F]
       (as root: raw QPs need CAP_NET_RAW; a network namespace of its own for the interface)
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def config(out, streams, frames_total, duration, mode, writer_threads, poll_mode):
    sources = [f"192.0.2.{11 + i}" for i in range(streams)]
    lines = [
        "run:",
        "  name: pool",
        f"  duration: {duration}s",
        f"  packets: {frames_total}",
        "capture:",
        "  backend: verbs",
        f"  poll_mode: {poll_mode}",
        "  payload_memory: host",
        "  ring_depth: 4096",
        # Both modes: the default (sum of ring_depth) is 12 short of the writer-less rings,
        # which retention makes 2 slots longer, and rocecapd refuses that.
        "  cq_size: 32768",
        "  max_frame: 9216",
        "  interfaces:",
        "    - { name: wire, device: svw, groups: [239.17.0.1:36001] }",
        "streams:",
        "  format: codif",
        "  antennas:",
    ]
    lines += [f"    - {{ name: ant{i + 1}, source: {s} }}" for i, s in enumerate(sources)]
    lines += ["output:", f"  directory: {out}", f"  writer_threads: {writer_threads}"]
    if mode == "pool":
        lines += ["  formats: [raw]", "  rotate: 1GiB"]
    else:
        # Nothing written: the writer threads hand each slot to a one-frame retention, which
        # releases it (capture/retention.hpp). The ring gets 2 more slots than ring_depth.
        lines += ["  formats: []", "retention:", "  retain: 1s", "  frame_rate: 1",
                  "  pin_headroom: 1s"]
    lines += ["metrics:", "  enabled: false", "logging:", "  level: info"]
    return "\n".join(lines) + "\n"


def thread_cpu(pid):
    """{tid: (name, cpu seconds)} of a live process: each thread's time on a CPU in ns
    (/proc/PID/task/TID/schedstat, first field), its name from comm."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = (name, ns * 1e-9)
    return out


def run_one(args, mode, rate, work):
    frames = int(rate * args.seconds)
    total = frames * args.streams
    out = os.path.join(args.target, f"vpb-{os.getpid()}")
    sysfs = os.path.join(work, "sysfs")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(sysfs, ignore_errors=True)
    os.makedirs(sysfs)
    cfg = os.path.join(work, "run.yaml")
    with open(cfg, "w") as f:
        # Stops after the frames sent; a run that lost some stops at the duration.
        f.write(config(out, args.streams, total, int(args.seconds + 3), mode,
                       args.writer_threads, args.poll_mode))
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "softverbs/lib"),
               SOFTVERBS_DEVICES="svw=wire", SOFTVERBS_SYSFS_ROOT=sysfs,
               ROCECAP_SYSFS_ROOT=sysfs,
               SOFTVERBS_WIRE_PACE=f"rate={rate},frames={frames},batch={args.batch}")
    log = os.path.join(work, f"rocecapd-{mode}-{rate}.log")
    with open(log, "w") as logf:
        proc = subprocess.Popen(["ip", "netns", "exec", args.netns,
                                 os.path.join(args.build, "daemon/rocecapd"), "--config", cfg],
                                env=env, stderr=logf, stdout=logf)
        seen = {}
        while proc.poll() is None:
            for tid, v in thread_cpu(proc.pid).items():
                seen[tid] = v  # the last reading of each thread (they end before the process)
            time.sleep(0.02)
    rc = proc.returncode
    manifest = os.path.join(out, "pool", "manifest.json")
    if rc != 0 or not os.path.exists(manifest):
        sys.stderr.write(open(log).read())
        raise SystemExit(f"rocecapd {mode} at {rate}/s: exit {rc}, log {log}")
    m = json.load(open(manifest))
    delivered = sum(s["packets"] for s in m["streams"])
    ring_full = sum(i["ring_full_drops"] for i in m["interfaces"])
    nic = sum(i["nic_drops"] for i in m["interfaces"])
    rejected = sum(m.get("rejected", {}).values()) if isinstance(m.get("rejected"), dict) else 0
    written = sum(f.get("bytes", 0) for s in m["streams"] for f in s["files"])
    fill = sum(s["fill_frames"] for s in m["streams"])  # raw files fill lost frames with zeros
    cpu = lambda prefix: sum(c for n, c in seen.values() if n.startswith(prefix))
    shutil.rmtree(out, ignore_errors=True)
    if os.environ.get("VPB_SHOW_LOG"):
        sys.stderr.write(open(log).read())
    # The achieved rate: frames sent over rocecapd's own log times from "capturing" to
    # "stopping: capture ended" (the packet limit reached: the last frame counted).
    stamps = {}
    for line in open(log):
        for key in ("capturing", "stopping"):
            if key in line and key not in stamps:
                stamps[key] = datetime.datetime.fromisoformat(line.split()[0])
    wall = ((stamps["stopping"] - stamps["capturing"]).total_seconds()
            if len(stamps) == 2 else float("nan"))
    return {
        "mode": mode, "rate": rate, "sent": total, "delivered": delivered,
        "ring_full": ring_full, "nic_drops": nic, "rejected": rejected,
        "other_loss": total - delivered - ring_full - nic - rejected,
        "writer_cpu_s": cpu("rc-writer"), "capture_cpu_s": cpu("rc-cap"),
        "process_cpu_s": sum(c for _, c in seen.values()), "wall_s": wall,
        "achieved": total / wall if wall > 0 else 0.0, "written_bytes": written,
        "fill_frames": fill,
    }


def show(r):
    ns = lambda s: s * 1e9 / max(1, r["delivered"])
    print(f"{r['mode']:4} rate/stream={r['rate']:>6} sent={r['sent']:>7} "
          f"delivered={r['delivered']:>7} ring_full={r['ring_full']} nic_drops={r['nic_drops']} "
          f"other_loss={r['other_loss']} achieved="
          f"{format(r['achieved'], '.0f') + '/s' if r['sent'] == r['delivered'] else '-'} "
          f"writer_cpu={r['writer_cpu_s']:.2f}s ({ns(r['writer_cpu_s']):.0f} ns/frame) "
          f"capture_cpu={r['capture_cpu_s']:.2f}s process_cpu={r['process_cpu_s']:.2f}s "
          f"written={r['written_bytes'] / 1e6:.0f}MB fill_frames={r['fill_frames']}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("target")
    p.add_argument("--rates", default="2500,5000,10000,20000,40000,80000,160000,320000,640000",
                   help="frames/s per stream")
    p.add_argument("--streams", type=int, default=6)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--writer-threads", type=int, default=1)
    p.add_argument("--poll-mode", default="busy_poll", choices=("busy_poll", "event"))
    p.add_argument("--json", help="write every run's figures here")
    args = p.parse_args()
    args.build = os.path.realpath(args.build)
    rates = [int(x) for x in args.rates.split(",")]
    results = []
    # rocecapd joins its groups on the configured interface (as on hardware, for the switch):
    # a veth named "wire" in a namespace of our own stands in for the NIC's netdev.
    args.netns = f"vpb{os.getpid()}"
    subprocess.run(["ip", "netns", "add", args.netns], check=True)
    try:
        subprocess.run(["ip", "-n", args.netns, "link", "add", "wire", "type", "veth",
                        "peer", "name", "wirepeer"], check=True)
        for dev in ("wirepeer", "wire"):
            subprocess.run(["ip", "-n", args.netns, "link", "set", dev, "up"], check=True)
        subprocess.run(["ip", "-n", args.netns, "addr", "add", "192.0.2.1/24", "dev", "wire"],
                       check=True)
        ladder(args, rates, results)
    finally:
        subprocess.run(["ip", "netns", "del", args.netns], check=False)
    report(args, rates, results)


def ladder(args, rates, results):
    with tempfile.TemporaryDirectory(prefix="vpb-") as work:
        for rnd in range(args.rounds):
            print(f"-- round {rnd + 1} (load average {open('/proc/loadavg').read().split()[:3]})",
                  flush=True)
            lossy = set()  # a mode stops climbing at its first rate with loss, this round
            for rate in rates:
                order = ("pool", "none") if rnd % 2 == 0 else ("none", "pool")
                for mode in order:
                    if mode in lossy:
                        continue
                    r = run_one(args, mode, rate, work)
                    r["round"] = rnd + 1
                    results.append(r)
                    show(r)
                    if r["delivered"] != r["sent"]:
                        lossy.add(mode)


def report(args, rates, results):
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    gbps = lambda rate: rate * args.streams * 8298 * 8 / 1e9
    print(f"-- highest per-stream rate below the first loss, per round ({args.streams} streams, "
          "frames of 8298 bytes on the wire)")
    best = {}
    for mode in ("pool", "none"):
        for rnd in range(1, args.rounds + 1):
            runs = [r for r in results if r["mode"] == mode and r["round"] == rnd]
            clean = [r["rate"] for r in runs if r["sent"] == r["delivered"]]
            lost = [r["rate"] for r in runs if r["sent"] != r["delivered"]]
            top = max([x for x in clean if not lost or x < min(lost)], default=0)
            best[mode, rnd] = top
            ring_full = sum(r["ring_full"] for r in runs)
            reached = [r["achieved"] for r in runs if r["rate"] == top]
            print(f"{mode} round {rnd}: {top}/s per stream ({top * args.streams}/s, "
                  f"{gbps(top):.2f} Gb/s; achieved {reached[0] if reached else 0:.0f}/s)"
                  f"{' (top of the ladder)' if not lost else ''}; "
                  f"ring-full drops in the round: {ring_full}")
    ratios = [best["pool", n] / best["none", n] for n in range(1, args.rounds + 1)
              if best["none", n]]
    if ratios:
        print("pool / writer-less, rounds in order: " + ", ".join(f"{x:.3f}" for x in ratios) +
              f"; median {statistics.median(ratios):.3f}")
    for mode in ("pool", "none"):
        clean = [r for r in results if r["mode"] == mode and r["sent"] == r["delivered"]]
        if clean:
            per = lambda key: statistics.median(r[key] * 1e9 / r["delivered"] for r in clean)
            print(f"{mode}: over its {len(clean)} loss-free runs, median CPU ns per frame: "
                  f"writer threads {per('writer_cpu_s'):.0f}, capture thread "
                  f"{per('capture_cpu_s'):.0f} (busy polling counts its idle polls), "
                  f"process {per('process_cpu_s'):.0f}")


if __name__ == "__main__":
    main()
