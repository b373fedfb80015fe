#!/usr/bin/env bash
# The GPU half of rocecapd_payload_memory_test.sh: rocecapd with capture.backend verbs (softverbs
# on the loopback device of a network namespace made for the test) on a host WITH an NVIDIA GPU,
# so the choice reaches the registration trial (capture/memory/README.md, steps 5 and 6):
#   neither path      softverbs refuses dma-buf (EOPNOTSUPP) and peer memory (EFAULT), as a NIC
#                     without nvidia_peermem and without dma-buf support does:
#                     payload_memory gpu  exit 3, the message names both failures, no run dir;
#                     payload_memory auto host memory, reason "auto: GPU ... found, but the NIC
#                                         cannot register GPU memory: ...", same in log, manifest
#                                         and rocecap_build_info.
#   peer memory       SOFTVERBS_PEERMEM=1: auto takes the GPU, "registered with the NIC through
#                     peer memory (1 slab, ... registered at once, as the run will)".
#   dma-buf           SOFTVERBS_DMABUF=ebadf: softverbs takes a dma-buf fd the CUDA driver really
#                     exported (cuMemGetHandleForAddressRange); whether this driver exports one is
#                     the machine's fact, so either "through dma-buf" or host memory with the
#                     dma-buf failure named; the test prints which.
# Every run logs how long the choice (the trial included) took: "chosen in S s".
# usage: rocecapd_payload_memory_gpu_test.sh ROCECAPD SOFTVERBS_LIB_DIR CUDA_BUILT(ON|OFF)
# SKIPPED (77) without root, without CUDA in the build or without an NVIDIA GPU: never passed.
set -euo pipefail
rocecapd=${1:?usage}
sv_lib=${2:?usage}
cuda=${3:?usage}
[ "$cuda" = ON ] || { echo "SKIP: built without CUDA"; exit 77; }
# /proc/driver/nvidia/gpus/<bus id> exists only while the NVIDIA kernel module drives a GPU.
compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null ||
  { echo "SKIP: no NVIDIA GPU driven on this host (/proc/driver/nvidia/gpus is empty)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespace)"; exit 77; }
[ -e "$sv_lib/libibverbs.so.1" ] || { echo "FAIL: no softverbs in $sv_lib"; exit 1; }

ns=rcpg$$
work=$(mktemp -d /tmp/rocecap-payload-memory-gpu.XXXXXX)
passed=0
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
mkdir -p "$work/sysfs"

config() { # $1: run name, $2: payload_memory
  cat >"$work/$1.yaml" <<YAML
run: { name: $1, duration: 2s }
capture:
  backend: verbs
  payload_memory: $2
  ring_depth: 256
  max_frame: 1280
  interfaces: [ { name: lo, device: sv0, groups: [239.17.0.1:36001] } ]
streams:
  antennas: [ { name: ak01, source: 192.0.2.11 } ]
output: { directory: $work/out, formats: [raw] }
metrics: { enabled: true, listen: "127.0.0.1:9464" }
YAML
}
daemon() { # $1: run name, then softverbs settings (VAR=value ...)
  local name=$1
  shift
  ip netns exec "$ns" env LD_LIBRARY_PATH="$sv_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    SOFTVERBS_DEVICES=sv0=lo SOFTVERBS_SYSFS_ROOT="$work/sysfs" ROCECAP_SYSFS_ROOT="$work/sysfs" \
    "$@" "$rocecapd" --config "$work/$name.yaml" 2>"$work/$name.log"
}
# Runs an auto run to its end while scraping rocecap_build_info; prints kind<TAB>reason after
# checking that log, manifest and build info agree.
auto_run() { # $1: run name, then softverbs settings
  local name=$1 pid scrape="" rc=0
  config "$name" auto
  daemon "$@" &
  pid=$!
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    scrape=$(ip netns exec "$ns" python3 -c '
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=1).read().decode())' \
      2>/dev/null | grep '^rocecap_build_info' || true)
    [ -n "$scrape" ] && break
    sleep 0.1
  done
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$work/$name.log" >&2; echo "FAIL: $name: exit $rc (want 0)" >&2; return 1; }
  python3 - "$work/out/$name/manifest.json" "$work/$name.log" "$scrape" <<'PY'
import json, re, sys
manifest, log, scrape = sys.argv[1:]
pm = json.load(open(manifest))["payload_memory"]
text = open(log).read()
m = re.search(r"payload memory: (\w+) \((.*)\); chosen in ([0-9.]+) s", text)
assert m, "log lacks the payload memory line"
assert (m.group(1), m.group(2)) == (pm["kind"], pm["reason"]), (m.groups(), pm)
b = re.search(r'payload_memory="([^"]*)",payload_memory_reason="([^"]*)"', scrape)
assert b, "no payload_memory labels on rocecap_build_info: " + repr(scrape)
assert (b.group(1), b.group(2)) == (pm["kind"], pm["reason"]), (b.groups(), pm)
print(pm["kind"] + "\t" + pm["reason"] + "\t" + m.group(3))
PY
}
expect() { # $1: what, $2: kind<TAB>reason<TAB>seconds, $3: kind, $4: ERE the reason must match
  local kind reason secs
  IFS=$'\t' read -r kind reason secs <<<"$2"
  if [ "$kind" != "$3" ] || ! [[ $reason =~ ^$4$ ]]; then
    echo "FAIL: $1: payload memory $kind ($reason); want $3 with a reason matching '$4'" >&2
    return 1
  fi
  echo "ok: $1: $kind in $secs s: $reason"
}

gpu_found='GPU [0-9]+: .+'
# The first slab fails for want of a path, not of BAR1 space: no BAR1 hint.
cannot="$gpu_found found, but the NIC cannot register GPU memory: RDMA device sv0: GPU memory \
cannot be registered: dma-buf: .+; peer memory: ibv_reg_mr on the device pointer: .+ \
\[slab 1 of this run, [0-9.]+ [KMG]i?B, after 0 KiB registered\]"

config refused gpu
rc=0
daemon refused || rc=$?
if [ "$rc" != 3 ] || ! grep -qE "cannot start: capture\.payload_memory gpu: $cannot; use payload_memory auto or host" \
  "$work/refused.log" || [ -e "$work/out/refused" ]; then
  cat "$work/refused.log" >&2
  echo "FAIL: gpu without a registration path: exit $rc (want 3), both failures named, no run dir" >&2
  exit 1
fi
echo "ok: gpu without a registration path refused: $(grep -o 'cannot start: .*' "$work/refused.log")"

r=$(auto_run neither)
expect "auto without a registration path" "$r" host "auto: $cannot"

r=$(auto_run peer SOFTVERBS_PEERMEM=1)
expect "auto with peer memory" "$r" gpu \
  "auto: $gpu_found, registered with the NIC through peer memory \(1 slab, [0-9.]+ [KMG]i?B registered at once, as the run will\)"

r=$(auto_run dmabuf SOFTVERBS_DMABUF=ebadf)
case $r in
  gpu*) expect "auto with dma-buf" "$r" gpu \
    "auto: $gpu_found, registered with the NIC through dma-buf \(1 slab, [0-9.]+ [KMG]i?B registered at once, as the run will\)" ;;
  *) expect "auto with dma-buf offered by the NIC (this driver does not export)" "$r" host "auto: $cannot" ;;
esac
passed=1
