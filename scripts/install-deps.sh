#!/usr/bin/env bash
# Installs, from Debian 12 packages only, exactly what rocecap's build, tests and demo use.
# Idempotent: packages already present are left alone; apt-get update runs only when
# something is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config clang-14 libclang-rt-14-dev clang-format
  # libraries
  libibverbs-dev libpcap-dev libyaml-cpp-dev prometheus-cpp-dev libcli11-dev
  libspdlog-dev libfmt-dev libsystemd-dev libnuma-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # real clients and test tools
  tshark tcpdump iproute2 python3 valgrind prometheus
  # tools the test scripts call that minimal images may lack: systemd-analyze, pkill/sysctl, bc
  systemd procps bc
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
