#!/usr/bin/env bash
# A GPU pipeline stage behind rocecapd (doc/consumers.md): "Capture pipeline end to end"
# (rocecapd_verbs_test.sh full, softverbs peer memory as rocecapd_verbs_gpu_test.sh) with
# payload_memory gpu and a consumers section; rocecap_gpu_power attaches before capture starts,
# maps every stream's GPU payload slab through the CUDA IPC handle rocecapd sends, and sums the
# power per channel with a CUDA kernel straight from the slab. Its sums and frame counts must
# equal numpy's over the raw files (gpu_power_check.py), and the files must be as without it.
# usage: rocecapd_consumers_gpu_test.sh CUDA_BUILT(ON|OFF) ROCECAPD ROCECAP SOFTVERBS_LIB_DIR GPU_POWER
# SKIPPED (77) where there is no NVIDIA driver, no CUDA in the build or no rocecap_gpu_power.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${1:?usage}
gpu_power=${5:-}
[ "$cuda" = ON ] || { echo "SKIP: built without CUDA"; exit 77; }
[ -x "$gpu_power" ] || { echo "SKIP: rocecap_gpu_power not built (no CUDA compiler CMake can use)"; exit 77; }
compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null ||
  { echo "SKIP: no NVIDIA GPU driven on this host (/proc/driver/nvidia/gpus is empty)"; exit 77; }
export E2E_PAYLOAD_MEMORY=gpu SOFTVERBS_PEERMEM=1 E2E_GPU_CONSUMER=$gpu_power
# 3000 frames per stream at 500/s (3000 datagrams/s in all): softverbs waits for each of its
# GPU writes to land before it completes the frame (tests/softverbs/lib/cuda.cpp), and with
# rocecap_gpu_power's kernels time-sliced on the same GPU that wait was ~200 us on an H200
# (about 4500 frames/s; at 6000/s the emulated NIC's socket overflowed).
exec bash "$here/../integration/rocecapd_verbs_test.sh" full "$2" "$3" "$4" 3000 500
