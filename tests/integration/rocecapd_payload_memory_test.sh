#!/usr/bin/env bash
# rocecapd with capture.backend verbs (softverbs on the loopback device of a network namespace
# made for the test) on a host without a usable GPU:
#   payload_memory gpu   refused before anything starts: exit 3, the message names what is
#                        missing (the failing CUDA call, or a build without CUDA), no run dir;
#   payload_memory auto  runs on host memory; the log, the manifest and rocecap_build_info all
#                        give kind host and the same reason, "auto: no usable GPU: ...".
# usage: rocecapd_payload_memory_test.sh ROCECAPD SOFTVERBS_LIB_DIR CUDA_BUILT(ON|OFF)
# As root (exit 77 otherwise); exit 77 too on a host with an NVIDIA GPU, where this is not the
# behaviour to expect.
set -euo pipefail
rocecapd=${1:?usage}
sv_lib=${2:?usage}
cuda=${3:?usage}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespace)"; exit 77; }
# A GPU driven by the NVIDIA kernel module (not /dev/nvidiactl: libcuda creates that node itself
# when run as root, with or without a driver).
if [ "$cuda" = ON ] && compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null; then
  echo "SKIP: an NVIDIA GPU is present; this test is the no-GPU behaviour"
  exit 77
fi
[ -e "$sv_lib/libibverbs.so.1" ] || { echo "FAIL: no softverbs in $sv_lib"; exit 1; }
# With CUDA the cause is the runtime's own error by name (cudaErrorNoDevice where the driver
# library is installed without a GPU, cudaErrorInsufficientDriver where it is older than the
# runtime, ...; then with the driver branch this build's runtime needs); as an extended regular
# expression.
if [ "$cuda" = ON ]; then
  cause='cudaGetDeviceCount: [^;()]+ \(cudaError[A-Za-z]+\)(: no NVIDIA driver, or an older one: this build.s CUDA [0-9]+\.[0-9]+ runtime needs an NVIDIA driver of branch [0-9]+ or later)?'
else
  cause='built without CUDA \(the CUDA toolkit was not found or ROCECAP_WITH_CUDA=OFF\)'
fi

ns=rcpm$$
work=$(mktemp -d /tmp/rocecap-payload-memory.XXXXXX)
passed=0
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up

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
daemon() { # $1: run name; rocecapd as shipped, softverbs swapped in by the loader path
  ip netns exec "$ns" env LD_LIBRARY_PATH="$sv_lib" SOFTVERBS_DEVICES=sv0=lo \
    SOFTVERBS_SYSFS_ROOT="$work/sysfs" ROCECAP_SYSFS_ROOT="$work/sysfs" \
    "$rocecapd" --config "$work/$1.yaml" 2>"$work/$1.log"
}
mkdir -p "$work/sysfs"

config gpu gpu
rc=0
daemon gpu || rc=$?
want="cannot start: capture\.payload_memory gpu: no usable GPU: $cause; use payload_memory auto or host"
if [ "$rc" != 3 ] || ! grep -qE "$want" "$work/gpu.log" || [ -e "$work/out/gpu" ]; then
  cat "$work/gpu.log" >&2
  echo "FAIL: gpu: exit $rc (want 3), message must match '$want', no run directory" >&2
  exit 1
fi
echo "ok: gpu refused: $(grep -oE "$want" "$work/gpu.log")"

config auto auto
daemon auto &
pid=$!
scrape=""
for _ in $(seq 1 40); do
  scrape=$(ip netns exec "$ns" python3 -c '
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=1).read().decode())' \
    2>/dev/null | grep '^rocecap_build_info' || true)
  [ -n "$scrape" ] && break
  sleep 0.1
done
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || { cat "$work/auto.log" >&2; echo "FAIL: auto: exit $rc (want 0)" >&2; exit 1; }
python3 - "$work/out/auto/manifest.json" "$work/auto.log" "$cause" "$scrape" <<'PY'
import json, re, sys
manifest, log, cause, scrape = sys.argv[1:]
pm = json.load(open(manifest))["payload_memory"]
assert pm["kind"] == "host", pm
assert re.fullmatch("auto: no usable GPU: " + cause, pm["reason"]), (pm, cause)
logged = "payload memory: host (" + pm["reason"] + ")"
assert logged in open(log).read(), "log lacks: " + logged
m = re.search(r'payload_memory="([^"]*)",payload_memory_reason="([^"]*)"', scrape)
assert m, "no payload_memory labels on rocecap_build_info: " + repr(scrape)
assert (m.group(1), m.group(2)) == ("host", pm["reason"]), m.groups()
print("ok: auto runs on host memory; log, manifest and build info say:", pm["reason"])
PY
passed=1
