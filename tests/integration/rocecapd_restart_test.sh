#!/usr/bin/env bash
# Integration: a run whose rocecapd is killed, recovered and restarted (issue 16, items 1, 2, 5).
#
# rocecapd replays `rocecap gen --pcap` at the recorded pace (6 s of traffic), so it is mid-run
# when it gets SIGKILL. Checked, with real rocecapd processes:
#   lock     a second rocecapd on the same run directory exits 6 naming the first one's PID,
#            and so it does (as does `rocecap recover`, exit 3) once .rocecapd.lock is deleted;
#   recover  `rocecap recover` cuts every file to whole frames/records (a directory put at a
#            file's name is reported, skipped and listed in recovery.skipped, its number kept
#            in use, by the tool and by the restarts): capinfos and tshark read
#            the pcap files, raw files are whole frames, codifhdr files whole headers, the
#            manifest lists every file on disk with its size (state "recovered"), and
#            `rocecap verify` accepts the run;
#   restart  rocecapd on the same run file continues the run as attempt 2: new files after
#            those of attempt 1 (no "File exists"); killed too, attempt 3 recovers it itself
#            and runs to the end: every file of the three attempts listed with its size, raw
#            files whole frames, manifest "attempts", verify accepts it; a fourth start on the
#            finished run keeps all earlier attempts;
#   start    a start failure (exit 3) leaves no run directory behind.
# Needs no privileges.
#
# usage: rocecapd_restart_test.sh ROCECAPD ROCECAP
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-restart-test.XXXXXX)
passed=0
pids=()
finish() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
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
"$ROCECAP" "${E2E_GEN[@]}" --rate 1000 --pcap "$work/sent.pcap" --summary "$work/summary.json" \
  >/dev/null
# Rotation at 3 MiB: the killed attempt has closed files and open ones flushed mid-frame (the
# writers flush 1 MiB buffers; a 1088-byte frame straddles every buffer boundary).
E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/out \
  E2E_ROTATE=3MiB e2e_config "$work/run.yaml"
sed -i 's|^  pcap_file: .*|&\n  replay_pace: recorded|' "$work/run.yaml"
run=$work/out/e2e
manifest=$run/manifest.json

# --- attempt 1, and a second daemon on the same run directory ---
e2e_start_rocecapd "" "$work/attempt1.log" "$work/run.yaml"
first=$E2E_PID
pids+=("$first")
rc=0
timeout 30 "$ROCECAPD" --config "$work/run.yaml" 2>"$work/second.log" || rc=$?
[ "$rc" = 6 ] || fail "a second rocecapd on the same run directory exited $rc, expected 6: $(cat "$work/second.log")"
grep -q "in use by PID $first" "$work/second.log" ||
  fail "the refused rocecapd does not name PID $first: $(cat "$work/second.log")"
echo "second rocecapd refused: $(grep -o 'run directory.*' "$work/second.log")"
rc=0
"$ROCECAP" recover "$run" >/dev/null 2>"$work/recover-busy.log" || rc=$?
if [ "$rc" != 3 ] || ! grep -q "in use by PID $first" "$work/recover-busy.log"; then
  fail "rocecap recover on a running run exited $rc: $(cat "$work/recover-busy.log")"
fi
# The lock is the run directory's own: deleting its lock file (any user who can write the
# directory can) must not let a second process in to "recover" the live run.
rm "$run/.rocecapd.lock"
rc=0
timeout 30 "$ROCECAPD" --config "$work/run.yaml" 2>"$work/second-unlinked.log" || rc=$?
[ "$rc" = 6 ] || fail "with the lock file deleted, a second rocecapd exited $rc, expected 6: $(cat "$work/second-unlinked.log")"
grep -q "in use by PID $first" "$work/second-unlinked.log" ||
  fail "with the lock file deleted, the refusal does not name PID $first: $(cat "$work/second-unlinked.log")"
rc=0
"$ROCECAP" recover "$run" >/dev/null 2>"$work/recover-unlinked.log" || rc=$?
if [ "$rc" != 3 ] || ! grep -q "in use by PID $first" "$work/recover-unlinked.log"; then
  fail "with the lock file deleted, rocecap recover exited $rc: $(cat "$work/recover-unlinked.log")"
