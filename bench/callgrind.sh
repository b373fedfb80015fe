#!/usr/bin/env bash
# Instructions per packet of each parse_bench kernel under callgrind: runs every benchmark with
# two fixed iteration counts and divides the difference, so set-up cost cancels out.
# Usage: bench/callgrind.sh <build-dir>
set -euo pipefail
bench=${1:?usage: $0 <build-dir>}/bench/parse_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # <benchmark> <iterations> -> instructions executed inside the benchmark function
  ROCECAP_BENCH_ITERATIONS=$2 valgrind --tool=callgrind --callgrind-out-file="$tmp/out" \
    --toggle-collect="*$1*" "$bench" --benchmark_filter="^$1(/|\$)" >/dev/null 2>&1
  callgrind_annotate "$tmp/out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
for b in BM_Baseline_Memcpy64 BM_ParseUdp BM_ParseDecodeValidateIndex BM_ParseFrameIndexer \
  BM_FrameIndexerOnly BM_VdifParseDecodeValidateIndex BM_VdifDecodeValidateOnly; do
  lo=$(count "$b" 100000)
  hi=$(count "$b" 200000)
  echo "$b $(( (hi - lo) / 100000 )) instructions/packet"
done
