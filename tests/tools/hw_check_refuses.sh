#!/usr/bin/env bash
# scripts/hw-check.sh on a host it cannot check: exit 2 and a message naming what is missing,
# before anything is built, run or written.
#   - no RDMA device (a fake sysfs without class/infiniband, an empty one, and this host's own
#     /sys where it has none): "no RDMA device: <root>/class/infiniband is missing or empty"
#   - an RDMA device but no interfaces given: the usage, listing the devices found
#   - an interface that is not a port of any RDMA device
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
