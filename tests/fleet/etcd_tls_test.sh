#!/usr/bin/env bash
# etcd with TLS, client certificates and etcd's own users, set up as doc/fleet.md tells an
# operator to (same openssl and etcdctl steps), on loopback: `rocecap fleet` and rocecap-agent
# reach it with the CA, a client certificate without CN and the fleet's user (password from a
# file); without the certificate, with a wrong password, or outside the fleet's prefix they are
# refused with exit 3 and etcd's reason. No root needed; SKIPPED without etcd or openssl.
#
# usage: etcd_tls_test.sh ROCECAP ROCECAP-AGENT
set -euo pipefail
ROCECAP=$(realpath "${1:?usage: $0 ROCECAP ROCECAP-AGENT}")
AGENT=$(realpath "${2:?usage: $0 ROCECAP ROCECAP-AGENT}")
for tool in etcd etcdctl openssl curl; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
work=$(mktemp -d /tmp/rocecap-etcd-tls.XXXXXX)
etcd_pid="" agent_pid=""
cleanup() {
  [ -z "$agent_pid" ] || kill "$agent_pid" 2>/dev/null || true
  [ -z "$etcd_pid" ] || kill -9 "$etcd_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ ! -f "$work/etcd.log" ] || tail -20 "$work/etcd.log"; exit 1; }
cd "$work"

# Certificates as doc/fleet.md makes them: the member's with serverAuth and clientAuth, the
# client's with clientAuth and no CN.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test etcd CA" \
  -keyout ca-key.pem -out ca.pem 2>/dev/null
printf '%s\n' 'basicConstraints = CA:FALSE' 'keyUsage = digitalSignature, keyEncipherment' \
  'extendedKeyUsage = serverAuth, clientAuth' 'subjectAltName = DNS:localhost, IP:127.0.0.1' >etcd1.ext
openssl req -newkey rsa:2048 -nodes -subj "/CN=etcd1" -keyout etcd1-key.pem -out etcd1.csr 2>/dev/null
openssl x509 -req -in etcd1.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
  -extfile etcd1.ext -out etcd1.pem 2>/dev/null
printf '%s\n' 'basicConstraints = CA:FALSE' 'keyUsage = digitalSignature, keyEncipherment' \
  'extendedKeyUsage = clientAuth' >client.ext
openssl req -newkey rsa:2048 -nodes -subj "/O=rocecap/OU=lab" -keyout client-key.pem -out client.csr 2>/dev/null
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
  -extfile client.ext -out client.pem 2>/dev/null

# Below the ephemeral range (ip_local_port_range, 32768-60999), where another test's
# connection can hold a port.
port=$((20001 + RANDOM % 6000 * 2))
url=https://127.0.0.1:$port
etcd --name etcd1 --data-dir "$work/data" \
  --listen-client-urls "$url" --advertise-client-urls "$url" \
  --listen-peer-urls "https://127.0.0.1:$((port + 1))" \
  --initial-advertise-peer-urls "https://127.0.0.1:$((port + 1))" \
  --initial-cluster "etcd1=https://127.0.0.1:$((port + 1))" \
  --cert-file etcd1.pem --key-file etcd1-key.pem --trusted-ca-file ca.pem --client-cert-auth \
  --peer-cert-file etcd1.pem --peer-key-file etcd1-key.pem --peer-trusted-ca-file ca.pem \
  --peer-client-cert-auth >"$work/etcd.log" 2>&1 &
etcd_pid=$!
export ETCDCTL_API=3
ctl() { etcdctl --endpoints="$url" --cacert=ca.pem --cert=client.pem --key=client-key.pem "$@"; }
# Up to about 30 s: etcd fsyncs its WAL while it starts, slow on a loaded VM disk.
for ((i = 0; i < 300; i++)); do ctl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
ctl endpoint health >/dev/null 2>&1 || fail "etcd with TLS did not come up: $(tail -5 "$work/etcd.log")"

tls=(--etcd "$url" --cacert ca.pem --cert client.pem --key client-key.pem)
expect() { # expect RC TEXT ARGS...: `rocecap fleet ARGS` exits RC and says TEXT
  local want=$1 text=$2 rc=0
  shift 2
  "$ROCECAP" fleet "$@" >out.txt 2>&1 || rc=$?
  [ "$rc" = "$want" ] && grep -q -- "$text" out.txt || fail "fleet $* exited $rc, not $want with '$text': $(cat out.txt)"
}
# Reached over TLS (the run does not exist: exit 1); without the client certificate: refused.
expect 1 "fleet lab: no run obs1" status --fleet lab --run obs1 "${tls[@]}"
expect 3 "no etcd endpoint answered" status --fleet lab --run obs1 --etcd "$url" --cacert ca.pem

# etcd's users, as doc/fleet.md sets them up; then authentication is on.
ctl user add root:rootpw >/dev/null
ctl role add rocecap-lab >/dev/null
ctl role grant-permission rocecap-lab --prefix=true readwrite /rocecap/lab/ >/dev/null
ctl user add rocecap-lab:labpw >/dev/null
ctl user grant-role rocecap-lab rocecap-lab >/dev/null
# (etcdctl grants root its role first and says so on stderr: kept for a failure only)
ctl auth enable >/dev/null 2>auth.err || fail "auth enable: $(cat auth.err)"
echo labpw >pw
echo wrong >bad-pw
expect 3 "" status --fleet lab --run obs1 "${tls[@]}"  # certificate alone: no user
expect 1 "fleet lab: no run obs1" status --fleet lab --run obs1 "${tls[@]}" --user rocecap-lab --password-file pw
expect 3 "authentication failed" status --fleet lab --run obs1 "${tls[@]}" --user rocecap-lab --password-file bad-pw
expect 3 "permission denied" status --fleet other --run obs1 "${tls[@]}" --user rocecap-lab --password-file pw
ETCDCTL_USER=rocecap-lab:labpw expect 1 "fleet lab: no run obs1" status --fleet lab --run obs1 "${tls[@]}"

# The agent from its configuration file: TLS files and the password file named there.
cat >agent.yaml <<YAML
fleet: lab
host: cap1
state_dir: $work/agent
lease_ttl: 3
etcd:
  endpoints: [$url]
  user: rocecap-lab
  password_file: $work/pw
  ca_file: $work/ca.pem
  cert_file: $work/client.pem
  key_file: $work/client-key.pem
YAML
"$AGENT" --config agent.yaml >agent.log 2>&1 &
agent_pid=$!
for ((i = 0; i < 50; i++)); do
  ctl --user root:rootpw get /rocecap/lab/agents/cap1 --print-value-only 2>/dev/null | grep -q '"host":"cap1"' && break
  sleep 0.1
done
ctl --user root:rootpw get /rocecap/lab/agents/cap1 --print-value-only | grep -q '"host":"cap1"' ||
  fail "the agent did not register over TLS: $(cat agent.log)"
kill "$agent_pid"
wait "$agent_pid" || fail "the agent exited $? on SIGTERM"
agent_pid=""
# Its lease is revoked on a clean stop: the registration is gone at once.
[ -z "$(ctl --user root:rootpw get /rocecap/lab/agents/cap1 --print-value-only)" ] || fail "registration left behind"
echo PASS
