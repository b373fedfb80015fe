#!/usr/bin/env bash
# The Debian package from a fresh tree to a purge, with the real tools:
#  1. scripts/build-deb.sh builds it (CPack, dpkg-shlibdeps); Debian's lintian finds no error,
#     and every warning it gives is listed and justified in packaging/README.md;
#  2. it depends on nothing from CUDA, and what it holds is where Debian looks for it;
#  3. dpkg -i: the maintainer script created the rocecap account and directories and started
#     nothing; rocecapd --version and --check-config of the installed example; systemd-analyze
#     verify of the installed unit (its man: documentation included); man opens the pages;
#     the fleet agent's unit verifies too and its manual page opens;
#     tshark decodes a capture with the installed dissectors alone; a replay runs as the
#     service would run it (systemctl start where systemd is PID 1, else as user rocecap with
#     the unit's two capabilities), and the installed rocecap verifies it and draws it;
#  4. dpkg --remove keeps the conffile, dpkg --purge removes every file of the package and the
#     empty directories, keeps the operator's run file and the captured data.
# Root only (dpkg); a rocecap package already installed on this host is left alone (SKIP).
# The machine is left as found: the package purged, the account removed if it was not there.
#
# usage: deb_install_test.sh SOURCE_DIR WORK_DIR [cmake options for build-deb.sh...]
set -euo pipefail
src=$1
work=$2
shift 2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }
if dpkg-query -W -f='${Status}' rocecap 2>/dev/null | grep -q "install ok installed"; then
  echo "SKIP: a rocecap package is installed on this host; this test would replace and purge it"
  exit 77
fi
for tool in lintian dpkg-shlibdeps systemd-analyze man tshark; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool missing (scripts/install-deps.sh)"; exit 1; }
done
tmp=$(mktemp -d)
chmod 755 "$tmp"
had_user=0
getent passwd rocecap >/dev/null && had_user=1
installed=0
cleanup() {
  [ "$installed" -eq 0 ] || dpkg --purge rocecap >/dev/null 2>&1 || true
  rm -f /etc/rocecap/pkgtest.yaml
  rm -rf /var/lib/rocecap/pkgtest /var/lib/rocecap/pkgtest-in.pcap
  rmdir /etc/rocecap /var/lib/rocecap 2>/dev/null || true
  if [ "$had_user" -eq 0 ] && getent passwd rocecap >/dev/null; then
    userdel rocecap 2>/dev/null || true
    getent group rocecap >/dev/null && groupdel rocecap 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- 1. build and lint -------------------------------------------------------------------
bash "$src/scripts/build-deb.sh" "$work" "$@" >"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log"; fail "build-deb.sh"; }
deb=$(tail -1 "$tmp/build.log")
[ -f "$deb" ] || fail "build-deb.sh printed no package: $(tail -3 "$tmp/build.log")"
echo "package: $deb ($(grep -E '^-- rocecap [0-9]' "$tmp/build.log" | sed 's/^-- //'))"
lintian --tag-display-limit 0 -E -I --pedantic "$deb" >"$tmp/lintian.txt" 2>&1 || true
grep -v "^running with root privileges" "$tmp/lintian.txt" || true
! grep -q "^E: " "$tmp/lintian.txt" || fail "lintian reports errors (above)"
for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9.+-]*\).*/\1/p' "$tmp/lintian.txt" | sort -u); do
  grep -q "| \`$tag\`" "$src/packaging/README.md" ||
    fail "lintian warning $tag is not listed and justified in packaging/README.md"
done

# ---- 2. what the package says and holds --------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
! echo "$depends" | grep -qiE "cuda|nvidia" || fail "the package depends on CUDA: $depends"
echo "$depends" | grep -q "libpcap0.8" || fail "dpkg-shlibdeps did not run: $depends"
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's#^\./#/#' >"$tmp/files"
for f in /usr/sbin/rocecapd /usr/bin/rocecap /usr/lib/systemd/system/rocecapd@.service \
  /usr/bin/rocecap-agent /usr/lib/systemd/system/rocecap-agent.service \
  /usr/share/man/man8/rocecap-agent.8.gz /usr/share/doc/rocecap/examples/agent.yaml \
  /usr/share/doc/rocecap/fleet.md \
  /usr/lib/sysusers.d/rocecap.conf /usr/lib/tmpfiles.d/rocecap.conf /etc/rocecap/example.yaml \
  /usr/share/rocecap/dashboards/rocecap-dashboard.json \
  /usr/share/rocecap/dashboards/rocecap-alerts.yaml /usr/share/man/man8/rocecapd.8.gz \
  /usr/share/man/man1/rocecap.1.gz /usr/share/man/man5/rocecap-run.yaml.5.gz \
  /usr/lib/x86_64-linux-gnu/wireshark/plugins/codif.lua \
  /usr/lib/x86_64-linux-gnu/wireshark/plugins/vdif.lua \
  /usr/share/rocecap/quicklook/rocecap_quicklook.py /usr/share/doc/rocecap/copyright \
  /usr/share/doc/rocecap/changelog.gz /usr/share/doc/rocecap/examples/verbs.yaml; do
  grep -qx "$f" "$tmp/files" || fail "$f is not in the package"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/rocecap/example.yaml ||
  fail "/etc/rocecap/example.yaml is not a conffile"

