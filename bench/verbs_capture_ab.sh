#!/usr/bin/env bash
# Native A/B of the verbs capture loop (issue 30, item 2): two builds of verbs_capture_bench
# (say, the tree before a change and after it, both configured alike), alternated ROUNDS times
# against softverbs' synthetic wire, 6 streams and 1, 3 s each, with softverbs_bench_wire (the
# bare verbs loop, no rocecap) as the baseline of each round; then PINNED runs of 6 streams with
# the bench's three threads (capture, writer, wire) held on three cores. Prints one line per run:
# which build, streams, and the bench's capture/busy figures (busy: idle polls taken out).
# Exits 1 when any run failed the bench's own check (each is named where it happened).
# Usage: bench/verbs_capture_ab.sh <build-before> <build-after> [rounds] [pinned] [cpus] [format]
#   (as root: softverbs' wire needs CAP_NET_RAW; cpus default 2-4; format codif (default),
#   vdif or vdif-vtp, as verbs_capture_bench --format: both builds must know --format)
set -euo pipefail
before=$(realpath "${1:?usage: $0 <build-before> <build-after> [rounds] [pinned] [cpus]}")
after=$(realpath "${2:?usage: $0 <build-before> <build-after> [rounds] [pinned] [cpus]}")
rounds=${3:-4} pinned=${4:-3} cpus=${5:-2-4} format=${6:-codif}
# Builds from before --format existed take only CODIF: they are run without the option.
fmt=()
[ "$format" = codif ] || fmt=(--format "$format")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SOFTVERBS_DEVICES=svw=wire SOFTVERBS_SYSFS_ROOT=$tmp/sysfs

# one <label> <build> <bench args...>: one run, its figures on one line; a failed run says why.
# With --pin CPUS (last) the run is started under taskset.
one() {
  local label=$1 b=$2 out rc=0 pin=()
  shift 2
  if [ "${*: -2:1}" = --pin ]; then
    pin=(taskset -c "${*: -1}")
    set -- "${@:1:$(($# - 2))}"
  fi
  out=$(LD_LIBRARY_PATH=$b/softverbs/lib timeout 60 "${pin[@]}" "$b/bench/verbs_capture_bench" "$@" \
    2>&1) || rc=$?
  echo "$label ${pin[*]} $* | $(grep -E '^(capture|busy|note)' <<<"$out" | tr '\n' '|')"
  # A failed check is reported and the A/B goes on (a binary from before fbd3772 fails its check
  # on timeline outliers after wire drops, see BENCHMARKS.md); the script then exits 1.
  if [ "$rc" != 0 ]; then
    echo "  ^ exited $rc: $(grep -E '^verbs_capture_bench:|^check:' <<<"$out" | tr '\n' ' ')"
    failed=1
  fi
}
failed=0

echo "== $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  echo "-- round $i (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "bench_wire: $(LD_LIBRARY_PATH=$after/softverbs/lib "$after/tests/softverbs/softverbs_bench_wire" 3)"
  for streams in 6 1; do
    one before "$before" "${fmt[@]}" --streams "$streams" --seconds 3
    one after "$after" "${fmt[@]}" --streams "$streams" --seconds 3
  done
done
echo "-- pinned to CPUs $cpus"
for i in $(seq "$pinned"); do
  one before "$before" "${fmt[@]}" --streams 6 --seconds 3 --pin "$cpus"
  one after "$after" "${fmt[@]}" --streams 6 --seconds 3 --pin "$cpus"
done
[ "$failed" = 0 ] || { echo "some runs failed their check (above)"; exit 1; }
