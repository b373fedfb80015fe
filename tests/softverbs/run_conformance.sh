#!/usr/bin/env bash
# Runs verbs_conformance against softverbs in a private network namespace with a veth pair:
# sva0/sva1 back the fake devices sv0/sv1, frames are injected on their peers svb0/svb1.
# Usage: run_conformance.sh BINARY [--dmabuf=ebadf|eopnotsupp] [--only NAME]   (needs root; else exit 77)
set -euo pipefail
bin=$1
shift
dmabuf=eopnotsupp
extra=()
for a in "$@"; do
  case $a in
    --dmabuf=*) dmabuf=${a#--dmabuf=} ;;
    *) extra+=("$a") ;;  # passed on to the program, e.g. --only NAME
  esac
done
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
  echo "SKIP: needs root and iproute2 (network namespaces)"
  exit 77
fi
libdir=${SOFTVERBS_LIB_DIR:?SOFTVERBS_LIB_DIR must name the softverbs library directory}
ns=svconf$$
tmp=$(mktemp -d)
cleanup() {
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The loader must pick softverbs, not the system library.
resolved=$(LD_LIBRARY_PATH=$libdir ldd "$bin" | awk '/libibverbs.so.1/ {print $3}')
if [[ $(readlink -f "$resolved") != $(readlink -f "$libdir/libibverbs.so.1") ]]; then
  echo "FAIL: libibverbs.so.1 resolves to '$resolved', not softverbs in $libdir" >&2
  exit 1
fi

ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link set lo up
for i in 0 1; do
  ip -n "$ns" link add sva$i mtu 9000 type veth peer name svb$i mtu 9000
  ip -n "$ns" link set sva$i up
  ip -n "$ns" link set svb$i up
done

rc=0
ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" SOFTVERBS_DEVICES=sv0=sva0,sv1=sva1 \
  SOFTVERBS_SYSFS_ROOT="$tmp/sys" SOFTVERBS_DMABUF="$dmabuf" \
  timeout 240 "$bin" --dev sv0 --tx-if svb0 --dev-if sva0 --sysfs-root "$tmp/sys" \
 --dev2 sv1 --tx-if2 svb1 --dmabuf "$dmabuf" "${extra[@]}" 2>"$tmp/stderr" || rc=$?
cat "$tmp/stderr" >&2
# SOFTVERBS_TRAP=nft: closing the last context of a device removes its nft table.
if [[ ${SOFTVERBS_TRAP:-} == nft ]] && ip netns exec "$ns" nft list tables | grep softverbs_; then
  echo "FAIL: softverbs left its nft tables behind" >&2
  exit 1
fi
if grep -qi "version" "$tmp/stderr"; then
  echo "FAIL: the loader complained about symbol versions" >&2
  exit 1
fi
exit "$rc"
