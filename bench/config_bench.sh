#!/usr/bin/env bash
# Run-file validation time against the number of antennas (`rocecapd --check-config`).
#
# usage: bench/config_bench.sh ROCECAPD [ANTENNAS...]   (default: 16000 200000)
# Writes one run file per count (backend pcap, one interface, one group, N antennas with
# distinct names and sources, so nothing is refused) and prints the wall time of the check
# and its exit status. Results and the commands used: BENCHMARKS.md, "Run-file validation".
set -euo pipefail
rocecapd=${1:?usage: $0 ROCECAPD [ANTENNAS...]}
shift
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(16000 200000)
work=$(mktemp -d /tmp/rocecap-config-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
for n in "${counts[@]}"; do
  python3 - "$n" "$work/run.yaml" "$work/out" <<'PY'
import sys
n, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(path, "w") as f:
    f.write("run: {name: bench}\ncapture:\n  backend: pcap\n  ring_depth: 16\n  max_frame: 1024\n"
            "  interfaces:\n    - name: eth0\n      groups: [239.1.0.1:36001]\n"
            f"output: {{directory: {out}}}\nmetrics: {{enabled: false}}\n"
            "streams:\n  format: codif\n  antennas:\n")
    for i in range(n):
        f.write(f"    - {{name: a{i}, source: 10.{1 + i // 65536}.{i // 256 % 256}.{i % 256}}}\n")
PY
  start=$(date +%s.%N)
  rc=0
  "$rocecapd" --check-config "$work/run.yaml" >/dev/null 2>"$work/err" || rc=$?
  end=$(date +%s.%N)
  printf '%7d antennas: %6.2f s (exit %d)\n' "$n" "$(echo "$end - $start" | bc)" "$rc"
  [ "$rc" = 0 ] || head -3 "$work/err"
done
