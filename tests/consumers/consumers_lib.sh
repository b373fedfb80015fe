# shellcheck shell=bash source-path=SCRIPTDIR
# shellcheck disable=SC2034  # variables set here are read by the sourcing script
# Shared by the consumer end-to-end tests (tests/consumers/*_test.sh). Source it after setting
# ROCECAPD and ROCECAP; the caller sets `set -euo pipefail`. Builds on
# tests/integration/e2e_lib.sh (generator arguments, run file).
#
#   cons_init NAME               # $work = a new /tmp/rocecap-NAME.XXXXXX, the cleanup trap,
#                                # $PY (python3 with numpy, else exit 77)
#   cons_bg SECONDS OUT ERR CMD...   # CMD in the background under `timeout`; its pid in
#                                # $CONS_PID, killed at exit if still running
#   cons_start_rocecapd LOG CONFIG [SECONDS]  # starts rocecapd (under timeout) and returns
#                                # once its consumer socket is up (or, without a consumers
#                                # section, once it captures); pid in $ROCECAPD_PID
#   cons_wait PID SECONDS WHAT   # waits for PID; its exit status in $CONS_RC (FAIL if it
#                                # outlives SECONDS)
#   cons_reference RUN_NAME      # the same pcap replayed WITHOUT consumers into $work/ref:
#                                # $work/ref/$RUN_NAME/manifest.json (E2E_* as for the test run)
#   check CMD...                 # runs CMD; a failure is remembered (FAIL lines are CMD's)
#   fail TEXT                    # prints FAIL: TEXT and remembers it
#   failed_above                 # remembers a failure whose FAIL lines were printed
#   cons_finish                  # exit 1 if anything failed, else passed=1, exit 0

here_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../integration/e2e_lib.sh
source "$here_lib/../integration/e2e_lib.sh"

CONS_PIDS=()
CONS_PID=""
CONS_RC=""
ROCECAPD_PID=""
cons_failed=0

cons_init() {
  PY=${PYTHON:-/usr/bin/python3}
  if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "SKIP: $PY has no numpy (python/rocecap_consumer.py needs it)"
    exit 77
  fi
  work=$(mktemp -d "/tmp/rocecap-$1.XXXXXX")
  passed=0
  trap _cons_cleanup EXIT
  trap 'exit 1' INT TERM
}

_cons_cleanup() {
  local pid
  for pid in "${CONS_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${CONS_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work (files, logs)" >&2
  fi
}

cons_bg() {
  local seconds=$1 out=$2 err=$3
  shift 3
  timeout -k 5 "$seconds" "$@" >"$out" 2>"$err" &
  CONS_PID=$!
  CONS_PIDS+=("$CONS_PID")
}

cons_start_rocecapd() {
  local log=$1 config=$2 seconds=${3:-120} i
  cons_bg "$seconds" /dev/null "$log" "$ROCECAPD" --config "$config"
  ROCECAPD_PID=$CONS_PID
  for ((i = 0; i < 300; i++)); do
    grep -qE "consumers: waiting|capturing .* streams" "$log" 2>/dev/null && return 0
    kill -0 "$ROCECAPD_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: rocecapd did not start (no consumer socket, no capture):"
  cat "$log"
  exit 1
}

cons_wait() {
  local pid=$1 seconds=$2 what=$3 i
  for ((i = 0; i < seconds * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: $what still running after $seconds s"
    exit 1
  fi
  CONS_RC=0
  wait "$pid" || CONS_RC=$?
}

cons_reference() {
  local run=$1
  E2E_RUN=$run E2E_OUT=$work/ref e2e_config "$work/ref.yaml"
  cons_start_rocecapd "$work/ref.log" "$work/ref.yaml"
  cons_wait "$ROCECAPD_PID" 60 "rocecapd (reference run)"
  if [ "$CONS_RC" != 0 ]; then
    echo "FAIL: the reference rocecapd run (no consumers) exited $CONS_RC:"
    cat "$work/ref.log"
    exit 1
  fi
}

# The consumers section and the run file: e2e_config plus CONS_YAML appended.
cons_config() {
  local file=$1
  e2e_config "$file"
  printf '%s\n' "$CONS_YAML" >>"$file"
}

check() {
  "$@" || cons_failed=1
}

fail() {
  echo "FAIL: $*"
  cons_failed=1
}

# After a check that printed its own FAIL lines.
failed_above() {
  cons_failed=1
}

rocecapd_checks() {
  local log=$1
  if [ "$CONS_RC" != 0 ]; then
    fail "rocecapd exited $CONS_RC"
    tail -n 30 "$log"
  fi
  if grep -E "runtime error|AddressSanitizer|LeakSanitizer|ThreadSanitizer" "$log"; then
    fail "the sanitizers reported errors in rocecapd (above)"
  fi
  grep -q "stopping: capture ended" "$log" || fail "rocecapd did not stop at the end of the replay"
}

# The value of a manifest key path (python expression on m), e.g. "m['consumers']['refused']".
manifest_value() {
  "$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); print($2)" "$1"
}

# raw file name of a stream: ant1@239.17.0.1:36001 -> 239.17.0.1_36001_ant1.0000.codif
raw_file_of() {
  local name=$1 ant group port
  ant=${name%%@*}
  group=${name#*@}
  port=${group##*:}
  group=${group%:*}
  echo "${group}_${port}_${ant}.0000.codif"
}

cons_finish() {
  if [ "$cons_failed" != 0 ]; then
    echo "FAIL: $(basename "$0") (see the FAIL lines above)"
    exit 1
  fi
  passed=1
  echo "PASS: $(basename "$0")"
  exit 0
}
