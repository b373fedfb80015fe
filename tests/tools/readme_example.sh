#!/usr/bin/env bash
# The `rocecap gen --pcap` example of tools/README.md runs as written and produces what its
# summary says.
set -euo pipefail
rocecap=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /tmp/rocecap-gen.pcap /tmp/rocecap-gen.json' EXIT
sed -n '/<!-- example:gen-pcap -->/,/<!-- \/example -->/p' "$root/tools/README.md" |
  sed '/^```/d; /^<!--/d' > "$tmp/example.sh"
grep -q 'rocecap gen' "$tmp/example.sh" || { echo "example not found in tools/README.md"; exit 1; }
# Run it as written from a repository root whose build/tools holds the binary under test.
mkdir -p "$tmp/root/build/tools"
ln -s "$rocecap" "$tmp/root/build/tools/rocecap"
(cd "$tmp/root" && bash -euo pipefail "$tmp/example.sh") > "$tmp/out.txt"
python3 - "$tmp/out.txt" <<'PY'
import json, re, sys
s = json.load(open("/tmp/rocecap-gen.json"))
out = open(sys.argv[1]).read()
assert s["datagrams"] > 5900, s["datagrams"]
m = re.search(r"Number of packets:\s*(\d+)", out)
assert m and int(m.group(1)) == s["datagrams"], (m and m.group(1), s["datagrams"])
assert "239.17.0.2:36002 <- 192.0.2.13" in out, out[:500]
print("ok:", s["datagrams"], "datagrams")
PY
