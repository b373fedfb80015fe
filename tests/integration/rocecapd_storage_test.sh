#!/usr/bin/env bash
# Integration: rocecapd when its storage is lost or hostile (issue 16, items 4 and 8, modes).
#
# A recorded-pace replay (backend pcap-file, ~6 s of traffic) is the run; no privileges needed.
#  removed:  the run directory is removed 1.5 s in -> the run stops at once, logs "storage
#            lost" naming the directory and "NOT recorded as asked", exits 5 (never "complete").
#  replaced: the run directory is renamed away and a new one made in its place -> the same.
#  symlink:  the run directory is a symlink to a directory outside output.directory -> refused
#            at start (exit 3), nothing written outside (not even manifest.json).
#  modes:    under umask 000 the run directory is created 0750 and every file 0640.
#
# usage: rocecapd_storage_test.sh ROCECAPD ROCECAP
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-storage-test.XXXXXX)
passed=0
pid=""
finish() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

"$ROCECAP" gen --groups "$E2E_GROUPS" --sources "$E2E_SOURCES" --frames 6000 --rate 1000 \
  --payload-bytes "$E2E_PAYLOAD" --seed "$E2E_SEED" --pcap "$work/sent.pcap" >/dev/null

run_file() { # OUT_DIR PACE FILE
  {
    echo "run: { name: e2e, duration: 60s }"
    echo "capture:"
    echo "  backend: pcap-file"
    echo "  pcap_file: $work/sent.pcap"
    echo "  replay_pace: $2"
    echo "  interfaces: [{ name: rec0, groups: [${E2E_GROUPS//,/, }] }]"
    echo "streams:"
    echo "  format: codif"
    echo "  antennas:"
    local n=0 a
    for a in ${E2E_SOURCES//,/ }; do
      n=$((n + 1))
      echo "    - { name: ant$n, source: $a }"
    done
    echo "output: { directory: $1, formats: [raw, codifhdr, pcap], rotate: 1MiB }"
    echo "metrics: { enabled: false }"
  } >"$3"
}

# Runs rocecapd on RUN_FILE in the background, does ACTION 1.5 s in, waits for the exit.
lose_storage() { # NAME ACTION
  local name=$1 action=$2 out=$work/$1
  mkdir -p "$out"
  run_file "$out" recorded "$work/$name.yaml"
  local start=$SECONDS
  "$ROCECAPD" --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
  pid=$!
  sleep 1.5
  eval "$action"
  local rc=0
  timeout 20 tail --pid="$pid" -f /dev/null || bad "$name: rocecapd still running 20 s later"
  wait "$pid" || rc=$?
  pid=""
  echo "$name: rocecapd exited $rc after $((SECONDS - start)) s"
  [ "$rc" = 5 ] || bad "$name: exit $rc, expected 5 (storage lost)"
  [ $((SECONDS - start)) -lt 5 ] || bad "$name: the run did not stop at once (replay is 6 s)"
  grep -q "storage lost" "$work/$name.log" || bad "$name: no 'storage lost' in the log"
  grep -q "NOT recorded as asked" "$work/$name.log" || bad "$name: no 'NOT recorded' line"
  grep -q "complete; manifest" "$work/$name.log" && bad "$name: the log calls the run complete"
  grep -E "storage lost|NOT recorded" "$work/$name.log" | head -3 || true
}

# rm -rf races the writer: a file rotated in between its unlinks and its rmdir leaves the
# directory (ENOTEMPTY), so remove until it is gone (bounded).
remove_run_dir() { # DIR
  local i
  for i in $(seq 50); do
    rm -rf "$1" 2>/dev/null && [ ! -e "$1" ] && return 0
  done
  bad "removed: could not remove $1 in 50 tries"
}
lose_storage removed "remove_run_dir '$work/removed/e2e'"
# Whichever is seen first: the directory's inode gone, or its open files unlinked.
grep -q "storage lost: \(the run directory $work/removed/e2e \(was removed\|is gone\)\|file $work/removed/e2e/.* was deleted\)" "$work/removed.log" ||
  bad "removed: the log does not name the removed run directory or its files"

lose_storage replaced "mv '$work/replaced/e2e' '$work/replaced/old' && mkdir '$work/replaced/e2e'"
grep -q "run directory $work/replaced/e2e .*\(replaced\|removed\)" "$work/replaced.log" ||
  bad "replaced: the log does not say the run directory was replaced"

# symlink: the run directory points outside output.directory.
mkdir -p "$work/symlink/out" "$work/outside"
ln -s "$work/outside" "$work/symlink/out/e2e"
run_file "$work/symlink/out" fast "$work/symlink.yaml"
rc=0
timeout 30 "$ROCECAPD" --config "$work/symlink.yaml" >"$work/symlink.log" 2>&1 || rc=$?
echo "symlink: rocecapd exited $rc: $(grep -m1 "cannot start" "$work/symlink.log" || true)"
[ "$rc" = 3 ] || bad "symlink: exit $rc, expected 3 (could not start)"
grep -q "is a symlink" "$work/symlink.log" || bad "symlink: the refusal does not say why"
[ -z "$(ls -A "$work/outside")" ] || bad "symlink: written outside: $(ls -A "$work/outside")"

# modes: umask 000 must not make the run world-writable.
run_file "$work/modes" fast "$work/modes.yaml"
rc=0
(umask 000 && timeout 60 "$ROCECAPD" --config "$work/modes.yaml" >"$work/modes.log" 2>&1) || rc=$?
[ "$rc" = 0 ] || bad "modes: exit $rc: $(tail -3 "$work/modes.log")"
dir_mode=$(stat -c %a "$work/modes/e2e")
[ "$dir_mode" = 750 ] || bad "modes: run directory mode $dir_mode, expected 750"
wrong=$(find "$work/modes/e2e" -type f ! -perm 640 -printf '%p %m\n')
[ -z "$wrong" ] || bad "modes: files not 0640: $wrong"
echo "modes: run directory $dir_mode, $(find "$work/modes/e2e" -type f | wc -l) files 640"

[ "$fail" = 0 ] || exit 1
passed=1
