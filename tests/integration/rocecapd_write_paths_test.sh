#!/usr/bin/env bash
# Integration: every write path of the writers gives the same files (issues 12 and 17).
#
# One `rocecap gen --pcap` recording (3 antennas x 2 groups, with drops, swaps, duplicates and
# bad frames) is replayed by rocecapd (backend pcap-file) several times:
#   ref     copy into the staging buffer + write() (ROCECAP_WRITEV=off ROCECAP_IO_URING=off):
#           the path before these issues
#   writev  raw and pcap frames written with writev straight from the ring slots
#   direct  direct_io with io_uring (several O_DIRECT writes in flight), raw + codifhdr over 3
#           writer threads (with pcap output the one interface is one thread's: the loader
#           refuses more threads than that, issue 23)
#   direct_write  direct_io with io_uring forced off (ROCECAP_IO_URING=off): write(), pcap too
#   pool    formats raw + codifhdr (no pcap, so the interface splits) over 4 writer threads
# and every file of every run must be byte-identical to the ref run's file of the same name;
# the log must name the path taken. Needs no privileges.
#
# usage: rocecapd_write_paths_test.sh ROCECAPD ROCECAP [FRAMES_PER_STREAM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP [FRAMES_PER_STREAM]}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP [FRAMES_PER_STREAM]}
frames=${3:-6000}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

# Disk-backed when possible: tmpfs before Linux 6.6 refuses O_DIRECT (the run then writes
# buffered and says so; the comparison still holds).
base=/var/tmp
[ -d "$base" ] || base=/tmp
work=$(mktemp -d "$base/rocecap-write-paths-test.XXXXXX")
passed=0
finish() {
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT

e2e_gen_args "$frames"
"$ROCECAP" "${E2E_GEN[@]}" --pcap "$work/sent.pcap" --summary "$work/summary.json" >/dev/null

# run NAME FORMATS EXTRA_OUTPUT [ENV...]: replays into $work/NAME/out.
run() {
  local name=$1 formats=$2 extra=$3
  shift 3
  mkdir -p "$work/$name"
  E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/$name/out \
    E2E_FORMATS=$formats E2E_ROTATE=4MiB E2E_EXTRA_OUTPUT=$extra e2e_config "$work/$name/run.yaml"
  if ! env "$@" "$ROCECAPD" --config "$work/$name/run.yaml" 2>"$work/$name/log"; then
    echo "FAIL: rocecapd ($name) exited $?:"
    cat "$work/$name/log"
    exit 1
  fi
  if grep -E "runtime error|AddressSanitizer|LeakSanitizer|ThreadSanitizer" "$work/$name/log"; then
    echo "FAIL: the sanitizers reported errors in rocecapd ($name)"
    exit 1
  fi
  grep -q "stopping: capture ended" "$work/$name/log" || {
    echo "FAIL: rocecapd ($name) did not replay to the end:"
    cat "$work/$name/log"
    exit 1
  }
  echo "$name: $(grep -o 'output writes: .*' "$work/$name/log")"
}

# same NAME [PATTERN]: NAME's files (matching PATTERN) are the ref run's, byte for byte.
same() {
  local name=$1 pattern=${2:-*} n=0 f
  while IFS= read -r f; do
    n=$((n + 1))
    cmp -s "$work/ref/out/e2e/$f" "$work/$name/out/e2e/$f" || {
      echo "FAIL: $name/$f differs from ref/$f"
      exit 1
    }
  done < <(cd "$work/ref/out/e2e" && find . -type f -name "$pattern" ! -name 'manifest*' ! -name '.*' | sort)
  [ "$n" -gt 0 ] || {
    echo "FAIL: no files matching $pattern in the ref run"
    exit 1
  }
  local theirs
  theirs=$(cd "$work/$name/out/e2e" && find . -type f -name "$pattern" ! -name 'manifest*' ! -name '.*' | wc -l)
  [ "$theirs" = "$n" ] || {
    echo "FAIL: $name has $theirs files matching $pattern, ref $n"
    exit 1
  }
  echo "$name: $n files identical to ref"
}

run ref "raw, codifhdr, pcap" "" ROCECAP_WRITEV=off ROCECAP_IO_URING=off
run writev "raw, codifhdr, pcap" ""
run direct "raw, codifhdr" "  direct_io: true
  writer_threads: 3"
run direct_write "raw, codifhdr, pcap" "  direct_io: true" ROCECAP_IO_URING=off
run pool "raw, codifhdr" "  writer_threads: 4"

# Every output file kind must have been written with rotation (4 MiB).
for ext in codif chead pcap; do
  [ "$(find "$work/ref/out/e2e" -name "*.$ext" | wc -l)" -ge 2 ] || {
    echo "FAIL: the ref run has fewer than 2 .$ext files: no rotation was exercised"
    exit 1
  }
done
same writev
same direct '*.codif'
same direct '*.chead'
same direct_write
same pool '*.codif'
same pool '*.chead'
grep -q "output writes: 4 writer thread(s)" "$work/pool/log" || {
  echo "FAIL: the pool run did not use 4 writer threads:"
  grep "output writes" "$work/pool/log"
  exit 1
}
grep -q "output writes: 3 writer thread(s)" "$work/direct/log" || {
  echo "FAIL: the direct run did not use 3 writer threads:"
  grep "output writes" "$work/direct/log"
  exit 1
}
grep -q "O_DIRECT .*ROCECAP_IO_URING=off" "$work/direct_write/log" || {
  echo "FAIL: the forced-off run does not say it writes without io_uring:"
  grep "output writes" "$work/direct_write/log"
  exit 1
}
python3 "$here/run_check.py" expect --summary "$work/summary.json" \
  --reference-pcap "$work/sent.pcap" --manifest "$work/pool/out/e2e/manifest.json"
passed=1
echo "PASS"
