#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian 12 machine (as root: the integration tests
# build network namespaces; without root they report SKIPPED, never passed).
#  1. g++ build, warnings as errors: unit, integration and tool tests.
#  2. clang build with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer targets,
#     without CUDA (so CI builds with and without it where the toolkit is installed):
#     unit tests again under the sanitizers, and each fuzz target for a bounded time.
#  3. g++ build of the CUDA-using targets only against Debian 12's own CUDA 11.8
#     (nvidia-cuda-toolkit, installed by install-deps.sh --debian-cuda), warnings as errors,
#     next to the toolkit stage 1 found (CUDA 13 in /usr/local/cuda on our machines): the GPU
#     unit tests and the no-GPU payload-memory test run against that build's CUDA runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh --debian-cuda
mkdir -p build

# With Debian's nvcc now in /usr/bin, an nvcc on PATH would decide which toolkit AUTO finds;
# where the NVIDIA toolkit is installed in /usr/local/cuda (CUDA 13 on our machines) stage 1
# names it, so the three stages are CUDA 13, no CUDA and CUDA 11.8.
cuda_root=()
[ ! -x /usr/local/cuda/bin/nvcc ] || cuda_root=(-DCUDAToolkit_ROOT=/usr/local/cuda)
echo "== g++ build (build/ci), CUDA detected (AUTO) ${cuda_root[*]}"
bash scripts/build.sh build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_root[@]}"
grep -E "^-- rocecap" build/ci.configure.log || true  # what was found: verbs, CUDA, ...
ctest --test-dir build/ci --output-on-failure --timeout 600

# Built without CUDA even where the toolkit is installed, so CI builds both ways.
echo "== clang ASan+UBSan+libFuzzer build (build/san), without CUDA"
bash scripts/build.sh build/san -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DROCECAP_SANITIZE=ON -DROCECAP_FUZZ=ON \
  -DROCECAP_BUILD_BENCH=OFF -DROCECAP_WITH_CUDA=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/san --output-on-failure --timeout 600 -L 'unit|fuzz|sanitize'

# CMake's FindCUDAToolkit takes the toolkit whose root is given, here Debian's (nvcc in
# /usr/bin, headers in /usr/include, libcudart_static.a in /usr/lib/x86_64-linux-gnu), even with
# /usr/local/cuda on PATH. Only what uses CUDA is built, to keep this stage short.
echo "== g++ build (build/cuda118) against Debian's CUDA 11.8, CUDA-using targets only"
ROCECAP_BUILD_TARGETS="rocecap_memory rocecap_writers gpu_memory_test cuda_copy_engine_test softverbs rocecapd" \
  bash scripts/build.sh build/cuda118 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCECAP_WITH_CUDA=ON \
  -DCUDAToolkit_ROOT=/usr -DROCECAP_BUILD_BENCH=OFF
grep -E "^-- rocecap" build/cuda118.configure.log
grep -qE "^-- rocecap .* cuda=ON\(11\.8\." build/cuda118.configure.log || {
  echo "FAIL: build/cuda118 was not built against Debian's CUDA 11.8 (see build/cuda118.configure.log)"
  exit 1
}
# The driver is reached with dlopen at run time; a linked libcuda stub would stop rocecapd
# from starting on hosts without the NVIDIA driver.
if ldd build/cuda118/daemon/rocecapd | grep -q libcuda; then
  echo "FAIL: build/cuda118/daemon/rocecapd links libcuda"
  exit 1
fi
# Without a GPU these SKIP the device tests and check every CUDA entry point's error instead.
build/cuda118/tests/unit/gpu_memory_test
build/cuda118/tests/unit/cuda_copy_engine_test
rc=0
bash tests/integration/rocecapd_payload_memory_test.sh build/cuda118/daemon/rocecapd \
  build/cuda118/softverbs/lib ON || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit "$rc"
