#!/usr/bin/env bash
# Runs the whole test suite on a fresh Debian 12 machine (as root: the integration tests
# build network namespaces; without root they report SKIPPED, never passed).
#  1. g++ build, warnings as errors: unit, integration and tool tests.
#  2. clang build with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer targets,
#     without CUDA (so CI builds with and without it where the toolkit is installed):
#     unit tests again under the sanitizers, and each fuzz target for a bounded time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
mkdir -p build

echo "== g++ build (build/ci), CUDA detected (AUTO)"
bash scripts/build.sh build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo
grep -E "^-- rocecap" build/ci.configure.log || true  # what was found: verbs, CUDA, ...
ctest --test-dir build/ci --output-on-failure --timeout 600

# Built without CUDA even where the toolkit is installed, so CI builds both ways.
echo "== clang ASan+UBSan+libFuzzer build (build/san), without CUDA"
bash scripts/build.sh build/san -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DROCECAP_SANITIZE=ON -DROCECAP_FUZZ=ON \
  -DROCECAP_BUILD_BENCH=OFF -DROCECAP_WITH_CUDA=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/san --output-on-failure --timeout 600 -L 'unit|fuzz|sanitize'
