#!/usr/bin/env bash
# End to end through the verbs synthetic wire (issue 12): rocecapd (VerbsSource -> Ingest ->
# rings -> writer pool) on softverbs' synthetic wire paced by SOFTVERBS_WIRE_PACE, at a ladder
# of frame rates per stream, with the writer pool writing raw files to TARGET ("pool") and
# writer-less ("none": rings drained without writing), A B alternated per rate and round;
# prints per run frames sent/delivered, ring-full drops, NIC drops, other loss, writer and
# capture CPU, and per mode the highest rate that lost nothing (verbs_pool_bench.py).
# Records the load average before and after.
# Usage (as root: raw QPs need CAP_NET_RAW; makes and removes a network namespace):
#   cmake --build build/ci --target rocecapd softverbs
#   bench/verbs_pool_bench.sh build/ci /dev/shm [verbs_pool_bench.py options...]
set -euo pipefail
build=${1:?usage: $0 <build-dir> <target-dir> [options]}
target=${2:?usage: $0 <build-dir> <target-dir> [options]}
shift 2
here=$(dirname "$(realpath "$0")")
if [ ! -x "$build/daemon/rocecapd" ] || [ ! -e "$build/softverbs/lib/libibverbs.so.1" ]; then
  echo "build rocecapd and softverbs in $build first" >&2
  exit 1
fi
echo "== before: $(uptime)"
python3 "$here/verbs_pool_bench.py" "$build" "$target" "$@"
echo "== after: $(uptime)"
