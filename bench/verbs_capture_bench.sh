#!/usr/bin/env bash
# Verbs capture-thread cost per packet (issue #6), against softverbs' synthetic wire:
#   1. native: softverbs_bench_wire (the bare verbs loop, a baseline) and verbs_capture_bench
#      (rocecap's path) REPS times each, with 6 streams and with 1;
#   2. callgrind: instructions per packet of the capture loop, total and inside softverbs'
#      emulated poll/post (libibverbs.so.1 of build/softverbs/lib, which stands in for libmlx5),
#      from two fixed packet counts so that set-up cancels; the idle-loop iterations counted in
#      the measured loop are taken out with the cost of one idle iteration, itself the difference
#      of two fixed idle counts; and the 64-byte memcpy baseline of the same runs. The wire
#      holds frames for a posted WR there (SOFTVERBS_WIRE_PACE=hold=1): under valgrind it used to
#      fill every posted WR in one time slice and drop frames for the rest of it, a loss rate
#      that changed from run to run (1-3 %), and each loss took the sequencer's and the VTP
#      state's general paths, which moved the per-packet figure by up to ~20 (BENCHMARKS.md,
#      issue 30, ninth round). VCB_WIRE_DROPS=1 measures the old way.
# Usage: bench/verbs_capture_bench.sh <build-dir> [reps] [format] [streams]
#   format: codif (8 KiB data, the default), vdif or vdif-vtp (1 KiB data);
#   streams: the stream counts to run, quoted, default "6 1" (e.g. "6 64").
#   Needs CAP_NET_RAW and valgrind.
set -euo pipefail
build=$(realpath "${1:?usage: $0 <build-dir> [reps] [format] [streams]}")
reps=${2:-3}
format=${3:-codif}
stream_counts=${4:-6 1}
here=$(dirname "$(realpath "$0")")
bench=$build/bench/verbs_capture_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH=$build/softverbs/lib SOFTVERBS_DEVICES=svw=wire
export SOFTVERBS_SYSFS_ROOT=$tmp/sysfs

echo "== native (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for i in $(seq "$reps"); do
  echo "-- run $i"
  echo "softverbs_bench_wire: $("$build/tests/softverbs/softverbs_bench_wire" 3)"
  for streams in $stream_counts; do
    "$bench" --format "$format" --streams "$streams" --seconds 3 || {
      echo "verbs_capture_bench --streams $streams exited $? (above: why)" >&2
      exit 1
    }
  done
done

# callgrind <out> <toggled function> <bench args...>: the bench's stdout, profile in <out>. A
# bench that fails its own check under valgrind says why (its stdout, its message) and ends the
# script with that status: it used to end silently (stderr discarded, set -e).
callgrind() {
  local out=$1 fn=$2 rc=0
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="*$fn*" \
    --toggle-collect='*baseline_memcpy64*' "$bench" "$@" >"$out.stdout" 2>"$out.stderr" || rc=$?
  cat "$out.stdout"
  if [ "$rc" != 0 ]; then
    {
      echo "callgrind: verbs_capture_bench $* exited $rc"
      cat "$out.stdout"
      grep -v '^==' "$out.stderr" || true
    } >&2
    return "$rc"
  fi
}
# field <text> <key>: the value of key=value in text.
field() { grep -o "$2=[0-9.]*" <<<"$1" | head -1 | cut -d= -f2; }
split() { python3 "$here/callgrind_split.py" "$1" libibverbs capture_packets idle_polls \
  baseline_memcpy64; }

echo "== callgrind (instructions)"
[ "${VCB_WIRE_DROPS:-0}" = 1 ] || export SOFTVERBS_WIRE_PACE=hold=1
n1=100000 n2=200000 k1=2000 k2=4000
for streams in $stream_counts; do
  declare -A v=()
  for n in $n1 $n2; do
    log=$(callgrind "$tmp/cp.$n" capture_packets --format "$format" --streams "$streams" \
      --packets "$n" --idle-polls 100) || exit 1
    s=$(split "$tmp/cp.$n")
    v[cp$n]=$(field "$s" capture_packets) v[sv$n]=$(field "$s" foreign)
    v[base$n]=$(field "$s" baseline_memcpy64) v[empty$n]=$(field "$log" empty_polls)
    v[lost$n]=$(field "$log" lost_on_wire)
  done
  for k in $k1 $k2; do
    callgrind "$tmp/idle.$k" idle_polls --format "$format" --streams "$streams" --packets 20000 \
      --idle-polls "$k" >/dev/null || exit 1
    s=$(split "$tmp/idle.$k")
    v[idle$k]=$(field "$s" idle_polls) v[svidle$k]=$(field "$s" foreign)
  done
  python3 - "$streams" "$n1" "$n2" "$k1" "$k2" \
    "${v[cp$n1]}" "${v[cp$n2]}" "${v[sv$n1]}" "${v[sv$n2]}" "${v[empty$n1]}" "${v[empty$n2]}" \
    "${v[idle$k1]}" "${v[idle$k2]}" "${v[svidle$k1]}" "${v[svidle$k2]}" \
    "${v[base$n1]}" "${v[base$n2]}" "$format" "${v[lost$n1]:-0}" "${v[lost$n2]:-0}" <<'PY'
import sys
s, n1, n2, k1, k2, cp1, cp2, sv1, sv2, e1, e2, i1, i2, si1, si2, b1, b2 = map(int, sys.argv[1:18])
lost1, lost2 = sys.argv[19:21]
idle = (i2 - i1) / (k2 - k1)
sv_idle = (si2 - si1) / (k2 - k1)
dn = n2 - n1
total = (cp2 - cp1) / dn
busy = ((cp2 - e2 * idle) - (cp1 - e1 * idle)) / dn
sv = ((sv2 - e2 * sv_idle) - (sv1 - e1 * sv_idle)) / dn
print(f"format={sys.argv[18]} streams={s}: instructions/packet {total:.1f} as measured (empty polls {e1}, {e2}); "
      f"busy {busy:.1f} = rocecap {busy - sv:.1f} + softverbs poll/post {sv:.1f}; "
      f"idle iteration {idle:.1f} (softverbs {sv_idle:.1f}); "
      f"baseline memcpy64 {(b2 - b1) / dn:.1f}/copy; frames lost on the wire {lost1}, {lost2}")
PY
  unset v
done
