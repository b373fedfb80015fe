#!/usr/bin/env bash
# rocecapd (pcap-family backends) against `tcpdump -w` on the same traffic: the rate ladder of
# issue 17, A B A B alternated at each rate, with the loss of each tool, its loss-free rate and
# the ratio of loss-free rates. Results and the command go to BENCHMARKS.md ("Kernel path").
#
# Two namespaces joined by a veth pair (MTU 9000, tests/integration/netns.sh); `rocecap gen`
# sends 6 streams (2 groups x 3 antennas) of 8298-byte CODIF frames (8192 data bytes) for
# SECONDS at each rate, pinned to CPU 0; the capture tool runs pinned to CPU 1 and writes to
# /dev/shm. A tool's loss at a rate is the worst of its runs there: sent datagrams (the
# generator's summary) minus what it kept (rocecapd: packets in the manifest's streams;
# tcpdump: "packets captured"). Its loss-free rate is the highest rate up to which every run
# lost nothing. Each rocecapd run is also checked with `rocecap verify` against the summary.
#
# usage: bench/kernel_path_bench.sh [--short] [--rates "R1 R2 ..."] [--seconds S] [--repeat N]
#                                   [--tools "T1 T2 ..."] [--perf] [--gen udp|af-packet]
#                                   [--rps] [--cpu-quota PCT] [ROCECAPD [ROCECAP]]
#   --short    3 rates (2 3 4 Gb/s), 3 s each, 1 repeat: a quick check, not a result
#   --rates    ladder in Gb/s of UDP payload (rocecap gen --gbps) [1.5 2 2.5 3 3.5 4 5 6]
#   --seconds  traffic per run [10]          --repeat  A B rounds per rate [2]
#   --tools    any of pcap raw tcpdump, plus variants named below [pcap raw tcpdump]
# A rung's rate is what the generator achieved (its summary: datagrams x (payload + 64 bytes of
# headers) x 8 / seconds), never the requested one; the table shows both. A tool's loss-free
# rate is the lowest achieved rate of its runs at the highest rung up to which none lost.
#   --record   perf record -g each run instead; the top of `perf report` is printed per run
#   --perf     perf stat each run: CPU time, instructions (where the CPU exposes them; not in
#              most VMs) and syscalls per captured packet, whole process, all threads
#   --gen      how `rocecap gen` sends [af-packet]: af-packet = prebuilt frames through an
#              AF_PACKET socket with PACKET_QDISC_BYPASS (the same datagrams, several times the
#              rate per CPU); udp = UDP sockets (sendmmsg), the method of the first sessions
#   --rps      steer the receiving veth's softirq work (the stack, and the kernel's copy into
#              the capture tool's ring) to CPU 1, the capture CPU, with RPS (rps_cpus); without
#              it a veth receives in softirq on the SENDER's CPU 0, so the generator pays for
#              it. Both tools then pay it on their own CPU alike.
#   --cpu-quota PCT   put the capture tool in a cgroup limited to PCT % of one CPU (cgroup v2
#              cpu.max, or v1 cpu.cfs_quota_us): each tool's CPU-bound limit at rates the
#              generator can drive. Measures CPU efficiency plus buffering, not a host's rate.
#   --out DIR  where the tools write [/dev/shm]: a tmpfs mounted with huge=always, or a disk
#   --disk-mbps MB   a disk of known bandwidth: the capture tool's writes to the disk under DIR
#              are limited to MB MB/s (the kernel's blk-throttle, in the generic block layer:
#              cgroup v1 blkio.throttle.write_bps_device, v2 io.max wbps; Documentation/admin-
#              guide/cgroup-v1/blkio-controller.rst. v1 throttles the bios a task submits, i.e.
#              O_DIRECT writes, the direct-* tools' path, not the page cache's writeback; the
#              buffered tools are not limited by it). fio measures the disk under the limit at the
#              start (O_DIRECT, 1 MiB, io_uring, 4 in flight, 8 s: the goal's baseline), and the
#              table ends with each tool's loss-free rate as a fraction of it.
#   --disk-stall MS/S   with --disk-mbps: during each run's traffic, every S seconds (the first
#              after S), the limit drops to 1 MB/s for MS ms: the disk stalls as this VM's disk
#              was seen to (BENCHMARKS.md, "The manifest's fsync": gaps of 0.3-0.8 s), the same
#              stalls for every tool and run.
#   ROCECAPD, ROCECAP default to build/ci/daemon/rocecapd and build/ci/tools/rocecap.
# Tools: pcap, raw      rocecapd, capture.backend pcap, pcap_reader libpcap, formats [pcap] / [raw]
#        ring-pcap, ring-raw   the same with capture.pcap_reader packet_ring (zero copy)
#        ringcopy-pcap, ringcopy-raw   packet_ring with zero_copy: false (copies into slots)
#        direct-pcap, direct-raw   packet_ring with output.direct_io: true (O_DIRECT through
#                       io_uring, no page cache; with --out on a disk: tmpfs has no direct I/O
#                       and writes such files through its page cache as before)
#        tcpdump        tcpdump -i IF -w FILE -B 65536 udp (its defaults otherwise)
# Extra run-file lines for every rocecapd run: KPB_CAPTURE_EXTRA (under capture:, each line
# indented by two spaces); E2E_RING_DEPTH=N sets capture.ring_depth (slots per stream);
# KPB_ROTATE sets output.rotate [64GiB: no rotation in a run; rocecapd's default is 4GiB, which
# closes (and fsyncs) a file every ~7 s at 5 Gb/s].
# As root. Prints one line per run, then the table. KEEP_WORKDIR=1 keeps DIR/kpb.PID.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rates="1.5 2 2.5 3 3.5 4 5 6"
seconds=10
repeat=2
tools="pcap raw tcpdump"
use_perf=0
gen_mode=af-packet
use_rps=0
quota=""
out_base=/dev/shm
disk_mbps=""
disk_stall=
while [ $# -gt 0 ]; do
  case $1 in
    --short) rates="2 3 4" seconds=3 repeat=1 ;;
    --rates) rates=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --repeat) repeat=$2; shift ;;
    --tools) tools=$2; shift ;;
    --perf) use_perf=1 ;;
    --record) use_perf=2 ;;
    --gen) gen_mode=$2; shift ;;
    --rps) use_rps=1 ;;
    --cpu-quota) quota=$2; shift ;;
    --out) out_base=$2; shift ;;
    --disk-mbps) disk_mbps=$2; shift ;;
    --disk-stall) disk_stall=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
