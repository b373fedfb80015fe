#!/usr/bin/env bash
# scripts/hw-check.sh on a host it cannot check: exit 2 and a message naming what is missing,
# before anything is built, run or written.
#   - no RDMA device (a fake sysfs without class/infiniband, an empty one, and this host's own
#     /sys where it has none): "no RDMA device: <root>/class/infiniband is missing or empty"
#   - an RDMA device but no interfaces given: the usage, listing the devices found
#   - an interface that is not a port of any RDMA device
#   - (as root) an MTU below 1500 on RX_IF or TX_IF: step 3's frames would not fit
# and, as root, what step 3 will send (--plan, which builds and runs nothing): CODIF payloads
# that fit the smaller MTU of the two (8192 bytes with jumbo frames, 1408 with 1500), never
# frames the link would fragment or drop.
# usage: hw_check_refuses.sh REPO_ROOT
set -euo pipefail
script=${1:?usage: $0 REPO_ROOT}/scripts/hw-check.sh
work=$(mktemp -d /tmp/rocecap-hw-check-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

expect_refusal() { # $1: sysfs root, $2: text the message must hold, rest: arguments
  local root=$1 want=$2 rc=0
  shift 2
  HW_CHECK_SYSFS_ROOT=$root bash "$script" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" != 2 ] || ! grep -qF "$want" "$work/err"; then
    echo "FAIL: hw-check.sh $* (sysfs $root): exit $rc (want 2), stderr must hold '$want':"
    cat "$work/out" "$work/err"
    exit 1
  fi
  if compgen -G "$work/hw-check-*.txt" >/dev/null; then
    echo "FAIL: a refused hw-check wrote a report"
    exit 1
  fi
  echo "ok: $(cat "$work/err")"
}

mkdir -p "$work/none" "$work/empty/class/infiniband"
expect_refusal "$work/none" "hw-check: no RDMA device: $work/none/class/infiniband is missing or empty" rx0 tx0
expect_refusal "$work/empty" "hw-check: no RDMA device: $work/empty/class/infiniband is missing or empty" rx0 tx0
if compgen -G "/sys/class/infiniband/*" >/dev/null; then
  echo "this host has RDMA devices: its own /sys is not checked"
else
  expect_refusal /sys "hw-check: no RDMA device: /sys/class/infiniband is missing or empty" rx0 tx0
fi
mkdir -p "$work/dev/class/infiniband/mlx5_0/device/net/rx0" "$work/dev/class/net/rx0" \
  "$work/dev/class/net/tx0"
expect_refusal "$work/dev" "usage: hw-check.sh RX_IF TX_IF" # no interfaces
expect_refusal "$work/dev" "(RDMA devices here: mlx5_0)"
if [ "$(id -u)" = 0 ]; then
  expect_refusal "$work/dev" "tx0 is not a port of an RDMA device (mlx5_0: none lists it" tx0 rx0
fi

if [ "$(id -u)" = 0 ]; then
  plan() { # $1: MTU of rx0, $2: MTU of tx0, $3: the plan line expected on stdout
    echo "$1" >"$work/dev/class/net/rx0/mtu"
    echo "$2" >"$work/dev/class/net/tx0/mtu"
    local rc=0
    HW_CHECK_SYSFS_ROOT=$work/dev bash "$script" rx0 tx0 --source 192.0.2.11 --plan \
      >"$work/out" 2>"$work/err" || rc=$?
    if [ "$rc" != 0 ] || ! grep -qF "$3" "$work/out"; then
      echo "FAIL: hw-check.sh --plan (MTU rx0 $1, tx0 $2): exit $rc (want 0), stdout must hold '$3':"
      cat "$work/out" "$work/err"
      exit 1
    fi
    if compgen -G "$work/hw-check-*.txt" >/dev/null; then
      echo "FAIL: --plan wrote a report"
      exit 1
    fi
    echo "ok: $(cat "$work/out")"
  }
  plan 9000 9000 "hw-check: plan: step 3 sends CODIF frames with 8192-byte payloads (8284-byte IP packets; MTU rx0 9000, tx0 9000), capture.max_frame 9216"
  plan 1500 9000 "hw-check: plan: step 3 sends CODIF frames with 1408-byte payloads (1500-byte IP packets; MTU rx0 1500, tx0 9000), capture.max_frame 9216"
  plan 9216 9216 "hw-check: plan: step 3 sends CODIF frames with 8192-byte payloads (8284-byte IP packets; MTU rx0 9216, tx0 9216), capture.max_frame 9238"
  echo 9000 >"$work/dev/class/net/rx0/mtu"
  echo 1000 >"$work/dev/class/net/tx0/mtu"
  expect_refusal "$work/dev" "the MTU of tx0 is 1000: step 3 needs at least 1500 on both interfaces (ip link set tx0 mtu 9000)" rx0 tx0 --source 192.0.2.11
  rm "$work/dev/class/net/rx0/mtu"
  expect_refusal "$work/dev" "cannot read the MTU of rx0 ($work/dev/class/net/rx0/mtu)" rx0 tx0 --source 192.0.2.11
fi
