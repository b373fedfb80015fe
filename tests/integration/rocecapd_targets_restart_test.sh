#!/usr/bin/env bash
# Integration: a run over three output targets (output.directories, issue 12) whose rocecapd is
# killed mid-run, recovered and restarted.
#
# rocecapd replays `rocecap gen --pcap` at the recorded pace (6 s of traffic) into three
# directories with 1 MiB rotation, so the killed attempt leaves files on every target, some not
# yet in the manifest and the open ones cut short. Checked:
#   recover   `rocecap recover` (offline) relists the killed attempt's files on EVERY target
#             with their "target", first_index and frames, each file's size as on disk, raw
#             files whole frames; the recovery section names the three targets;
#   restart   rocecapd on the same run file continues the run as attempt 2 and is killed too;
#             attempt 3 recovers attempt 2 itself (over all targets) and runs to the end: every
#             file on every target listed once with its target, no relative name on two
#             targets (each writer's numbers continue past the highest on any target), each
#             writer's numbers 0, 1, 2, ... across targets and attempts;
#   verify    `rocecap verify` accepts the run (killed attempts included);
#   inspect   `rocecap inspect RUN_DIR --json` reads every stream's raw files from their
#             targets: per stream the frames it reports equal the frames in the listed files,
#             which lie on more than one target;
#   missing   attempt 4 killed, target 2 moved away before attempt 5: attempt 5 logs the target
#             it cannot read, the manifest names it (recovery.targets), its listed files stay
#             listed, and no new file takes one of their names; target 2 is left out of
#             rotation for attempt 5 (failed, logged, out of rotation once) and never
#             re-created: nothing appears at its path, no file of attempt 5 is on it
#             (issue 23, item 10).
# Needs no privileges.
#
# usage: rocecapd_targets_restart_test.sh ROCECAPD ROCECAP
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by e2e_lib.sh
ROCECAPD=${1:?usage: $0 ROCECAPD ROCECAP}
ROCECAP=${2:?usage: $0 ROCECAPD ROCECAP}
# shellcheck source=e2e_lib.sh
source "$here/e2e_lib.sh"

work=$(mktemp -d /tmp/rocecap-targets-restart-test.XXXXXX)
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
E2E_BACKEND=pcap-file E2E_PCAP_FILE=$work/sent.pcap E2E_IFACE=rec0 E2E_OUT=$work/t0 \
  E2E_ROTATE=1MiB e2e_config "$work/run.yaml"
sed -i -e 's|^  pcap_file: .*|&\n  replay_pace: recorded|' \
  -e "s|^  directory: .*|  directories: [$work/t0, $work/t1, $work/t2]|" "$work/run.yaml"
run=$work/t0/e2e
manifest=$run/manifest.json

# check_files STAGE: every run file on every target is listed once, with its target and size.
check_files() {
  python3 - "$manifest" "$work" "$E2E_FRAME_BYTES" "$1" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1])); work = sys.argv[2]; frame = int(sys.argv[3]); stage = sys.argv[4]
targets = [t["directory"] for t in m["targets"]]
assert targets == [os.path.join(work, f"t{i}") for i in range(3)], targets
listed = {}
for owner in m["streams"] + m["interfaces"]:
    for f in owner["files"]:
        key = (f["target"], f["path"])
        assert key not in listed, f"listed twice: {key}"
        listed[key] = f
        assert f["frames"] == f.get("records", f["frames"]), f
        if f["format"] in ("raw", "codifhdr"):
            assert "first_index" in f, f
on_disk = set()
for t, d in enumerate(targets):
    for dirpath, _, names in os.walk(d):
        for n in names:
            if n.endswith((".codif", ".chead", ".pcap")):
                on_disk.add((t, os.path.relpath(os.path.join(dirpath, n), d)))
assert on_disk == set(listed), sorted(on_disk ^ set(listed))
names = {}
for t, p in on_disk:
    assert p not in names, f"{p} on target {names[p]} and target {t}: a name reused"
    names[p] = t
for (t, p), f in listed.items():
    size = os.path.getsize(os.path.join(targets[t], p))
    assert size == f["bytes"], (t, p, size, f["bytes"])
    assert f["format"] != "raw" or size % frame == 0, (t, p, size)
    assert f["format"] != "codifhdr" or size % 64 == 0, (t, p, size)
used = {t for t, _ in listed}
assert used == {0, 1, 2}, f"{stage}: files on targets {used} only"
if stage == "recovered":
    rec = m["recovery"]
    assert m["state"] == "recovered", m["state"]
    assert [x["target"] for x in rec["targets"]] == [0, 1, 2], rec["targets"]
    assert all(x["problem"] is None for x in rec["targets"]), rec["targets"]
    off_first = [k for k, f in listed.items() if k[0] != 0 and f["attempt"] == 1]
    assert off_first, "no file of attempt 1 listed on targets 1 and 2"
    cut = [k for k, f in listed.items() if "trimmed_bytes" in f.get("recovered", {})]
    assert any(t == 2 for t, _ in cut), f"no file cut on target 2: {cut}"
    print(f"recovered: {len(listed)} files, {len(off_first)} of them on targets 1-2; "
          f"{rec['files_added']} added, {rec['files_trimmed']} cut")
