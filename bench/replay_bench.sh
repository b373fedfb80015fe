#!/usr/bin/env bash
# Capture pipeline end to end: replays a pcap of 8298-byte CODIF frames (6 streams, about
# 1.5 GB, made by `rocecap gen --pcap` on tmpfs) through
#   1. dd: the file to /dev/null and to a file on the same tmpfs (copy baselines);
#   2. build/bench/replay_bench: memcpy baseline, libpcap read only, pipeline with the output
#      discarded, pipeline into raw files on tmpfs (one thread, see replay_bench.cpp);
#   3. rocecapd with a pcap-file run file writing raw files to tmpfs (two threads, whole
#      process: start-up, replay, fsync, manifest), timed with date.
# Each part runs REPS times (default 5); the figures to report are the medians.
# Usage: bench/replay_bench.sh <build-dir> [reps]   (from the repository root)
# Needs ~2x the pcap size free in /dev/shm (override with ROCECAP_BENCH_TMPFS=dir on tmpfs).
# ROCECAP_BENCH_FRAMES: frames per stream (30000); ROCECAP_BENCH_RING_DEPTH: rocecapd's slots
# per stream (4096, its default).
set -euo pipefail
build=$(realpath "${1:?usage: $0 <build-dir> [reps]}")
reps=${2:-5}
frames_per_stream=${ROCECAP_BENCH_FRAMES:-30000}
tmpfs=${ROCECAP_BENCH_TMPFS:-/dev/shm}
ring_depth=${ROCECAP_BENCH_RING_DEPTH:-4096}  # rocecapd's slots per stream (its default)
work=$(mktemp -d "$tmpfs/rocecap-replay.XXXXXX")
trap 'rm -rf "$work"' EXIT

sources=192.0.2.11,192.0.2.12,192.0.2.13,192.0.2.14,192.0.2.15,192.0.2.16
pcap=$work/replay.pcap
"$build/tools/rocecap" gen --groups 239.17.0.1:36001 --sources "$sources" \
  --frames "$frames_per_stream" --rate 100000 --payload-bytes 8192 --nchan 4 --nbits 16 \
  --complex --station AT --seed 1 --foreign-prob 0 --pcap "$pcap" --summary "$work/gen.json"
bytes=$(stat -c %s "$pcap")
echo "pcap: $pcap, $bytes bytes, $((6 * frames_per_stream)) frames of 8298 bytes"

echo "== dd (MB/s = 10^6 bytes/s of the pcap file)"
for i in $(seq "$reps"); do
  to_null=$(dd if="$pcap" of=/dev/null bs=1M 2>&1 | tail -1)
  to_tmpfs=$(dd if="$pcap" of="$work/copy" bs=1M 2>&1 | tail -1)
  rm -f "$work/copy"
  echo "dd run $i: to /dev/null: $to_null | to tmpfs: $to_tmpfs"
done

echo "== replay_bench"
ROCECAP_REPLAY_PCAP=$pcap ROCECAP_REPLAY_OUT=$work "$build/bench/replay_bench" \
  --benchmark_repetitions="$reps" --benchmark_counters_tabular=true

echo "== rocecapd (pcap-file replay, raw files on tmpfs, ring_depth $ring_depth)"
cat >"$work/run.yaml" <<EOF
run:
  name: replay
capture:
  backend: pcap-file
  pcap_file: $pcap
  replay_pace: fast
  payload_memory: host
  ring_depth: $ring_depth
  interfaces:
    - name: rec0
      groups: ["239.17.0.1:36001"]
streams:
  format: codif
  antennas:
$(i=0; for s in ${sources//,/ }; do i=$((i + 1)); echo "    - { name: ant$i, source: $s }"; done)
output:
  directory: $work/out
  formats: [raw]
metrics:
  enabled: false
logging:
  level: warn
EOF
for i in $(seq "$reps"); do
  rm -rf "$work/out"
  t0=$(date +%s.%N)
  "$build/daemon/rocecapd" --config "$work/run.yaml" >"$work/daemon.log" 2>&1 || {
    cat "$work/daemon.log"
    exit 1
  }
  t1=$(date +%s.%N)
  # Frames the capture side dropped are still in the raw files, as fill frames (time-aligned
  # output), so the manifest's counters say how many real frames went through.
  read -r packets drops fill < <(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(sum(s["packets"] for s in m["streams"]), sum(i["ring_full_drops"] for i in m["interfaces"]),
      sum(s["fill_frames"] for s in m["streams"]))' "$work/out/replay/manifest.json")
  awk -v t0="$t0" -v t1="$t1" -v b="$bytes" -v p="$packets" -v d="$drops" -v f="$fill" \
    -v n=$((6 * frames_per_stream)) -v i="$i" 'BEGIN {
      s = t1 - t0
      printf "rocecapd run %d: %.3f s wall, %d of %d frames placed (%.3f Mpackets/s, %.3f GB/s of 8298-byte frames), ring_full_drops %d, fill frames %d\n",
        i, s, p, n, p / s / 1e6, p * 8298 / s / 1e9, d, f }'
done
