#!/usr/bin/env bash
# "Capture pipeline end to end" (rocecapd_verbs_test.sh full) with payload_memory: gpu: softverbs
# registers the cudaMalloc'd payload slabs through its peer-memory emulation
# (SOFTVERBS_PEERMEM=1) and scatters payloads into them with CUDA copies; the files must be
# byte-identical to the generator's streams, as with host memory.
# usage: rocecapd_verbs_gpu_test.sh CUDA_BUILT(ON|OFF) ROCECAPD ROCECAP SOFTVERBS_LIB_DIR
# SKIPPED (77) where there is no NVIDIA driver or the build has no CUDA: never passed there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${1:?usage}
shift
[ "$cuda" = ON ] || { echo "SKIP: built without CUDA"; exit 77; }
# /proc/driver/nvidia/gpus/<bus id> exists only while the NVIDIA kernel module drives a GPU.
# Not /dev/nvidiactl: libcuda (Debian's libcuda1, pulled in by nvidia-cuda-dev) creates that
# node itself when a CUDA program runs as root, driver or not.
compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null ||
  { echo "SKIP: no NVIDIA GPU driven on this host (/proc/driver/nvidia/gpus is empty)"; exit 77; }
export E2E_PAYLOAD_MEMORY=gpu SOFTVERBS_PEERMEM=1
exec bash "$here/rocecapd_verbs_test.sh" full "$@"
