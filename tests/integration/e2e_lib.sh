# shellcheck shell=bash
# shellcheck disable=SC2034  # E2E_* results are read by the sourcing script
# Shared by the rocecapd end-to-end tests: the generator arguments, the run file, starting and
# waiting for rocecapd. Source it; the caller sets `set -euo pipefail`.
#
#   e2e_gen_args FRAMES_PER_STREAM   # fills E2E_GEN: every stream/frame/impairment argument of
#                                    # `rocecap gen` except where it sends (--pcap/--interface)
#   e2e_config FILE                  # writes a run file from the E2E_* variables below
#   e2e_start_rocecapd NS_EXEC LOG CONFIG   # starts rocecapd (NS_EXEC: "" or a netns_bg_* fn),
#                                    # returns once it is capturing; pid in E2E_PID
#   e2e_wait_exit PID SECONDS        # waits for PID to end; its exit status in E2E_RC
#   e2e_verify MANIFEST SUMMARY      # `rocecap verify`: exit 0 only when the run matches
#   e2e_softverbs_wrapper DEVICES [real_net]   # $ROCECAPD = $work/rocecapd: $ROCECAPD_BIN with
#                                    # softverbs ($SV_LIB) as libibverbs, SOFTVERBS_DEVICES=DEVICES,
#                                    # the words of $SV_ENV and $WRAP_PREFIX before it, and a fake
#                                    # sysfs root in $work/sysfs shared by both (softverbs writes
#                                    # out_of_buffer there, rocecapd reads it); real_net links
#                                    # class/net to the namespace's real one (interface MTUs)
#   e2e_workdir NAME                 # $work = a new /tmp/rocecap-NAME.XXXXXX, $passed = 0; at
#                                    # teardown (netns_down) it is removed if the test set
#                                    # passed=1 (and KEEP_WORKDIR is not 1), else kept and named
#
# Run file variables (defaults in brackets):
#   E2E_RUN [e2e]  E2E_BACKEND [pcap]  E2E_IFACE  E2E_OUT (output.directory)
#   E2E_FORMATS [raw, codifhdr, pcap]  E2E_PCAP_FILE (pcap-file)  E2E_PACKETS (run.packets)
#   E2E_REPLAY_PACE (pcap-file: fast | recorded)
#   E2E_DURATION [120s]  E2E_ROTATE [1GiB]  E2E_MAX_FRAME [9216]
#   E2E_EXTRA_OUTPUT (more lines under output:)  E2E_EXTRA_STREAMS (under streams:)
#   E2E_POLL_MODE [event]  E2E_RING_DEPTH
#   E2E_DEVICE (verbs: the interface's RDMA device)

E2E_GROUPS="239.17.0.1:36001,239.17.0.2:36002"
E2E_SOURCES="192.0.2.11,192.0.2.12,192.0.2.13"
E2E_FOREIGN="192.0.2.99"
E2E_SEED=20261121
E2E_PAYLOAD=1024 # small frames: many of them in a short run
E2E_FRAME_BYTES=$((E2E_PAYLOAD + 64))
E2E_PID=""
E2E_RC=""

e2e_gen_args() {
  E2E_GEN=(gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames "$1"
    --payload-bytes "$E2E_PAYLOAD" --nchan 2 --nbits 4 --complex --epoch 52 --start-seconds 1000
    --station AT --thread-id 100 --group-id 7 --seed "$E2E_SEED"
    --drop 0.002 --drop-every 997 --swap 0.002 --duplicate 0.002 --bad-sync 0.001
    --truncate 0.001 --invalid 0.002)
  # Foreign copies (an unknown source): left out with E2E_FOREIGN="" (verbs flow rules never
  # deliver them, so they are not part of what a verbs run sees).
  [ -z "$E2E_FOREIGN" ] || E2E_GEN+=(--foreign "$E2E_FOREIGN" --foreign-prob 0.001)
}

