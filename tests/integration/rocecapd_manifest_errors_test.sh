#!/usr/bin/env bash
# Integration: a periodic manifest snapshot that cannot be written is listed in the manifest's
# `errors`, not only logged (issue 23, item 14).
#
# Two output targets: t0 (holds the run directory and its manifest) a 16 MiB tmpfs, t1 a plain
# directory. rocecapd replays `rocecap gen --pcap` at the recorded pace (12 s of traffic); 1 s
# in, a filler file takes every free block of t0. The writers leave t0 (out of rotation, the
# data goes on on t1, nothing lost); the snapshot at 10 s cannot be written to t0 (ENOSPC); the
# final manifest is (the reserve beside it is given back for it). Expected: exit 0; the log
# says the snapshot failed; the final manifest's `errors` lists every failed snapshot, each
# naming manifest.json and the cause; no frame lost (no write_error_lost); `rocecap verify`
# accepts the run and says that a snapshot was not written.
# Root (tmpfs), in its own mount namespace (unshare -m): the tmpfs vanishes with it.
#
# usage: rocecapd_manifest_errors_test.sh ROCECAPD ROCECAP
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

if [ "${ROCECAP_MANIFEST_NS:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "SKIPPED: the test mounts a tmpfs (needs root)"; exit 77; }
  command -v unshare >/dev/null || { echo "SKIPPED: no unshare"; exit 77; }
  exec unshare -m --propagation private env ROCECAP_MANIFEST_NS=1 bash "$0" "$@"
fi

work=$(mktemp -d /tmp/rocecap-manifest-errors-test.XXXXXX)
passed=0
rocecapd_pid=""
finish() {
  [ -n "$rocecapd_pid" ] && kill "$rocecapd_pid" 2>/dev/null
  mountpoint -q "$work/t0" && umount -l "$work/t0"
  if [ "$passed" = 1 ] && [ "${KEEP_WORKDIR:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work" >&2
  fi
}
trap finish EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

e2e_gen_args 6000
"$ROCECAP" "${E2E_GEN[@]}" --rate 500 --pcap "$work/sent.pcap" --summary "$work/summary.json" \
  >/dev/null
mkdir -p "$work/t0" "$work/t1"
mount -t tmpfs -o size=16m,mode=0755 rocecap-manifest-t0 "$work/t0"
E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_REPLAY_PACE=recorded E2E_IFACE=rec0 \
  E2E_OUT=$work/t0 E2E_FORMATS=raw E2E_ROTATE=1MiB e2e_config "$work/run.yaml"
sed -i "s|^  directory: .*|  directories: [$work/t0, $work/t1]|" "$work/run.yaml"

e2e_start_rocecapd "" "$work/rocecapd.log" "$work/run.yaml"
rocecapd_pid=$E2E_PID
sleep 1
dd if=/dev/zero of="$work/t0/filler" bs=64k 2>/dev/null || true
echo "t0 full: $(df -k --output=avail "$work/t0" | tail -1) KiB free"
e2e_wait_exit "$rocecapd_pid" 60
rocecapd_pid=""
[ "$E2E_RC" = 0 ] || { tail -20 "$work/rocecapd.log"; fail "rocecapd exited $E2E_RC"; }
grep -E "manifest:|out of rotation" "$work/rocecapd.log" | cut -c1-200

python3 - "$work/rocecapd.log" "$work/t0/e2e/manifest.json" <<'PY' || fail "the manifest's errors"
import json, re, sys
log, m = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
failed = re.findall(r" error +manifest: (.*)", log)
listed = [e for e in m["errors"] if e["path"] == sys.argv[2]]
print(f"log: {len(failed)} manifest writes failed; manifest errors: {len(listed)} about it, "
      f"{len(m['errors'])} in all; state {m['state']}")
bad = []
if not failed:
    bad.append("no manifest snapshot failed: the test proves nothing (t0 never filled?)")
if len(listed) != len(failed):
    bad.append(f"{len(failed)} failed snapshots logged, {len(listed)} listed in errors: {m['errors']}")
for e in listed:
    if "No space left on device" not in e["message"] or sys.argv[2] not in e["message"]:
        bad.append(f"an error that does not name the manifest and the cause: {e}")
lost = sum(s["write_error_lost"]["raw"]["frames"] for s in m["streams"] if "write_error_lost" in s)
if m["state"] != "stopped" or lost:
    bad.append(f"state {m['state']}, {lost} frames lost: the other target should have taken them")
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
# rocecap verify: every frame in the files; the snapshot not written is said, not a problem.
e2e_verify "$work/t0/e2e/manifest.json" "$work/summary.json" >"$work/verify.txt" ||
  { cat "$work/verify.txt"; fail "rocecap verify refused the run"; }
grep -q "manifest snapshot(s) not written" "$work/verify.txt" ||
  { cat "$work/verify.txt"; fail "rocecap verify does not say that a snapshot was not written"; }
passed=1
echo "PASS"