else:
    assert m["state"] == "stopped" and m["attempt"] == 3, (m["state"], m["attempt"])
    per = {}
    for (t, p), f in listed.items():
        per.setdefault(f["attempt"], set()).add(t)
    assert sorted(per) == [1, 2, 3], per
    # Each writer continues its own numbering over all targets: 0, 1, 2, ...
    for owner in m["streams"] + m["interfaces"]:
        for fmt in ("raw", "codifhdr", "pcap"):
            seqs = [int(f["path"].rsplit(".", 2)[-2]) for f in owner["files"] if f["format"] == fmt]
            assert seqs == list(range(len(seqs))), (fmt, seqs)
    print(f"attempt 3: {len(listed)} files; targets per attempt "
          f"{ {a: sorted(t) for a, t in per.items()} }")
PY
}

# --- attempt 1, killed mid-run, recovered by `rocecap recover` ---
e2e_start_rocecapd "" "$work/attempt1.log" "$work/run.yaml"
first=$E2E_PID
pids+=("$first")
sleep 4
kill -0 "$first" 2>/dev/null || fail "rocecapd ended before it could be killed mid-run"
kill -9 "$first"
wait "$first" 2>/dev/null || true
grep -q '"state": "running"' "$manifest" || fail "the killed run's manifest is not a running one"
# A raw file on target 2 ending mid-frame, as a power loss or a full disk mid-write leaves one
# (a SIGKILL rarely tears one: buffered files are written whole records per writev), so that
# recovery's cut off the first target is covered.
python3 - "$work/t2/e2e" "$E2E_FRAME_BYTES" <<'PY'
import os, sys
d = sys.argv[1]; frame = int(sys.argv[2])
raw = [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".codif")]
assert raw, "the killed attempt left no raw file on target 2"
victim = max(raw, key=os.path.getsize)
if os.path.getsize(victim) % frame == 0:
    with open(victim, "ab") as f:
        f.write(b"\xa5" * (frame // 2))
print(f"target 2: {os.path.basename(victim)} ends mid-frame")
PY
"$ROCECAP" recover "$run" >"$work/recover.txt"
grep -q "^  target 2: e2e/.*codif: cut from" "$work/recover.txt" ||
  fail "rocecap recover did not cut the torn file on target 2: $(cat "$work/recover.txt")"
grep "^  target [0-9] /" "$work/recover.txt"
grep -q "target 2 $work/t2: [1-9][0-9]* files" "$work/recover.txt" ||
  fail "rocecap recover does not report target 2's files"
check_files recovered || fail "the recovered manifest"

# --- attempt 2 (killed), attempt 3 recovers it itself and runs to the end ---
e2e_start_rocecapd "" "$work/attempt2.log" "$work/run.yaml"
second=$E2E_PID
pids+=("$second")
grep -q "continuing as attempt 2" "$work/attempt2.log" || fail "the restart is not logged"
sleep 3
kill -0 "$second" 2>/dev/null || fail "attempt 2 ended before it could be killed mid-run"
kill -9 "$second"
wait "$second" 2>/dev/null || true
e2e_start_rocecapd "" "$work/attempt3.log" "$work/run.yaml"
pids+=("$E2E_PID")
e2e_wait_exit "$E2E_PID" 60
[ "$E2E_RC" = 0 ] || { tail -30 "$work/attempt3.log"; fail "attempt 3 exited $E2E_RC"; }
grep -q "attempt 2 did not end cleanly" "$work/attempt3.log" ||
  fail "attempt 3 did not recover attempt 2: $(tail -20 "$work/attempt3.log")"
if grep -q "File exists" "$work/attempt2.log" "$work/attempt3.log"; then
  fail "a restarted attempt met a file name already in use: $(grep -h "File exists" "$work"/attempt*.log | head -3)"
fi
check_files stopped || fail "attempt 3's manifest"

"$ROCECAP" verify --manifest "$manifest" --expect "$work/summary.json" >"$work/verify.txt" ||
  { cat "$work/verify.txt"; fail "rocecap verify refused the run over three targets"; }

# --- inspect of the whole run ---
"$ROCECAP" inspect "$run" --json >"$work/inspect.json" || fail "rocecap inspect RUN_DIR failed"
"$ROCECAP" inspect "$manifest" >"$work/inspect.txt" || fail "rocecap inspect manifest.json failed"
grep -q "files on 3 targets" "$work/inspect.txt" || fail "inspect's table: $(head -3 "$work/inspect.txt")"
python3 - "$manifest" "$work/inspect.json" "$E2E_FRAME_BYTES" <<'PY' || fail "inspect RUN_DIR"
import json, sys
m = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2])); frame = int(sys.argv[3])
assert not r["unreadable"], r["unreadable"]
assert r["targets"] == 3, r["targets"]
raw = {p["owner"]: p for p in r["parts"] if p["file_format"] == "raw"}
assert len(raw) == len(m["streams"]), (sorted(raw), len(m["streams"]))
for s in m["streams"]:
    owner = f'{s["group"]}:{s["port"]} {s["antenna"]}'
    files = [f for f in s["files"] if f["format"] == "raw"]
    want = sum(f["bytes"] for f in files) // frame
    part = raw[owner]
    assert len(part["files"]) == len(files), (owner, len(part["files"]), len(files))
    got = sum(x["frames"] for x in part["streams"])
    assert got == want, (owner, got, want)
    assert part["records"] == want and not part["rejected"], (owner, part["records"], part["rejected"])
    assert len({f["target"] for f in files}) > 1, f"{owner}: raw files on one target only"