ROCECAPD=$(realpath "${1:-$repo/build/ci/daemon/rocecapd}")
ROCECAP=$(realpath "${2:-$repo/build/ci/tools/rocecap}")
for f in "$ROCECAPD" "$ROCECAP"; do [ -x "$f" ] || { echo "not executable: $f" >&2; exit 2; }; done
command -v tcpdump >/dev/null || { echo "tcpdump is not installed" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is not installed" >&2; exit 2; }
if [ "$use_perf" = 1 ] && ! command -v perf >/dev/null; then
  echo "perf is not installed (Debian: linux-perf); running without --perf" >&2
  use_perf=0
fi

case $gen_mode in udp | af-packet) ;; *) echo "--gen: udp or af-packet" >&2; exit 2 ;; esac
if [ -n "$disk_stall" ]; then
  [ -n "$disk_mbps" ] || { echo "--disk-stall needs --disk-mbps" >&2; exit 2; }
  [[ $disk_stall =~ ^[0-9]+/[0-9]+$ ]] || { echo "--disk-stall: MS/S, e.g. 500/5" >&2; exit 2; }
fi
if [ -n "$disk_mbps" ]; then
  command -v fio >/dev/null || { echo "--disk-mbps: fio is not installed" >&2; exit 2; }
  [[ $disk_mbps =~ ^[0-9]+$ ]] || { echo "--disk-mbps: whole MB/s" >&2; exit 2; }
fi

