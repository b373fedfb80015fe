#!/usr/bin/env bash
# First run on real hardware: checks what rocecap assumes about a ConnectX (and an NVIDIA GPU
# where there is one) and writes ONE report file to send back to the rocecap developers.
#
# usage: sudo scripts/hw-check.sh RX_IF TX_IF [--build DIR] [--report FILE] [--source ADDR] [--plan]
#   RX_IF   the ConnectX port under test (rocecapd captures here; its RDMA device is found
#           through sysfs)
#   TX_IF   where test frames leave from so that they ARRIVE on RX_IF: the other port of the
#           NIC cabled back to back (or a loopback cable / a switch port that floods the test
#           groups). It needs an IPv4 address (or --source), the generator's antenna address.
#   --build DIR    a build tree to use (default build/hw-check; configured and built if needed)
#   --report FILE  where the report goes (default hw-check-<host>-<UTC time>.txt here)
#   --plan         check the host and say what step 3 will send, then stop (builds and runs
#                  nothing, writes no report)
#
# Steps, each with its command, exit status and output in the report:
#   1. the host: kernel, modules (mlx5_ib, nvidia, nvidia_peermem), rdma-core, firmware, MTU
#   2. the verbs conformance suite (tests/softverbs/conformance) against the REAL libibverbs
#   3. a short real capture: rocecapd (backend verbs) on RX_IF, `rocecap gen` sending from
#      TX_IF, then `rocecap verify` of the run against the generator's summary. The frames fit
#      the smaller MTU of RX_IF and TX_IF (8192-byte CODIF payloads with jumbo frames, 1408 at
#      MTU 1500): a larger datagram would leave TX_IF as IP fragments, which the capture cannot
#      take as frames; an MTU below 1500 is refused.
#   4. with an NVIDIA GPU: the GPU tests (ctest -L gpu) and bench/staging_bench
# Exit status: 0 when every step passed, 1 when one failed (see the report), 2 for a host this
# cannot run on (no RDMA device, not root, bad arguments): the message names what is missing.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sysfs=${HW_CHECK_SYSFS_ROOT:-/sys} # tests point this at a fake tree

refuse() {
  echo "hw-check: $*" >&2
  exit 2
}

rx="" tx="" build="$root/build/hw-check" report="" source="" plan_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --plan) plan_only=1; shift ;;
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --report) report=${2:?--report needs a file}; shift 2 ;;
    --source) source=${2:?--source needs an address}; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) refuse "unknown option $1 (see --help)" ;;
    *) if [ -z "$rx" ]; then rx=$1; elif [ -z "$tx" ]; then tx=$1; else refuse "unexpected argument $1"; fi; shift ;;
  esac
done

