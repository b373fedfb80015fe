#!/usr/bin/env bash
# Installs, from Debian 12 packages only, exactly what rocecap's build, tests and demo use.
# Idempotent: packages already present are left alone; apt-get update runs only when
# something is missing. Needs root (or sudo).
#
# Usage: scripts/install-deps.sh [--debian-cuda]
#   --debian-cuda  also Debian's own CUDA toolkit (11.8: nvidia-cuda-toolkit, nvidia-cuda-dev,
#                  about 1.6 GB) from the contrib and non-free components, which this enables
#                  in the apt sources. Only scripts/test.sh asks for it (CI builds the CUDA code
#                  against it); the demo and a normal build do not need it.
set -euo pipefail

debian_cuda=0
for arg in "$@"; do
  case "$arg" in
    --debian-cuda) debian_cuda=1 ;;
    *)
      echo "install-deps: unknown argument '$arg' (usage: install-deps.sh [--debian-cuda])" >&2
      exit 2
      ;;
  esac
done

packages=(
  # build
  build-essential cmake pkg-config clang-14 libclang-rt-14-dev clang-format
  # libraries
  libibverbs-dev libpcap-dev libyaml-cpp-dev prometheus-cpp-dev libcli11-dev
  libspdlog-dev libfmt-dev libsystemd-dev libnuma-dev nlohmann-json3-dev libcivetweb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # fleet/: etcd's JSON gateway over libcurl; the real etcd server and etcdctl in the tests
  libcurl4-openssl-dev etcd-server etcd-client
  # io_uring for O_DIRECT output (optional at build time; writers/README.md)
  liburing-dev
  # real clients and test tools
  tshark tcpdump iproute2 python3 valgrind prometheus
  # bench/writer_bench.sh compares the writers with fio
  fio
  # nft: softverbs' SOFTVERBS_TRAP=nft model (flow rules take frames from the kernel stack)
  nftables
  # tools the test scripts call that minimal images may lack: systemd-analyze, pkill/sysctl, bc
  systemd procps bc
  # perf stat / perf record for bench/kernel_path_bench.sh --perf / --record (it runs without)
  linux-perf
  # rocecap quicklook (and its test) draws with Debian's numpy and matplotlib
  python3-numpy python3-matplotlib
  # packaging checks (tests/packaging): the Debian package's lint, the manual pages' lint,
  # dpkg-shlibdeps for the package's dependencies, man to open the installed pages
  lintian mandoc dpkg-dev man-db
)
# Debian 12's CUDA 11.8, from non-free.
[ "$debian_cuda" -eq 0 ] || packages+=(nvidia-cuda-toolkit nvidia-cuda-dev)

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

# Adds contrib and non-free to every Debian source that has only main: the deb822 file of
# Debian 12 images (/etc/apt/sources.list.d/debian.sources, "Components: main") and the
# one-line format of /etc/apt/sources.list ("deb URI SUITE main"). Lines that already name
# contrib are left as they are, so this runs any number of times.
enable_contrib_non_free() {
  local f=/etc/apt/sources.list.d/debian.sources
  if [ -f "$f" ] && grep -qE '^Components:' "$f"; then
    $SUDO sed -i -E '/^Components:/{/contrib/!s/$/ contrib non-free/}' "$f"
  fi
  f=/etc/apt/sources.list
  if [ -f "$f" ] && grep -qE '^deb(-src)? ' "$f"; then
    $SUDO sed -i -E '/^deb(-src)? /{/contrib/!s/$/ contrib non-free/}' "$f"
  fi
}

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
[ "$debian_cuda" -eq 0 ] || enable_contrib_non_free
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
