#!/usr/bin/env bash
# What stops the disk during a run: every 50 ms, the block device's write rate and the kernel
# stack of each rocecapd thread found in uninterruptible sleep (D state), so a dip in the
# disk's rate can be matched with what a thread waited on (fsync -> blkdev_issue_flush,
# a rename -> blkdev_issue_discard, ...). Run it beside a capture (BENCHMARKS.md, "The
# manifest's fsync"); it ends after SECONDS.
#
# usage: bench/disk_stall_sample.sh DEVICE SECONDS [PROCESS]     (as root: /proc/PID/task/*/stack)
#   DEVICE   block device name under /sys/block (vda, nvme0n1)
#   PROCESS  process name to watch [rocecapd]
# Prints one line per interval: seconds since start, MB/s written, and `[thread: kernel
# function, ...]` for each thread in D state (io_uring workers, iou-wrk-*, are left out: they
# wait in the device as a matter of course).
set -euo pipefail
dev=${1:?usage: $0 DEVICE SECONDS [PROCESS]}
seconds=${2:?usage: $0 DEVICE SECONDS [PROCESS]}
name=${3:-rocecapd}
stat=/sys/block/$dev/stat
[ -r "$stat" ] || { echo "no $stat" >&2; exit 2; }
start=$(date +%s.%N)
prev_t=$start
prev_s=$(awk '{print $7}' "$stat")
while :; do
  sleep 0.05
  t=$(date +%s.%N)
  s=$(awk '{print $7}' "$stat")  # sectors written (Documentation/block/stat.rst)
  waits=""
  if p=$(pgrep -x "$name" | head -1); then
    for task in /proc/"$p"/task/*; do
      comm=$(cat "$task/comm" 2>/dev/null) || continue
      case $comm in iou-wrk-*) continue ;; esac
      [ "$(awk '{print $3}' "$task/stat" 2>/dev/null)" = D ] || continue
      top=$(grep -v -e '^\[<0>\] *$' "$task/stack" 2>/dev/null | sed -n '1,3s/.*\] \([a-z_0-9.]*\)+.*/\1/p' | paste -sd, -)
      waits+=" [$comm: $top]"
    done
  fi
  awk -v t="$t" -v t0="$start" -v pt="$prev_t" -v s="$s" -v ps="$prev_s" -v w="$waits" \
    'BEGIN { printf "%7.2f %6.0f MB/s%s\n", t - t0, (s - ps) * 512 / (t - pt) / 1e6, w }'
  prev_t=$t prev_s=$s
  awk -v t="$t" -v t0="$start" -v n="$seconds" 'BEGIN { exit !(t - t0 >= n) }' && break
done