# What the host must have, checked before anything is built or run.
devices=()
if [ -d "$sysfs/class/infiniband" ]; then
  for d in "$sysfs/class/infiniband"/*; do [ -e "$d" ] && devices+=("$(basename "$d")"); done
fi
if [ ${#devices[@]} -eq 0 ]; then
  refuse "no RDMA device: $sysfs/class/infiniband is missing or empty. This check needs a host" \
    "with a ConnectX NIC and its RDMA driver loaded (modprobe mlx5_ib; rdma-core installed)."
fi
{ [ -n "$rx" ] && [ -n "$tx" ]; } || refuse "usage: hw-check.sh RX_IF TX_IF [--build DIR] [--report FILE] [--source ADDR] [--plan] (RDMA devices here: ${devices[*]})"
[ "$(id -u)" = 0 ] || refuse "must run as root (raw packet QPs need CAP_NET_RAW, memory locking, flow rules)"
for i in "$rx" "$tx"; do
  [ -e "$sysfs/class/net/$i" ] || refuse "no network interface '$i' ($sysfs/class/net/$i)"
done
rdma_dev=""
for d in "${devices[@]}"; do
  if [ -e "$sysfs/class/infiniband/$d/device/net/$rx" ]; then rdma_dev=$d; fi
done
[ -n "$rdma_dev" ] || refuse "$rx is not a port of an RDMA device (${devices[*]}: none lists it under device/net/)"
if [ -z "$source" ]; then
  source=$(ip -4 -o addr show dev "$tx" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
fi
[ -n "$source" ] || refuse "$tx has no IPv4 address: give it one (ip addr add 192.0.2.11/24 dev $tx) or pass --source ADDR"

# Step 3's frames must cross both links whole: rocecap gen sends each CODIF frame (64-byte
# header + payload) as one UDP datagram, which TX_IF would fragment beyond its MTU, and RX_IF's
# port drops frames beyond its own. The payload (a multiple of 8 bytes) fills the smaller MTU
# less the IPv4 (20) and UDP (8) headers and the CODIF header, at most 8192; max_frame covers
# RX_IF's MTU + 14 + 8 as rocecapd's start-up check requires.
mtu_of() {
  local f=$sysfs/class/net/$1/mtu v
  v=$(cat "$f" 2>/dev/null) || v=""
  [[ $v =~ ^[0-9]+$ ]] || refuse "cannot read the MTU of $1 ($f)"
  echo "$v"
}
mtu_rx=$(mtu_of "$rx") || exit 2
mtu_tx=$(mtu_of "$tx") || exit 2
for pair in "$rx:$mtu_rx" "$tx:$mtu_tx"; do
  [ "${pair#*:}" -ge 1500 ] || refuse "the MTU of ${pair%%:*} is ${pair#*:}: step 3 needs at least 1500 on both interfaces (ip link set ${pair%%:*} mtu 9000)"
done
mtu=$((mtu_rx < mtu_tx ? mtu_rx : mtu_tx))
payload=$(((mtu - 20 - 8 - 64) / 8 * 8))
[ "$payload" -le 8192 ] || payload=8192
max_frame=$((mtu_rx + 14 + 8 > 9216 ? mtu_rx + 14 + 8 : 9216))
plan="step 3 sends CODIF frames with $payload-byte payloads ($((payload + 64 + 8 + 20))-byte IP packets; MTU $rx $mtu_rx, $tx $mtu_tx), capture.max_frame $max_frame"
if [ "$plan_only" = 1 ]; then
  echo "hw-check: plan: $plan"
  exit 0
fi

[ -n "$report" ] || report="$PWD/hw-check-$(hostname -s)-$(date -u +%Y%m%dT%H%M%SZ).txt"
work=$(mktemp -d /tmp/rocecap-hw-check.XXXXXX)
failed=0
: >"$report"
say() { echo "$*" | tee -a "$report"; }
# step NAME CMD...: runs CMD, puts its output (last 400 lines) and status in the report.
step() {
  local name=$1 rc=0
  shift
  say ""
  say "=== $name"
  say "\$ $*"
  "$@" >"$work/step.out" 2>&1 || rc=$?
  tail -n 400 "$work/step.out" >>"$report"
  case $rc in
    0) say "--- $name: ok" ;;
    77) say "--- $name: SKIPPED" ;;
    *) say "--- $name: FAILED (exit $rc)"; failed=1 ;;
  esac
  return 0
}
gpu=0
# A GPU the NVIDIA kernel module drives (/dev/nvidiactl alone proves nothing: libcuda creates it).
compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null && gpu=1

say "rocecap hw-check $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?') on $(hostname) at $(date -u +%FT%TZ)"
say "RX_IF=$rx (RDMA device $rdma_dev) TX_IF=$tx source=$source GPU=$([ $gpu = 1 ] && echo yes || echo no)"
say "plan: $plan"

# 1. The host.
step "kernel and modules" bash -c 'uname -a; lsmod | grep -E "^(mlx5|ib_|rdma|nvidia)" || true'
step "rdma-core and driver packages" bash -c 'dpkg-query -W rdma-core libibverbs1 ibverbs-providers "nvidia-*" 2>/dev/null || rpm -qa "rdma-core*" "libibverbs*" 2>/dev/null || true'
step "RDMA devices" bash -c "command -v ibv_devinfo >/dev/null && ibv_devinfo -v -d $rdma_dev || ls -l $sysfs/class/infiniband/"
step "interfaces" bash -c "for i in $rx $tx; do ip -d link show \$i; ethtool -i \$i 2>/dev/null; done"
step "PCIe and NUMA" bash -c "for i in $rx $tx; do echo \$i: \$(readlink -f $sysfs/class/net/\$i/device) numa_node \$(cat $sysfs/class/net/\$i/device/numa_node 2>/dev/null); done; command -v nvidia-smi >/dev/null && nvidia-smi topo -m || true"
[ $gpu = 0 ] || step "GPU" bash -c 'cat /proc/driver/nvidia/version; nvidia-smi -q 2>&1 || cat /proc/driver/nvidia/gpus/*/information' 

