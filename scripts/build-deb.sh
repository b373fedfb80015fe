#!/usr/bin/env bash
# Builds the Debian package(s) from this tree: configures DIR for /usr (Debian's paths: /etc,
# lib/x86_64-linux-gnu), builds what the packages hold, and runs CPack's DEB generator
# (cmake/RocecapPackaging.cmake). Prints the path of each .deb, one per line, last.
#
# usage: scripts/build-deb.sh [DIR] [cmake options...]     (DIR default: build/deb)
#   -DROCECAP_WITH_CUDA=OFF   the host-memory-only flavour (default AUTO: with CUDA where the
#                             toolkit is found; the package depends on nothing from CUDA)
#   -DROCECAP_DEB_MAINTAINER="Name <address>"   the package's Maintainer field
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build/deb}")
shift || true
mkdir -p "$dir"
# Debian's build flags with every hardening option (fortified functions, stack protector,
# relro and bind-now), as a Debian package gets them from dpkg-buildflags.
cd "$root"
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)"
cxxflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
# Only what the packages hold is built: no tests' helpers, no benchmarks.
ROCECAP_BUILD_TARGETS="rocecapd rocecap rocecap_man rocecap_changelog" \
  bash "$root/scripts/build.sh" "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DROCECAP_BUILD_BENCH=OFF "-DCMAKE_C_FLAGS=$cflags" \
  "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" "$@"
grep -E "^-- rocecap" "$dir.configure.log" || true
rm -f "$dir"/*.deb
(cd "$dir" && cpack -G DEB >"$dir/cpack.log" 2>&1) || { cat "$dir/cpack.log"; exit 1; }
ls "$dir"/*.deb
