#!/usr/bin/env bash
# Writer benchmarks of issue 12 (results in BENCHMARKS.md, "Writers: paths, io_uring, pool"):
#   1. cpu: one thread, 8298-byte frames from ring slots into files on tmpfs through each write
#      path, against memcpy of the same bytes in the same run (writer_bench cpu), on /dev/shm
#      and, as root, on a tmpfs mounted with huge=always (2 MiB pages: the page cache's
#      per-4-KiB cost out of the way);
#   2. aggregate: N = 1, 2, 4 directories under DIR (one per target; on this VM all on the one
#      disk), one writer thread per directory with O_DIRECT through io_uring, against fio
#      writing the same total with O_DIRECT (io_uring, 1 MiB blocks, 4 in flight, one job per
#      directory, end_fsync), alternated REPS times.
# Usage: bench/writer_bench.sh <build-dir> [DIR=/var/tmp] [GiB per run=2] [reps=3]
set -euo pipefail
build=$(realpath "${1:?usage: $0 <build-dir> [dir] [gib] [reps]}")
base=${2:-/var/tmp}
gib=${3:-2}
reps=${4:-3}
bench=$build/bench/writer_bench
work=$(mktemp -d "$base/rocecap-writer-bench.XXXXXX")
shm=$(mktemp -d /dev/shm/rocecap-writer-bench.XXXXXX)
huge=""
cleanup() {
  [ -n "$huge" ] && umount "$huge" 2>/dev/null && rmdir "$huge"
  rm -rf "$work" "$shm"
}
trap cleanup EXIT

echo "== cpu (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
"$bench" cpu "$shm" 5
if [ "$(id -u)" = 0 ]; then
  huge=$(mktemp -d /tmp/rocecap-writer-bench-huge.XXXXXX)
  if mount -t tmpfs -o size=2g,huge=always tmpfs "$huge"; then
    "$bench" cpu "$huge" 5
  else
    rmdir "$huge"
    huge=""
  fi
fi

echo "== aggregate, $gib GiB per run under $base (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for n in 1 2 4; do
  dirs=()
  for i in $(seq "$n"); do
    mkdir -p "$work/t$i"
    dirs+=("$work/t$i")
  done
  for r in $(seq "$reps"); do
    "$bench" aggregate "${dirs[@]}" --gib "$gib" --path uring
    rm -f "$work"/t*/*
    per_job=$(echo "$gib * 1024 / $n" | bc)
    fio --name=agg --directory="$(IFS=:; echo "${dirs[*]}")" --rw=write --bs=1M --direct=1 \
      --ioengine=io_uring --iodepth=4 --size="${per_job}M" --numjobs="$n" --end_fsync=1 \
      --group_reporting --output-format=terse --terse-version=3 |
      awk -F';' -v n="$n" '{ printf "fio targets=%d GB/s=%.3f\n", n, $48 * 1024 / 1e9 }'
    rm -f "$work"/t*/*
  done
done