# Build what is needed (cached in --build between runs).
step "configure" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
grep -E "^-- rocecap" "$work/step.out" >>"$report" || true
targets=(verbs_conformance rocecapd rocecap)
[ $gpu = 0 ] || targets+=(gpu_memory_test cuda_copy_engine_test payload_registration_wire_test softverbs staging_bench)
step "build" cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
conformance=$build/tests/softverbs/verbs_conformance
rocecapd=$build/daemon/rocecapd
rocecap=$build/tools/rocecap

# 2. Conformance against the real libibverbs (no LD_LIBRARY_PATH: the system library).
step "libibverbs the suite loads" bash -c "env -u LD_LIBRARY_PATH ldd $conformance | grep libibverbs"
step "verbs conformance on $rdma_dev" env -u LD_LIBRARY_PATH timeout 600 "$conformance" \
  --dev "$rdma_dev" --tx-if "$tx" --dev-if "$rx" --sysfs-root "$sysfs" --dmabuf any

# 3. A short real capture: 2 groups x 1 antenna, 20000 frames each at 10000 frames/s.
cat >"$work/run.yaml" <<YAML
run: { name: hwcheck, duration: 30s, packets: 40000 }
capture:
  backend: verbs
  payload_memory: auto
  max_frame: $max_frame
  interfaces: [ { name: $rx, groups: [239.83.0.1:36001, 239.83.0.2:36002] } ]
streams:
  antennas: [ { name: ant1, source: $source } ]
output: { directory: $work/out, formats: [raw, codifhdr, pcap] }
metrics: { enabled: false }
YAML
# shellcheck disable=SC2054  # the commas are inside one argument
gen=(gen --groups 239.83.0.1:36001,239.83.0.2:36002 --sources "$source" --frames 20000
  --rate 10000 --payload-bytes "$payload" --station HW --seed 11)
# shellcheck disable=SC2317  # run through step
capture() {
  "$rocecapd" --config "$work/run.yaml" 2>"$work/rocecapd.log" &
  local pid=$! i rc=0
  for ((i = 0; i < 300; i++)); do
    grep -q "capturing .* streams" "$work/rocecapd.log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  "$rocecap" "${gen[@]}" --interface "$tx" --ttl 1 --summary "$work/sent.json" >/dev/null || rc=$?
  wait "$pid" || rc=$?
  cat "$work/rocecapd.log"
  [ "$rc" = 0 ] || return "$rc"
  "$rocecap" verify --manifest "$work/out/hwcheck/manifest.json" --expect "$work/sent.json"
}
step "capture on $rx from $tx (rocecapd verbs + rocecap gen + rocecap verify)" capture
[ ! -f "$work/out/hwcheck/manifest.json" ] || { say "manifest:"; cat "$work/out/hwcheck/manifest.json" >>"$report"; }

# 4. The GPU.
if [ $gpu = 1 ]; then
  step "GPU tests (ctest -L gpu)" ctest --test-dir "$build" -L gpu --output-on-failure --timeout 300
  step "staging benchmark" "$build/bench/staging_bench"
else
  say ""
  say "=== GPU: none (/proc/driver/nvidia/gpus is empty): GPU tests not run"
fi

rm -rf "$work"
say ""
say "=== hw-check $([ $failed = 0 ] && echo PASSED || echo FAILED); report: $report"
exit "$failed"