fi
echo "lock file deleted: still refused: $(grep -o 'in use by.*' "$work/second-unlinked.log")"
sleep 4.5
kill -0 "$first" 2>/dev/null || fail "rocecapd ended before it could be killed mid-run"
kill -9 "$first"
wait "$first" 2>/dev/null || true
grep -q '"state": "running"' "$manifest" || fail "the killed run's manifest is not a running one"

# What SIGKILL cost: header files are handed to the kernel at least every 0.5 s, as raw data
# is (writers/README.md, "Flush interval"), so per stream the codifhdr files hold the headers of
# every frame the raw files hold but at most the last second's (1000 frames at the 1000 frames
# per second sent; generous: the bound is half that plus one writer pass).
python3 - "$run" "$E2E_FRAME_BYTES" <<'PY' || fail "SIGKILL lost more than a second of headers"
import os, sys
run, frame = sys.argv[1], int(sys.argv[2])
per = {}
for n in os.listdir(run):
    stem, ext = n.rsplit(".", 2)[0], n.rsplit(".", 1)[-1]
    unit = {"codif": frame, "chead": 64}.get(ext)
    if unit:
        per.setdefault(stem, {"codif": 0, "chead": 0})[ext] += os.path.getsize(f"{run}/{n}") // unit
bad = False
for stem, c in sorted(per.items()):
    print(f"after SIGKILL: {stem}: {c['codif']} frames in raw files, {c['chead']} headers")
    bad |= c["codif"] < 2000 or c["chead"] < c["codif"] - 1000
sys.exit(1 if bad or not per else 0)
PY