# shellcheck source=../tests/integration/netns.sh
source "$repo/tests/integration/netns.sh"
# shellcheck source=../tests/integration/e2e_lib.sh
source "$repo/tests/integration/e2e_lib.sh"
netns_require_root
NETNS_MTU=9000
NETNS_CMD_TIMEOUT=$((seconds + 120))
NETNS_MAX_SECONDS=$((($(wc -w <<<"$rates") * $(wc -w <<<"$tools") * repeat) * (seconds + 40) + 120))
work=$out_base/kpb.$$
mkdir -p "$work"
netns_up
netns_on_exit '[ "${KEEP_WORKDIR:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"'

if [ "$use_rps" = 1 ]; then
  # RPS on the receiver's only rx queue: netif_rx (veth_xmit's path into the peer) queues the
  # frame to CPU 1's backlog (net/core/dev.c, netif_rx_internal -> get_rps_cpu), so the IP
  # receive path and AF_PACKET's copy into the ring run there, not on the generator's CPU 0.
  netns_exec_receiver sh -c "echo 2 >/sys/class/net/$NETNS_RECEIVER_IF/queues/rx-0/rps_cpus"
fi
cgroup=""
if [ -n "$quota" ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cgroup=/sys/fs/cgroup/kpb.$$
    mkdir "$cgroup"
    echo "$((quota * 1000)) 100000" >"$cgroup/cpu.max"
  else
    cgroup=/sys/fs/cgroup/cpu/kpb.$$
    mkdir "$cgroup"
    echo 100000 >"$cgroup/cpu.cfs_period_us"
    echo "$((quota * 1000))" >"$cgroup/cpu.cfs_quota_us"
  fi
  netns_on_exit "rmdir $cgroup 2>/dev/null || true"
fi
# --disk-mbps: the write limit on the whole disk that holds the output directory (blk-throttle
# keys its limits by the disk, MAJ:MIN of the disk, not of a partition).
disk_cgroup=""
disk_dev=""
disk_limit_file=""
disk_limit() { # bytes per second
  if [ "$disk_limit_file" = io.max ]; then
    echo "$disk_dev wbps=$1" >"$disk_cgroup/io.max"
  else
    echo "$disk_dev $1" >"$disk_cgroup/blkio.throttle.write_bps_device"
  fi
}
if [ -n "$disk_mbps" ]; then
  mkdir -p "$out_base"
  src=$(findmnt -no SOURCE -T "$out_base")
  blk=$(basename "$(realpath "$src")")
  parent=$(lsblk -no PKNAME "/dev/$blk" 2>/dev/null | head -1)
  disk_dev=$(cat "/sys/class/block/${parent:-$blk}/dev")
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    grep -qw io /sys/fs/cgroup/cgroup.subtree_control || echo +io >/sys/fs/cgroup/cgroup.subtree_control
    disk_cgroup=${cgroup:-/sys/fs/cgroup/kpb.$$.disk}
    disk_limit_file=io.max
  else
    disk_cgroup=/sys/fs/cgroup/blkio/kpb.$$
    disk_limit_file=blkio.throttle.write_bps_device
  fi
  mkdir -p "$disk_cgroup"
  netns_on_exit "rmdir $disk_cgroup 2>/dev/null || true"
  disk_limit $((disk_mbps * 1000000))
fi
# Into the quota cgroup and the disk's (the whole process, all its threads, and the threads it
# starts later: io_uring's workers); the tool was started outside them because `ip netns exec`
# mounts its own /sys.
to_cgroup() {
  [ -z "$cgroup" ] || echo "$1" >"$cgroup/cgroup.procs"
  [ -z "$disk_cgroup" ] || [ "$disk_cgroup" = "$cgroup" ] || echo "$1" >"$disk_cgroup/cgroup.procs"
}
# --disk-stall: the limit drops to 1 MB/s for MS ms every S s until killed (one per run).
stall_pid=""
stall_start() {
  [ -n "$disk_stall" ] || return 0
  local ms=${disk_stall%/*} every=${disk_stall#*/}
  (
    trap 'disk_limit $((disk_mbps * 1000000)); exit 0' TERM
    while :; do
      sleep "$((every * 1000 - ms))e-3" & wait $!
      disk_limit 1000000
      sleep "${ms}e-3" & wait $!
      disk_limit $((disk_mbps * 1000000))
    done
  ) &
  stall_pid=$!
}
stall_stop() {
  [ -n "$stall_pid" ] || return 0
  kill -TERM "$stall_pid" 2>/dev/null || true
  wait "$stall_pid" 2>/dev/null || true
  stall_pid=""
}
netns_on_exit 'stall_stop' # an interrupted run leaves no stall loop behind

# Frames dropped between the generator and the capture socket, not by either tool: the veth
# pair (a full backlog on the receiving CPU: veth_xmit counts it as the sender's tx_dropped)
# and the per-CPU backlogs (/proc/net/softnet_stat, 2nd column, the whole host).
path_drops() {
  python3 - "$NETNS_SENDER" "$NETNS_SENDER_IF" "$NETNS_RECEIVER" "$NETNS_RECEIVER_IF" <<'PY'
import json, subprocess, sys
def link(ns, ifname):
    j = json.loads(subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", ifname],
                                  capture_output=True, text=True).stdout)[0]["stats64"]
    return j["tx"]["dropped"] + j["rx"]["dropped"]
backlog = sum(int(l.split()[1], 16) for l in open("/proc/net/softnet_stat"))
vm = dict(l.split() for l in open("/proc/vmstat"))
# steal: ticks the hypervisor ran something else on CPUs 0 and 1 (/proc/stat, 8th field)
steal = sum(int(l.split()[8]) for l in open("/proc/stat") if l.startswith(("cpu0 ", "cpu1 ")))
print(link(sys.argv[1], sys.argv[2]) + link(sys.argv[3], sys.argv[4]), backlog,
      int(vm.get("pgscan_direct", 0)), int(vm.get("pgscan_kswapd", 0)), steal)
PY
}
# Also the host's page reclaim during the run (/proc/vmstat): the output is page cache, and a
# run that makes the kernel reclaim (direct: in the writer's own writes) costs that tool CPU.
drops_before() { read -r VETH0 BACKLOG0 DIRECT0 KSWAPD0 STEAL0 < <(path_drops); }
drops_since() {
  local v b d k st
  read -r v b d k st < <(path_drops)
  echo "veth drops $((v - VETH0)), backlog drops $((b - BACKLOG0)), reclaim scans direct $((d - DIRECT0)) kswapd $((k - KSWAPD0)), steal $((st - STEAL0)) ticks"
}

