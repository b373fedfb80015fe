#!/bin/bash
# Installs the dev component of a built tree (BUILD_DIR, $1) into a temporary prefix, then
# configures, builds and runs tests/consumers/downstream against it with find_package(rocecap):
# what a pipeline stage sees of the rocecap-dev package. Exit 0 pass, 1 fail (with a message).
set -u
build=${1:?usage: find_package_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/rocecap-find-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "find_package_test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --component dev --prefix "$tmp/prefix" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install --component dev failed"; }
for f in include/rocecap_consumer.hpp; do
  [ -f "$tmp/prefix/$f" ] || fail "$f not installed"
done
ls "$tmp"/prefix/lib*/librocecap_consumer.a "$tmp"/prefix/lib*/*/librocecap_consumer.a \
  > /dev/null 2>&1 || ls "$tmp"/prefix/lib*/librocecap_consumer.a > /dev/null 2>&1 ||
  fail "librocecap_consumer.a not installed"
find "$tmp/prefix" -name rocecapConfig.cmake | grep -q . || fail "rocecapConfig.cmake not installed"
find "$tmp/prefix" -name rocecapConfigVersion.cmake | grep -q . ||
  fail "rocecapConfigVersion.cmake not installed"
# Nothing of the runtime component: the dev package carries no daemon.
[ ! -e "$tmp/prefix/sbin/rocecapd" ] && [ ! -e "$tmp/prefix/bin/rocecapd" ] ||
  fail "the dev component installed rocecapd"

cmake -S "$here/downstream" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; fail "configuring the downstream project failed"; }
cmake --build "$tmp/build" > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "building the downstream project failed"; }
# It must have used the installed copy, not the source tree.
grep -rq -- "$tmp/prefix" "$tmp/build/CMakeCache.txt" ||
  fail "rocecap was not found in the temporary prefix"
out=$("$tmp/build/downstream" 2>&1) || { echo "$out" >&2; fail "the downstream program failed"; }
echo "$out"
echo "find_package_test: PASS"
exit 0
