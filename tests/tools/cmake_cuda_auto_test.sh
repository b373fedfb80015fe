#!/usr/bin/env bash
# CMake's choice of CUDA against a toolkit older than rocecap's minimum (11.7: the dma-buf
# export, cuMemGetHandleForAddressRange): a fake toolkit whose nvcc says 11.5 (what
# FindCUDAToolkit reads: `nvcc --version`, cuda_runtime.h, libcudart_static.a).
#   - ROCECAP_WITH_CUDA=AUTO: the configure succeeds without CUDA (summary cuda=OFF) and says why,
#     naming the version found and the minimum
#   - ROCECAP_WITH_CUDA=ON: the configure fails, naming both
# Only configures (no build): a few seconds per run.
# usage: cmake_cuda_auto_test.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT}
work=$(mktemp -d /tmp/rocecap-cmake-cuda.XXXXXX)
trap 'rm -rf "$work"' EXIT

toolkit=$work/cuda-11.5
mkdir -p "$toolkit/bin" "$toolkit/include" "$toolkit/lib64"
cat >"$toolkit/bin/nvcc" <<'NVCC'
#!/bin/sh
# Answers what FindCUDAToolkit asks: the version (--version); nothing for -v.
if [ "$1" = --version ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver"
  echo "Cuda compilation tools, release 11.5, V11.5.119"
fi
exit 0
NVCC
chmod +x "$toolkit/bin/nvcc"
echo "#define CUDART_VERSION 11050" >"$toolkit/include/cuda_runtime.h"
ar rc "$toolkit/lib64/libcudart_static.a"
: >"$toolkit/lib64/libcudart.so"

configure() { # $1: ROCECAP_WITH_CUDA; output in $work/$1.log; returns cmake's status
  cmake -S "$root" -B "$work/build-$1" -DCUDAToolkit_ROOT="$toolkit" -DROCECAP_WITH_CUDA="$1" \
    -DROCECAP_BUILD_BENCH=OFF >"$work/$1.log" 2>&1
}

fail() {
  echo "FAIL: $*"
  cat "$work/AUTO.log" "$work/ON.log" 2>/dev/null | tail -40
  exit 1
}

rc=0
configure AUTO || rc=$?
[ "$rc" = 0 ] || fail "AUTO with CUDA 11.5: configure exited $rc (a build without CUDA expected)"
grep -q "cuda=OFF" "$work/AUTO.log" || fail "AUTO: the summary does not say cuda=OFF"
grep -qF "CUDA toolkit 11.5.119 is older than 11.7" "$work/AUTO.log" ||
  fail "AUTO: the configure does not say why CUDA is left out"
echo "ok: AUTO builds without CUDA: $(grep -F 'older than 11.7' "$work/AUTO.log" | sed 's/^-- //')"

rc=0
configure ON || rc=$?
[ "$rc" != 0 ] || fail "ON with CUDA 11.5: the configure succeeded"
grep -qF "CUDA toolkit 11.5.119 is older than 11.7" "$work/ON.log" ||
  fail "ON: the error does not name the version and the minimum"
echo "ok: ON refuses CUDA 11.5"