groups=$E2E_GROUPS
sources=$E2E_SOURCES
results=$work/results.tsv # tool rate round sent kept lost verify cpu-ns/pkt instr/pkt syscalls/pkt

gen_flags=()
[ "$gen_mode" = af-packet ] && gen_flags=(--af-packet)
gen() { # rate summary
  netns_exec_sender taskset -c 0 "$ROCECAP" gen "${gen_flags[@]}" --groups "$groups" --sources "$sources" \
    --gbps "$1" --duration "$seconds" --interface "$NETNS_SENDER_IF" --nchan 4 --nbits 16 \
    --complex --epoch 52 --station AT --thread-id 100 --group-id 7 --summary "$2" >/dev/null
}

sent_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['datagrams'])" "$1"; }
# What the generator achieved, Gb/s of UDP payload (it may fall short of --gbps on a busy CPU 0).
achieved() {
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"{s['datagrams'] * (s['frame']['payload_bytes'] + 64) * 8 / s['seconds'] / 1e9:.2f}\")" "$1"
}

# perf stat on PID (the capture tool) in the background; prints nothing until perf_done.
perf_start() {
  PERF_PID=""
  [ "$use_perf" != 0 ] || return 0
  if [ "$use_perf" = 2 ]; then
    perf record -g -o "${2%.csv}.data" -p "$1" >/dev/null 2>&1 &
    PERF_PID=$!
    return 0
  fi
  perf stat -x, -e task-clock,instructions,raw_syscalls:sys_enter -p "$1" \
    -o "$2" 2>/dev/null &
  PERF_PID=$!
}
perf_done() { # file packets -> "instr/pkt syscalls/pkt"
  [ -n "$PERF_PID" ] || { echo "- - -"; return; }
  kill -INT "$PERF_PID" 2>/dev/null || true
  wait "$PERF_PID" 2>/dev/null || true
  if [ "$use_perf" = 2 ]; then
    perf report -i "${1%.csv}.data" --stdio --no-children --sort dso,sym 2>/dev/null |
      grep -E '^ +[0-9.]+%' | head -25 >&2
    echo "- - -"
    return
  fi
  python3 - "$1" "$2" <<'PY'
import sys
vals = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        vals[f[2]] = float(f[0])
n = max(int(sys.argv[2]), 1)
ins = vals.get("instructions")
sc = vals.get("raw_syscalls:sys_enter")
cpu = vals.get("task-clock")  # ms of CPU, all threads
print(f"{cpu * 1e6 / n:.0f}" if cpu else "-", f"{ins / n:.0f}" if ins else "-",
      f"{sc / n:.2f}" if sc is not None else "-")
PY
}

