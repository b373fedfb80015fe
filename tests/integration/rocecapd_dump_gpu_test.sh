#!/usr/bin/env bash
# Triggered dumps (rocecapd_dump_test.sh with softverbs) from GPU payload rings: payload_memory
# gpu, softverbs registering the cudaMalloc'd slabs through its peer-memory emulation
# (SOFTVERBS_PEERMEM=1). Retained slots stay in GPU memory until the dump writer stages them to
# the host with CUDA copies; every dump file must still be exactly its window of the continuous
# raw file.
# usage: rocecapd_dump_gpu_test.sh CUDA_BUILT(ON|OFF) ROCECAPD ROCECAP SOFTVERBS_LIB_DIR
# SKIPPED (77) where there is no NVIDIA driver or the build has no CUDA: never passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${1:?usage}
shift
[ "$cuda" = ON ] || { echo "SKIP: built without CUDA"; exit 77; }
compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null ||
  { echo "SKIP: no NVIDIA GPU driven on this host (/proc/driver/nvidia/gpus is empty)"; exit 77; }
export E2E_PAYLOAD_MEMORY=gpu SOFTVERBS_PEERMEM=1
exec bash "$here/rocecapd_dump_test.sh" "$@"