# ---- 3. install and use ------------------------------------------------------------------
# Container images often exclude /usr/share/man and /usr/share/doc from dpkg (path-exclude);
# the package's own pages and documents are included again for this install.
dpkg --path-include='/usr/share/man/*/rocecap*' --path-include='/usr/share/doc/rocecap/*' \
  -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
installed=1
uid=$(getent passwd rocecap | cut -d: -f3) || fail "postinst did not create the rocecap account"
[ "$uid" -lt 1000 ] || fail "rocecap is not a system account (uid $uid)"
[ "$(stat -c '%U:%G %a' /var/lib/rocecap)" = "rocecap:rocecap 750" ] ||
  fail "/var/lib/rocecap is $(stat -c '%U:%G %a' /var/lib/rocecap), not rocecap:rocecap 750"
[ -d /etc/rocecap ] || fail "/etc/rocecap missing"
# Other rocecapd processes (a build tree's, run by other tests) are not the package's concern.
for exe in /proc/[0-9]*/exe; do
  [ "$(readlink "$exe" 2>/dev/null)" != /usr/sbin/rocecapd ] ||
    fail "the installed rocecapd runs after the install ($exe): the package starts nothing"
done
if [ -d /run/systemd/system ]; then
  ! systemctl is-enabled 'rocecapd@example.service' >/dev/null 2>&1 || fail "the unit was enabled"
fi

want="rocecapd $(sed -n 's/^project(rocecap VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")"
[ "$(/usr/sbin/rocecapd --version)" = "$want" ] || fail "rocecapd --version: $(/usr/sbin/rocecapd --version), not $want"
/usr/sbin/rocecapd --check-config /etc/rocecap/example.yaml >"$tmp/check.txt" ||
  { cat "$tmp/check.txt"; fail "--check-config of the installed example"; }
! ldd /usr/sbin/rocecapd | grep -qE "libcuda|libcudart" || fail "rocecapd links CUDA libraries"

systemd-analyze verify /usr/lib/systemd/system/rocecapd@example.service 2>"$tmp/verify.err" ||
  { cat "$tmp/verify.err"; fail "systemd-analyze verify of the installed unit"; }
[ ! -s "$tmp/verify.err" ] || { cat "$tmp/verify.err"; fail "systemd-analyze verify warned"; }
# The agent's unit: its ExecStart and man: documentation are installed; it is not enabled
# (it starts only once the operator has written /etc/rocecap/agent.yaml).
systemd-analyze verify /usr/lib/systemd/system/rocecap-agent.service 2>"$tmp/verify-agent.err" ||
  { cat "$tmp/verify-agent.err"; fail "systemd-analyze verify of the installed agent unit"; }
[ ! -s "$tmp/verify-agent.err" ] || { cat "$tmp/verify-agent.err"; fail "systemd-analyze verify warned (agent)"; }
if [ -d /run/systemd/system ]; then
  ! systemctl is-enabled rocecap-agent.service >/dev/null 2>&1 || fail "the agent unit was enabled"
fi

[ "$(man -w rocecapd)" = /usr/share/man/man8/rocecapd.8.gz ] || fail "man -w rocecapd: $(man -w rocecapd 2>&1)"
MANWIDTH=100 man 5 rocecap-run.yaml 2>/dev/null | grep -q "capture.ring_depth" ||
  fail "man 5 rocecap-run.yaml does not show the run file's keys"
MANWIDTH=100 man 1 rocecap 2>/dev/null | grep -q "rocecap quicklook" || fail "man 1 rocecap"
MANWIDTH=100 man 1 rocecap 2>/dev/null | grep -q "rocecap fleet" || fail "man 1 rocecap: no fleet section"
MANWIDTH=100 man 8 rocecap-agent 2>/dev/null | grep -q -- "--lease-ttl" || fail "man 8 rocecap-agent"
/usr/bin/rocecap-agent --help >/dev/null || fail "rocecap-agent --help"