# Between runs: write back what a run left dirty (a buffered run on a disk leaves gigabytes for
# the flusher), so that no run starts behind the previous tool's writeback.
settle() { sync; }

run_tcpdump() { # rate round
  local d=$work/tcpdump.$1.$2 pid kept
  mkdir -p "$d"
  # -Z root: Debian's tcpdump would drop to user tcpdump; the .pcap name suits its AppArmor
  # profile. Otherwise exactly the issue's command line.
  netns_bg_receiver taskset -c 1 tcpdump -i "$NETNS_RECEIVER_IF" -w "$d/capture.pcap" \
    -B 65536 -Z root udp 2>"$d/tcpdump.log"
  pid=$NETNS_BG_PID
  for _ in $(seq 100); do grep -q "listening on" "$d/tcpdump.log" && break; sleep 0.1; done
  local tpid
  tpid=$(pgrep -P "$pid" -x tcpdump || echo "$pid")
  to_cgroup "$tpid"
  perf_start "$tpid" "$d/perf.csv"
  drops_before
  stall_start
  gen "$1" "$d/sent.json"
  stall_stop
  sleep 1
  kill -INT "$pid" 2>/dev/null || echo "tcpdump was gone before the stop (timeout?)" >&2
  wait "$pid" 2>/dev/null || true
  local path
  path=$(drops_since)
  kept=$(sed -n 's/^\([0-9]*\) packets\{0,1\} captured$/\1/p' "$d/tcpdump.log")
  kept=${kept:-0} # no statistics line: it was killed, count it as having kept nothing
  local sent
  sent=$(sent_of "$d/sent.json")
  echo -e "tcpdump\t$1\t$2\t$sent\t$kept\t$((sent - kept))\t-\t$(perf_done "$d/perf.csv" "$kept" | tr ' ' '\t')\t$(achieved "$d/sent.json")\t$(grep -o '[0-9]* packets\{0,1\} dropped by kernel' "$d/tcpdump.log"), $path" >>"$results"
  rm -f "$d/capture.pcap"
  settle
}