pcap = [p for p in r["parts"] if p["file_format"] == "pcap"]
assert len(pcap) == len(m["interfaces"]), len(pcap)
for p, i in zip(pcap, m["interfaces"]):
    assert p["records"] == sum(f["frames"] for f in i["files"]), (p["records"], i["files"])
print(f"inspect RUN_DIR: {len(raw)} streams, frames per stream "
      f"{ {o: sum(x['frames'] for x in p['streams']) for o, p in raw.items()} }")
PY
# --- a target missing at the restart: attempt 4 killed, target 2 gone when attempt 5 starts ---
e2e_start_rocecapd "" "$work/attempt4.log" "$work/run.yaml"
pids+=("$E2E_PID")
sleep 3
kill -9 "$E2E_PID"
wait "$E2E_PID" 2>/dev/null || true
mv "$work/t2" "$work/t2.away"
e2e_start_rocecapd "" "$work/attempt5.log" "$work/run.yaml"
pids+=("$E2E_PID")
e2e_wait_exit "$E2E_PID" 60
[ "$E2E_RC" = 0 ] || { tail -30 "$work/attempt5.log"; fail "attempt 5 exited $E2E_RC"; }
grep -q "output target 2 ($work/t2) cannot be read for recovery" "$work/attempt5.log" ||
  fail "attempt 5 does not name the missing target: $(grep -i recover "$work/attempt5.log" | head -5)"
grep -q "File exists" "$work/attempt5.log" && fail "attempt 5 met a file name already in use"
[ ! -e "$work/t2" ] || fail "attempt 5 re-created the missing target: $(find "$work/t2" | head -5)"
grep -q "output target 2 ($work/t2) left out of rotation" "$work/attempt5.log" ||
  fail "attempt 5 does not log target 2 out of rotation: $(grep "target 2" "$work/attempt5.log" | head -5)"
python3 - "$manifest" "$work" <<'PY' || fail "the run with target 2 missing at the restart"
import json, os, sys
m = json.load(open(sys.argv[1])); work = sys.argv[2]
rec = m["attempts"][3]["recovery"]
assert rec["targets"][2]["problem"] and "no run directory" in rec["targets"][2]["problem"], rec["targets"]
assert rec["targets"][1]["problem"] is None, rec["targets"]
away = set()
for dirpath, _, names in os.walk(os.path.join(work, "t2.away")):
    away |= {os.path.relpath(os.path.join(dirpath, n), os.path.join(work, "t2.away"))
             for n in names if n.endswith((".codif", ".chead", ".pcap"))}
listed = {(f["target"], f["path"]): f for o in m["streams"] + m["interfaces"] for f in o["files"]}
kept = {p for t, p in listed if t == 2 and listed[(t, p)]["attempt"] <= 4}
# Every file the manifest listed on target 2 is kept as listed (those attempt 4 opened after
# its last snapshot cannot be known while the target is away).
assert kept and kept <= away, ("listed files of the missing target dropped", sorted(kept - away))
for p in kept:
    assert "could not be read" in listed[(2, p)]["recovered"]["note"], listed[(2, p)]
# Attempt 5's new files are on targets 0 and 1 only and reuse no name listed on the missing
# target, nor one on another target.
new = {p for (t, p), f in listed.items() if f["attempt"] == 5}
assert new and not new & kept, sorted(new & kept)
on_2 = sorted(p for (t, p), f in listed.items() if f["attempt"] == 5 and t == 2)
assert not on_2, f"attempt 5 wrote on the missing target: {on_2}"
t2 = m["targets"][2]
assert t2["state"] == "failed" and t2["out_of_rotation"] == 1, t2
assert "could not be read for recovery" in t2["reason"] and "no run directory" in t2["reason"], t2
names = {}
for t in range(3):
    for dirpath, _, ns in os.walk(os.path.join(work, f"t{t}")):
        for n in ns:
            if n.endswith((".codif", ".chead", ".pcap")):
                p = os.path.relpath(os.path.join(dirpath, n), os.path.join(work, f"t{t}"))
                assert p not in names and p not in kept, f"{p} on two targets"
                names[p] = t
print(f"target 2 missing at the restart: {len(kept)} of its files kept as listed, "
      f"{len(new)} new files, no name reused")
PY
passed=1
echo "PASS"