torn=0
for p in "$run"/*.pcap; do capinfos "$p" >/dev/null 2>&1 || torn=$((torn + 1)); done
echo "after SIGKILL: $torn pcap file(s) capinfos cannot read"

# What the kill left: files the manifest does not list, raw files ending mid-frame.
python3 - "$manifest" "$work/out" "$E2E_FRAME_BYTES" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1])); root = sys.argv[2]; frame = int(sys.argv[3])
listed = {f["path"] for o in m["streams"] + m["interfaces"] for f in o["files"]}
raw = [os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns
       if n.endswith(".codif")]
torn = [p for p in raw if os.path.getsize(os.path.join(root, p)) % frame]
if not torn and raw:
    # Buffered raw files are written whole records per writev from the ring slots, so a
    # SIGKILL rarely tears one; a power loss or a full disk mid-write does. Tear the largest
    # as that would (half a frame of garbage at its end), so recovery's cut is exercised.
    victim = max(raw, key=lambda p: os.path.getsize(os.path.join(root, p)))
    with open(os.path.join(root, victim), "ab") as f:
        f.write(b"\xa5" * (frame // 2))
    torn = [victim]
    print(f"no raw file torn by the kill; tore {victim} by hand")
unlisted = [p for p in raw if p not in listed]
assert torn and unlisted, (torn, unlisted)
print(f"after SIGKILL: {len(unlisted)} raw files not listed, {len(torn)} ending mid-frame")
PY

# Something that is not a regular file at the next name of a raw writer (a directory made by
# hand): recovery and the restart skip it, say so and list it, and the writer's next file takes
# the number after it.
odd=$(python3 - "$run" <<'PY'
import os, sys
run = sys.argv[1]
raw = sorted(n for n in os.listdir(run) if n.endswith(".codif"))
prefix = raw[0].rsplit(".", 2)[0]
last = max(int(n.rsplit(".", 2)[1]) for n in raw if n.startswith(prefix + "."))
print(f"{prefix}.{last + 1:04d}.codif")
PY
)
mkdir "$run/$odd"

# --- recover ---
"$ROCECAP" recover "$run" 2>"$work/recover.err" | tee "$work/recover.txt" ||
  fail "rocecap recover failed: $(cat "$work/recover.err")"
grep -q "recovered" "$work/recover.txt" || fail "rocecap recover reported nothing recovered: $(cat "$work/recover.err")"
grep -q "skipped $run/$odd: a directory, not a regular file" "$work/recover.err" ||
  fail "rocecap recover does not report the directory at $odd: $(cat "$work/recover.err")"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['recovery']; \
assert r['skipped'] == [{'path': 'e2e/' + sys.argv[2], 'type': 'directory'}], r['skipped']" \
  "$manifest" "$odd" || fail "the manifest's recovery does not list the directory at $odd"
python3 - "$manifest" "$work/out" "$E2E_FRAME_BYTES" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1])); root = sys.argv[2]; frame = int(sys.argv[3])
assert m["state"] == "recovered", m["state"]
assert m["recovery"]["previous_state"] == "running", m["recovery"]
listed = {}
for owner in m["streams"] + m["interfaces"]:
    for f in owner["files"]:
        listed[f["path"]] = f
on_disk = set()
for d, _, names in os.walk(root):
    for n in names:
        p = os.path.relpath(os.path.join(d, n), root)
        if p.endswith((".codif", ".chead", ".pcap")):
            on_disk.add(p)
assert on_disk == set(listed), (sorted(on_disk ^ set(listed)))
for p, f in listed.items():
    size = os.path.getsize(os.path.join(root, p))
    assert size == f["bytes"], (p, size, f["bytes"])
    if f["format"] == "raw":
        assert size % frame == 0, (p, size)
    if f["format"] == "codifhdr":
        assert size % 64 == 0, (p, size)
assert m["recovery"]["files_trimmed"] >= 1, "no file was cut: the kill did not tear one"
assert m["recovery"]["files_added"] >= 1, "no unlisted file: the test does not cover them"
print(f"recovered manifest: {len(listed)} files, all listed with their sizes; "
      f"{m['recovery']['files_trimmed']} cut, {m['recovery']['files_added']} added")
PY
for p in "$work"/out/e2e/*.pcap; do
  capinfos "$p" >/dev/null || fail "capinfos cannot read the recovered $p"
  tshark -r "$p" >/dev/null || fail "tshark cannot read the recovered $p"
done
"$ROCECAP" verify --manifest "$manifest" --expect "$work/summary.json" >"$work/verify1.txt" ||
  { cat "$work/verify1.txt"; fail "rocecap verify refused the recovered run"; }
grep -q "placed frames captured" "$work/verify1.txt" || fail "verify did not report the windows"

# --- attempt 2: the same run file again (systemd Restart=on-failure), killed mid-run too ---
e2e_start_rocecapd "" "$work/attempt2.log" "$work/run.yaml"
second=$E2E_PID
pids+=("$second")
grep -q "File exists" "$work/attempt2.log" && fail "attempt 2 could not open its files"
grep -q "continuing as attempt 2" "$work/attempt2.log" || fail "the restart is not logged"
grep -q "$odd is a directory, not a regular file: skipped" "$work/attempt2.log" ||
  fail "the restart does not report the directory at $odd"
sleep 3
kill -0 "$second" 2>/dev/null || fail "attempt 2 ended before it could be killed mid-run"
kill -9 "$second"
wait "$second" 2>/dev/null || true

# --- attempt 3: rocecapd recovers attempt 2 itself, then runs to the end ---
e2e_start_rocecapd "" "$work/attempt3.log" "$work/run.yaml"
pids+=("$E2E_PID")
e2e_wait_exit "$E2E_PID" 60
[ "$E2E_RC" = 0 ] || { cat "$work/attempt3.log"; fail "attempt 3 exited $E2E_RC"; }
grep -q "File exists" "$work/attempt3.log" && fail "attempt 3 could not open its files"
grep -q "attempt 2 did not end cleanly" "$work/attempt3.log" ||
  fail "attempt 3 did not recover attempt 2: $(cat "$work/attempt3.log")"
check_attempts() { # $1: this attempt, then the states of the attempts in order
  python3 - "$manifest" "$work/out" "$E2E_FRAME_BYTES" "$@" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1])); root = sys.argv[2]; frame = int(sys.argv[3])
n = int(sys.argv[4]); states = sys.argv[5:]
assert m["state"] == "stopped", m["state"]
assert m["attempt"] == n and len(m["attempts"]) == n, (m["attempt"], len(m["attempts"]))
assert [a["state"] for a in m["attempts"]] == states, [a["state"] for a in m["attempts"]]
per_attempt = {}
skipped = {f["path"] for a in m["attempts"] for f in (a.get("recovery") or {}).get("skipped", [])}
assert skipped, "no recovery lists the odd file"
for owner in m["streams"] + m["interfaces"]:
    paths = [f["path"] for f in owner["files"]]
    assert len(paths) == len(set(paths)), "a file listed twice"
    for f in owner["files"]:
        per_attempt[f["attempt"]] = per_attempt.get(f["attempt"], 0) + 1
        size = os.path.getsize(os.path.join(root, f["path"]))
        assert size == f["bytes"], f
        assert f["format"] != "raw" or size % frame == 0, f
    # Each writer continues its own numbering: its files are 0, 1, 2, ... across attempts,
    # but for the numbers of odd files recoveries skipped (listed, still in use).
    for fmt in ("raw", "codifhdr", "pcap"):
        files = [f["path"] for f in owner["files"] if f["format"] == fmt]
        names = {(p.rsplit(".", 2)[0], p.rsplit(".", 2)[2]) for p in files}
        seqs = [int(p.rsplit(".", 2)[1]) for p in files]
        seqs += [int(p.rsplit(".", 2)[1]) for p in skipped
                 if (p.rsplit(".", 2)[0], p.rsplit(".", 2)[2]) in names]
        assert sorted(seqs) == list(range(len(seqs))), (fmt, seqs)
for s in m["streams"]:
    assert s["packets"] > 0
assert sorted(per_attempt) == list(range(1, n + 1)), per_attempt
print(f"attempt {n}: states {states}, files per attempt {per_attempt}")
PY
}
check_attempts 3 recovered recovered stopped || fail "attempt 3's manifest"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['attempts'][1]['recovery']; \
assert r['by'].startswith('rocecapd'), r" "$manifest" || fail "attempt 2's recovery is not rocecapd's"
for p in "$run"/*.pcap; do
  capinfos "$p" >/dev/null || fail "capinfos cannot read $p after the restarts"
done
"$ROCECAP" verify --manifest "$manifest" --expect "$work/summary.json" >"$work/verify3.txt" ||
  { cat "$work/verify3.txt"; fail "rocecap verify refused the restarted run"; }

# --- attempt 4: a finished run started again keeps what it had ---
e2e_start_rocecapd "" "$work/attempt4.log" "$work/run.yaml"
pids+=("$E2E_PID")
e2e_wait_exit "$E2E_PID" 60
[ "$E2E_RC" = 0 ] || { cat "$work/attempt4.log"; fail "attempt 4 exited $E2E_RC"; }
check_attempts 4 recovered recovered stopped stopped || fail "attempt 4's manifest"

# --- a start failure leaves nothing ---
# The metrics port is taken: rocecapd fails after it has made the run directory.
exec 3< <(python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)')
holder=$!
pids+=("$holder")
read -r port <&3
sed -e 's|^  name: e2e|  name: never|' -e "s|^  enabled: false|  listen: 127.0.0.1:$port|" \
  "$work/run.yaml" >"$work/bad.yaml"
rc=0
"$ROCECAPD" --config "$work/bad.yaml" 2>"$work/bad.log" || rc=$?
kill "$holder" 2>/dev/null || true
[ "$rc" = 3 ] || { cat "$work/bad.log"; fail "the failing start exited $rc, expected 3"; }
[ ! -e "$work/out/never" ] || fail "a failed start left $work/out/never: $(ls -A "$work/out/never")"
# A symlinked run directory is refused before the lock or anything else is written through it.
mkdir "$work/elsewhere"
ln -s "$work/elsewhere" "$work/out/sym"
sed -e 's|^  name: e2e|  name: sym|' "$work/run.yaml" >"$work/sym.yaml"
rc=0
"$ROCECAPD" --config "$work/sym.yaml" 2>"$work/sym.log" || rc=$?
[ "$rc" = 3 ] || { cat "$work/sym.log"; fail "a symlinked run directory: exit $rc, expected 3"; }
[ -z "$(ls -A "$work/elsewhere")" ] || fail "files written through the symlink: $(ls -A "$work/elsewhere")"
passed=1
echo "PASS"
