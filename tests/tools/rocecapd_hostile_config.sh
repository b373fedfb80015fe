#!/usr/bin/env bash
# Hostile but fair run files and settings: each is refused (or warned about) with a clear
# message, never a crash, a hang or a silent acceptance. Needs no privileges.
#
#   /dev/zero, a FIFO, a directory, a 17 MiB file      exit 2 naming what it is (was: abort by
#                                                      std::bad_alloc, a silent block, ...)
#   3000 nested lists; a NUL byte                      exit 2 with line:column in words
#   a NUL in a name template; a loopback source        exit 2 at the key's line:column
#   200000 antennas with one duplicate source          exit 2 naming it (the check was quadratic:
#                                                      hours; each command here is bounded)
#   metrics.listen 0.0.0.0                             check-config notes it, the daemon warns
#   writer_threads: 256 for one stream                 exit 2 naming the limit (ran as 1)
#   a token file every user can read                   check-config and the daemon warn
#   metrics port in use                                exit 3 "already in use" (was: "null
#                                                      context when constructing CivetServer")
# Usage: rocecapd_hostile_config.sh ROCECAPD ROCECAP
set -euo pipefail
rocecapd=${1:?usage: $0 ROCECAPD ROCECAP}
rocecap=${2:?usage: $0 ROCECAPD ROCECAP}
work=$(mktemp -d /tmp/rocecap-hostile.XXXXXX)
listener=""
finish() {
  [ -n "$listener" ] && kill "$listener" 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

base() { # $1: antennas block (YAML list items), $2: extra top-level lines
  cat <<YAML
run: { name: hostile }
capture:
  backend: pcap-file
  pcap_file: $work/in.pcap
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams:
  antennas:
${1:-    - { name: ak01, source: 192.0.2.11 \}}
output: { directory: $work/out, formats: [raw] }
${2:-metrics: { enabled: false \}}
YAML
}

# check FILE RC TEXT: `rocecapd --check-config FILE` exits RC and its output holds TEXT.
# Each command is bounded (60 s): a hang or a quadratic check is a failure, not a stuck test.
check() {
  local file=$1 want=$2 text=$3 rc=0
  timeout 60 "$rocecapd" --check-config "$file" >"$work/out.txt" 2>&1 || rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$work/out.txt"; then
    head -c 2000 "$work/out.txt" >&2
    fail "$file: exit $rc (want $want; 124: still running after 60 s), output must hold '$text'"
  fi
  echo "ok: $(basename "$file"): exit $rc: $(grep -F -- "$text" "$work/out.txt" | head -1 | cut -c1-140)"
}

"$rocecap" gen --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames 50 --payload-bytes 1024 \
  --pcap "$work/in.pcap" --summary /dev/null >/dev/null

check /dev/zero 2 "/dev/zero: is a character device, not a run file"
mkfifo "$work/fifo.yaml"
check "$work/fifo.yaml" 2 "fifo.yaml: is a FIFO, not a run file"
mkdir "$work/dir.yaml"
check "$work/dir.yaml" 2 "dir.yaml: is a directory, not a run file"
base >"$work/big.yaml"
head -c $((17 << 20)) /dev/zero | tr '\0' '#' >>"$work/big.yaml"
check "$work/big.yaml" 2 "a run file may have at most 16777216 bytes (16 MiB)"

python3 -c "import sys; sys.stdout.write('run: ' + '[' * 3000 + ']' * 3000 + '\n')" >"$work/deep.yaml"
check "$work/deep.yaml" 2 "not valid YAML: nested too deep here"
base | python3 -c "import sys; t = sys.stdin.read(); sys.stdout.write(t.replace('hostile', 'ho\0stile', 1))" >"$work/nul.yaml"
check "$work/nul.yaml" 2 "nul.yaml:1:16: NUL byte at line 1, column 16"

base "" 'output: { directory: '"$work"'/out, formats: [raw], name_template: "{run}/{antenna}\0{group}.{seq}.{ext}" }
metrics: { enabled: false }' | sed '/^output: { directory: .*formats: \[raw\] }$/d' >"$work/template.yaml"
check "$work/template.yaml" 2 "output.name_template: '{run}/{antenna}\\x00{group}.{seq}.{ext}' contains control character 0x00"
base "    - { name: ak01, source: 127.0.0.1 }" >"$work/loopback.yaml"
check "$work/loopback.yaml" 2 "streams.antennas[0].source: 127.0.0.1 is a loopback address"

python3 - "$work/many.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(200_000):
        s = 12 if i == 199_999 else i  # the last repeats the source of the 13th
        f.write(f"    - {{name: a{i}, source: 10.{1 + s // 65536}.{s // 256 % 256}.{s % 256}}}\n")
PY
base "$(cat "$work/many.txt")" >"$work/many.yaml"
check "$work/many.yaml" 2 "streams.antennas[199999].source: 10.1.0.12 is already the source of antenna 'a12'"

base "" "metrics: { listen: 0.0.0.0:9464 }" >"$work/exposed.yaml"
check "$work/exposed.yaml" 0 "metrics     http://0.0.0.0:9464/metrics  (warning: not loopback"

# Accepted but wrong on main (issue 23): more writer threads than streams ran as one; a token
# file every user can read was taken without a word (and its surrounding spaces kept).
base "" 'metrics: { enabled: false }' | sed 's/formats: \[raw\] }/formats: [raw], writer_threads: 256 }/' >"$work/threads.yaml"
check "$work/threads.yaml" 2 "output.writer_threads: 256 writer threads, but this run has 1 stream to share out (a ring has one writer); at most 1"
printf '  s3cret \n' >"$work/token"
chmod 0644 "$work/token"
base "" "metrics: { enabled: false }
retention: { retain: 1s, frame_rate: 1000, http_token_file: $work/token }" >"$work/token.yaml"
check "$work/token.yaml" 0 "(warning: retention.http_token_file $work/token is readable by every user (mode 0644)"
rc=0
timeout 60 "$rocecapd" --config "$work/token.yaml" 2>"$work/token.log" || rc=$?
if [ "$rc" != 0 ] || ! grep -qF "retention.http_token_file $work/token is readable by every user" "$work/token.log"; then
  cat "$work/token.log" >&2
  fail "world-readable token file: exit $rc (want 0), the start-up log must warn about it"
fi
echo "ok: world-readable token file: the daemon warns: $(grep -o "retention.http_token_file .*" "$work/token.log" | head -1 | cut -c1-100)"

# A port someone else listens on: exit 3 naming the address and why.
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
python3 -c "
import socket, sys, time
s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(60)" "$port" &
listener=$!
for _ in $(seq 50); do ss -ltn "sport = :$port" | grep -q LISTEN && break; sleep 0.1; done
base "" "metrics: { listen: 127.0.0.1:$port }" >"$work/inuse.yaml"
rc=0
timeout 60 "$rocecapd" --config "$work/inuse.yaml" 2>"$work/inuse.log" || rc=$?
if [ "$rc" != 3 ] || ! grep -qF "cannot listen on 127.0.0.1:$port: the address is already in use" "$work/inuse.log"; then
  cat "$work/inuse.log" >&2
  fail "metrics port in use: exit $rc (want 3), message must say the address is in use"
fi
echo "ok: metrics port in use: exit 3: $(grep -o "cannot listen on .*" "$work/inuse.log" | cut -c1-120)"