# A capture with a tone and known drops; the installed dissectors alone decode it (no -X).
/usr/bin/rocecap gen --groups 239.17.0.1:36001 --sources 192.0.2.11,192.0.2.12 --frames 3000 \
  --payload-bytes 4096 --tone 0.15625 --drop 0.01 --seed 4 --pcap "$tmp/in.pcap" >"$tmp/gen.json"
n=$(tshark -r "$tmp/in.pcap" -Y codif -T fields -e codif.frame_index 2>/dev/null | sort -u | wc -l)
[ "$n" -gt 2900 ] || fail "tshark with the installed plugins decoded $n distinct CODIF frames"

# A run of the installed rocecapd as the service runs it: user rocecap, CAP_NET_RAW and
# CAP_IPC_LOCK, output in /var/lib/rocecap (pcap-file replay, so no interface is needed).
install -m 0644 "$tmp/in.pcap" /var/lib/rocecap/pkgtest-in.pcap
cat >/etc/rocecap/pkgtest.yaml <<YAML
run: { name: pkgtest }
capture:
  backend: pcap-file
  pcap_file: /var/lib/rocecap/pkgtest-in.pcap
  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]
streams:
  format: codif
  antennas: [ { name: ak01, source: 192.0.2.11 }, { name: ak02, source: 192.0.2.12 } ]
output: { directory: /var/lib/rocecap/pkgtest, formats: [raw, codifhdr] }
metrics: { enabled: false }
YAML
if [ -d /run/systemd/system ]; then
  echo "systemd is PID 1: systemctl start rocecapd@pkgtest"
  systemctl start rocecapd@pkgtest.service
  for _ in $(seq 1 100); do
    systemctl is-active --quiet rocecapd@pkgtest.service || break
    sleep 0.2
  done
  [ "$(systemctl show -p Result --value rocecapd@pkgtest.service)" = success ] ||
    { journalctl -u rocecapd@pkgtest.service --no-pager | tail -20; fail "the service failed"; }
else
  echo "no systemd running (PID 1: $(ps -o comm= -p 1)): running the unit's command as it would"
  setpriv --reuid=rocecap --regid=rocecap --init-groups --inh-caps=+net_raw,+ipc_lock \
    --ambient-caps=+net_raw,+ipc_lock /usr/sbin/rocecapd --config /etc/rocecap/pkgtest.yaml
fi
run=/var/lib/rocecap/pkgtest/pkgtest
[ "$(stat -c %U "$run/manifest.json")" = rocecap ] || fail "the run was not written by rocecap"
/usr/bin/rocecap verify --manifest "$run/manifest.json" --expect "$tmp/gen.json" >"$tmp/verify.txt" ||
  { cat "$tmp/verify.txt"; fail "rocecap verify of the installed run"; }
/usr/bin/rocecap quicklook "$run" --out "$tmp/ql" --fft 64 >/dev/null
/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert [s["bandpass"]["peak_channel"] for s in r["streams"]] == [20, 20], r["streams"]' \
  "$tmp/ql/quicklook.json" || fail "quicklook of the installed run"

# ---- 4. remove, purge --------------------------------------------------------------------
dpkg --remove rocecap >"$tmp/remove.log" 2>&1 || { cat "$tmp/remove.log"; fail "dpkg --remove"; }
[ ! -e /usr/sbin/rocecapd ] || fail "rocecapd left after dpkg --remove"
[ -f /etc/rocecap/example.yaml ] || fail "dpkg --remove removed the conffile"
dpkg --purge rocecap >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge"; }
installed=0
while read -r f; do
  [ -d "$f" ] || [ ! -e "$f" ] || fail "$f left after dpkg --purge"
done <"$tmp/files"
[ ! -e /etc/rocecap/example.yaml ] || fail "the conffile is left after purge"
[ -f /etc/rocecap/pkgtest.yaml ] || fail "purge removed the operator's run file"
[ -f "$run/manifest.json" ] || fail "purge removed captured data"
for d in /usr/share/rocecap /usr/share/doc/rocecap; do
  [ ! -e "$d" ] || fail "$d left after purge"
done
dpkg-query -W -f='${Status}' rocecap 2>/dev/null | grep -q "not-installed" ||
  [ -z "$(dpkg-query -W -f='${Status}' rocecap 2>/dev/null)" ] || fail "dpkg still knows rocecap"
echo "deb package: OK"