run_rocecapd() { # tool rate round
  local tool=$1 d=$work/$1.$2.$3 pid daemon format extra=${KPB_CAPTURE_EXTRA:-} output_extra=""
  case $tool in
    pcap | raw) format=$tool extra+=$'\n  pcap_reader: libpcap' ;;
    ring-pcap | ring-raw) format=${tool#ring-} extra+=$'\n  pcap_reader: packet_ring' ;;
    ringcopy-pcap | ringcopy-raw)
      format=${tool#ringcopy-} extra+=$'\n  pcap_reader: packet_ring\n  zero_copy: false' ;;
    direct-pcap | direct-raw)
      format=${tool#direct-} extra+=$'\n  pcap_reader: packet_ring' output_extra+=$'\n  direct_io: true' ;;
    *) echo "unknown tool $tool" >&2; return 1 ;;
  esac
  mkdir -p "$d"
  E2E_IFACE=$NETNS_RECEIVER_IF E2E_OUT=$d/out E2E_FORMATS=$format \
    E2E_DURATION=$((seconds + 60))s E2E_ROTATE=${KPB_ROTATE:-64GiB} E2E_EXTRA_OUTPUT=${output_extra#$'\n'} \
    e2e_config "$d/run.yaml"
  if [ -n "$extra" ]; then
    python3 - "$d/run.yaml" "$extra" <<'PY'
import sys
p, extra = sys.argv[1], sys.argv[2]
text = open(p).read().replace("capture:\n", "capture:\n" + extra.strip("\n") + "\n", 1)
open(p, "w").write(text)
PY
  fi
  netns_bg_receiver taskset -c 1 "$ROCECAPD" --config "$d/run.yaml" 2>"$d/rocecapd.log"
  pid=$NETNS_BG_PID
  for _ in $(seq 300); do
    grep -q "capturing .* streams" "$d/rocecapd.log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  daemon=$(pgrep -P "$pid" -x rocecapd || true)
  if [ -z "$daemon" ]; then
    echo "rocecapd did not start:" >&2
    cat "$d/rocecapd.log" >&2
    return 1
  fi
  to_cgroup "$daemon"
  perf_start "$daemon" "$d/perf.csv"
  drops_before
  stall_start
  gen "$2" "$d/sent.json"
  stall_stop
  sleep 1
  kill -TERM "$daemon" 2>/dev/null || echo "rocecapd was gone before the stop" >&2
  wait "$pid" 2>/dev/null || true
  local sent kept verify=OK path
  path=$(drops_since)
  sent=$(sent_of "$d/sent.json")
  kept=$(python3 -c "import json,sys; print(sum(s['packets'] for s in json.load(open(sys.argv[1]))['streams']))" "$d/out/e2e/manifest.json")
  "$ROCECAP" verify --manifest "$d/out/e2e/manifest.json" --expect "$d/sent.json" \
    >"$d/verify.txt" 2>&1 || verify=FAIL
  local why
  why=$(python3 -c "import json,sys; i=json.load(open(sys.argv[1]))['interfaces'][0]; print(f\"NIC drops {i['nic_drops']}, ring full {i['ring_full_drops']}\" + (f\", zero copy {i['zero_copy']}\" if i.get('zero_copy') else ''))" "$d/out/e2e/manifest.json" 2>/dev/null || echo "no manifest")
  why+=", $path"
  echo -e "$tool\t$2\t$3\t$sent\t$kept\t$((sent - kept))\t$verify\t$(perf_done "$d/perf.csv" "$kept" | tr ' ' '\t')\t$(achieved "$d/sent.json")\t$why" >>"$results"
  # Every output file once verified (raw files are named *.codif / *.vdif): a ladder of 10 s runs
  # would otherwise keep tens of GB in /dev/shm (an earlier version ran the host out of memory).
  [ "${KEEP_WORKDIR:-0}" = 1 ] || find "$d/out" -type f ! -name manifest.json -delete 2>/dev/null || true
  settle
}

echo "kernel path bench: rates [$rates] Gb/s, $seconds s per run, $repeat rounds, tools [$tools]"
echo "generator: $gen_mode on CPU 0; receive softirq: $([ "$use_rps" = 1 ] && echo "CPU 1 (RPS)" || echo "sender's CPU 0"); capture tool: CPU 1$([ -n "$quota" ] && echo ", cgroup quota $quota % of a CPU")"
echo "rocecapd: $ROCECAPD"
echo "output: $out_base ($(findmnt -no FSTYPE -T "$out_base")); vm.dirty_ratio $(cat /proc/sys/vm/dirty_ratio), dirty_background_ratio $(cat /proc/sys/vm/dirty_background_ratio)"
echo "tcpdump: $(tcpdump --version 2>&1 | head -1)"
fio_mbps=""
if [ -n "$disk_mbps" ]; then
  fio_dir=$work/fio
  mkdir -p "$fio_dir"
  fio_mbps=$(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$disk_cgroup" \
    fio --name=disk --directory="$fio_dir" --rw=write --bs=1M --size=16G --runtime=8 \
    --time_based --direct=1 --ioengine=io_uring --iodepth=4 --end_fsync=1 --output-format=json |
    python3 -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['write']['bw_bytes'] / 1e6))")
  rm -rf "$fio_dir"
  settle
  echo "disk: $disk_dev limited to $disk_mbps MB/s for the tools; fio under the limit $fio_mbps MB/s ($(python3 -c "print(f'{$fio_mbps * 8 / 1000:.2f}')") Gb/s of writes)$([ -n "$disk_stall" ] && echo "; stalls ${disk_stall%/*} ms every ${disk_stall#*/} s")"