e2e_config() {
  local file=$1 g a n=0
  {
    echo "run:"
    echo "  name: ${E2E_RUN:-e2e}"
    echo "  duration: ${E2E_DURATION:-120s}"
    [ -n "${E2E_PACKETS:-}" ] && echo "  packets: $E2E_PACKETS"
    echo "capture:"
    echo "  backend: ${E2E_BACKEND:-pcap}"
    [ -n "${E2E_PCAP_FILE:-}" ] && echo "  pcap_file: $E2E_PCAP_FILE"
    [ -n "${E2E_REPLAY_PACE:-}" ] && echo "  replay_pace: $E2E_REPLAY_PACE"
    echo "  poll_mode: ${E2E_POLL_MODE:-event}"
    [ -n "${E2E_RING_DEPTH:-}" ] && echo "  ring_depth: $E2E_RING_DEPTH"
    echo "  payload_memory: ${E2E_PAYLOAD_MEMORY:-host}"
    echo "  max_frame: ${E2E_MAX_FRAME:-9216}"
    echo "  interfaces:"
    echo "    - name: $E2E_IFACE"
    [ -n "${E2E_DEVICE:-}" ] && echo "      device: $E2E_DEVICE"
    echo "      groups:"
    for g in ${E2E_GROUPS//,/ }; do echo "        - $g"; done
    echo "streams:"
    echo "  format: codif"
    echo "  antennas:"
    for a in ${E2E_SOURCES//,/ }; do
      n=$((n + 1))
      echo "    - { name: ant$n, source: $a }"
    done
    [ -n "${E2E_EXTRA_STREAMS:-}" ] && echo "$E2E_EXTRA_STREAMS"
    echo "output:"
    echo "  directory: $E2E_OUT"
    echo "  formats: [${E2E_FORMATS:-raw, codifhdr, pcap}]"
    echo "  rotate: ${E2E_ROTATE:-1GiB}"
    [ -n "${E2E_EXTRA_OUTPUT:-}" ] && echo "$E2E_EXTRA_OUTPUT"
    echo "metrics:"
    echo "  enabled: false"
    echo "logging:"
    echo "  level: info"
  } >"$file"
}

_e2e_capturing() { grep -q "capturing .* streams" "$1" 2>/dev/null || ! kill -0 "$2" 2>/dev/null; }

e2e_start_rocecapd() {
  local ns_exec=$1 log=$2 config=$3 i
  if [ -n "$ns_exec" ]; then
    "$ns_exec" "$ROCECAPD" --config "$config" 2>"$log"
    E2E_PID=$NETNS_BG_PID
  else
    "$ROCECAPD" --config "$config" 2>"$log" &
    E2E_PID=$!
  fi
  for ((i = 0; i < 300; i++)); do
    _e2e_capturing "$log" "$E2E_PID" && break
    sleep 0.1
  done
  if ! kill -0 "$E2E_PID" 2>/dev/null || ! grep -q "capturing .* streams" "$log"; then
    echo "FAIL: rocecapd did not start capturing:"
    cat "$log"
    return 1
  fi
}

e2e_wait_exit() {
  local pid=$1 seconds=$2 i
  for ((i = 0; i < seconds * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: rocecapd still running after $seconds s"
    return 1
  fi
  E2E_RC=0
  wait "$pid" || E2E_RC=$?
}

# The project's own checker of CODIF outputs (tools/lib/verify.hpp), on top of run_check.py.
e2e_verify() {
  "$ROCECAP" verify --manifest "$1" --expect "$2"
}

e2e_workdir() {
  work=$(mktemp -d "/tmp/rocecap-$1.XXXXXX")
  passed=0
  netns_on_exit _e2e_finish_workdir
}

_e2e_finish_workdir() {
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work (files, summaries, logs)" >&2
  fi
}

e2e_softverbs_wrapper() {
  local devices=$1
  mkdir -p "$work/sysfs/class"
  [ "${2:-}" != real_net ] || ln -sfn /sys/class/net "$work/sysfs/class/net"
  cat >"$work/rocecapd" <<SH
#!/bin/sh
exec env LD_LIBRARY_PATH="$SV_LIB" SOFTVERBS_DEVICES="$devices" ${SV_ENV[*]:-} \
  SOFTVERBS_SYSFS_ROOT="$work/sysfs" ROCECAP_SYSFS_ROOT="$work/sysfs" ${WRAP_PREFIX:-} "$ROCECAPD_BIN" "\$@"
SH
  chmod +x "$work/rocecapd"
  ROCECAPD=$work/rocecapd
}
