#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh DIR [cmake options...]
# Used by test.sh and demo.sh; warnings are errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1
shift
cmake -S "$root" -B "$dir" -DROCECAP_WERROR=ON "$@" >"$dir.configure.log" 2>&1 || {
  cat "$dir.configure.log"
  exit 1
}
# ROCECAP_BUILD_TARGETS="a b" builds only those targets (the demo needs two).
# shellcheck disable=SC2086
cmake --build "$dir" -j"$(nproc)" ${ROCECAP_BUILD_TARGETS:+--target $ROCECAP_BUILD_TARGETS}