fi
: >"$results"
for rate in $rates; do
  for round in $(seq "$repeat"); do
    for tool in $tools; do
      if [ "$tool" = tcpdump ]; then run_tcpdump "$rate" "$round"; else run_rocecapd "$tool" "$rate" "$round"; fi
      tail -1 "$results" | awk -F'\t' '{printf "  %-13s %5s Gb/s (sent at %s) round %s: sent %s kept %s lost %s (%.2f %%) verify %s; per packet: CPU %s ns, instructions %s, syscalls %s; %s\n", $1, $2, $11, $3, $4, $5, $6, ($4 ? 100 * $6 / $4 : 0), $7, $8, $9, $10, $12}'
    done
  done
done

python3 - "$results" "$tools" "$fio_mbps" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
tools = sys.argv[2].split()
rates = sorted({float(r[1]) for r in rows})
loss = collections.defaultdict(list)   # (tool, rate) -> [loss %]
ach = collections.defaultdict(list)    # (tool, rate) -> [achieved Gb/s]
verify = collections.defaultdict(list)
perf = collections.defaultdict(list)
for t, rate, _, sent, kept, lost, ver, cpu, ins, sc, achieved, *_ in rows:
    sent, lost = int(sent), int(lost)
    loss[t, float(rate)].append(100.0 * max(lost, 0) / sent if sent else 100.0)
    verify[t, float(rate)].append(ver)
    perf[t, float(rate)].append((cpu, ins, sc))
    ach[t, float(rate)].append(float(achieved))
def cell(t, r):
    v = loss[t, r]
    s = f"{min(v):.2f}" if min(v) == max(v) else f"{min(v):.2f}-{max(v):.2f}"
    if "FAIL" in verify[t, r]: s += " (verify FAIL)"
    a = ach[t, r]
    s += f" @ {min(a):.2f}" if min(a) == max(a) else f" @ {min(a):.2f}-{max(a):.2f}"
    return s
print("\nloss in % of sent datagrams @ achieved Gb/s (ranges over rounds); columns: requested")
print("| tool | " + " | ".join(f"{r:g} Gb/s" for r in rates) + " | loss-free rate (achieved) |")
print("|---|" + "---:|" * (len(rates) + 1))
free = {}
for t in tools:
    f = 0.0
    for r in rates:
        if max(loss[t, r]) > 0 or "FAIL" in verify[t, r]: break
        f = max(f, min(ach[t, r]))
    free[t] = f
    print(f"| {t} | " + " | ".join(cell(t, r) for r in rates) + f" | {f:.2f} Gb/s |")
if any(p != ("-", "-", "-") for v in perf.values() for p in v):
    print("\nperf stat, whole process, per captured packet: CPU ns / instructions / syscalls (first round)")
    print("| tool | " + " | ".join(f"{r:g} Gb/s" for r in rates) + " |")
    print("|---|" + "---:|" * len(rates))
    for t in tools:
        print(f"| {t} | " + " | ".join(" / ".join(perf[t, r][0]) for r in rates) + " |")
if len(sys.argv) > 3 and sys.argv[3]:
    # A frame on disk is the datagram plus its headers (the achieved rate counts 64 bytes of
    # them; pcap adds 16 more per record): against fio's rate of writes, the achieved rate.
    fio = float(sys.argv[3]) * 8 / 1000
    for t in tools:
        print(f"loss-free rate {t} / fio under the limit ({fio:.2f} Gb/s): {free[t] / fio:.2f}")
if "tcpdump" in free:
    for t in tools:
        if t == "tcpdump": continue
        ratio = free[t] / free["tcpdump"] if free["tcpdump"] else float("inf")
        print(f"ratio of loss-free rates {t} / tcpdump: {ratio:.2f}")
PY
