#!/usr/bin/env bash
# Bad arguments and failing outputs: non-zero exit and a message naming the option, address
# or file.
set -uo pipefail
rocecap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
base=(gen --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames 10)

expect_error() {  # expect_error TEXT ARGS...: exit non-zero, TEXT on stderr
  local want=$1
  shift
  if "$rocecap" "$@" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: '$*' exited 0"
    fails=$((fails + 1))
  elif ! grep -qF -- "$want" "$tmp/err"; then
    echo "FAIL: '$*' stderr lacks '$want':"
    cat "$tmp/err"
    fails=$((fails + 1))
  fi
}

expect_error "--frames or --duration" gen --groups 239.17.0.1:36001 --sources 192.0.2.11
expect_error "--groups" gen --sources 192.0.2.11 --frames 1
expect_error "--groups: 10.0.0.1 is not a multicast address" gen --groups 10.0.0.1:5 --sources 192.0.2.11 --frames 1
expect_error "is not a UDP port" gen --groups 239.1.1.1:99999 --sources 192.0.2.11 --frames 1
expect_error "--sources: '192.0.2.300' is not an IPv4 address" gen --groups 239.1.1.1:5 --sources 192.0.2.300 --frames 1
expect_error "--sources: 192.0.2.11 is listed twice" gen --groups 239.1.1.1:5 --sources 192.0.2.11,192.0.2.11 --frames 1
expect_error "--groups: 239.1.1.1:5 is listed twice" gen --groups 239.1.1.1:5,239.1.1.1:5 --sources 192.0.2.11 --frames 1
expect_error "--foreign: must not be one of --sources" gen --groups 239.1.1.1:5 --sources 192.0.2.11 --foreign 192.0.2.11 --frames 1
expect_error "--payload-bytes" "${base[@]}" --payload-bytes 100 --pcap "$tmp/x.pcap"
expect_error "--total-samples" "${base[@]}" --total-samples 1000 --pcap "$tmp/x.pcap"
expect_error "--drop" "${base[@]}" --drop 1.5 --pcap "$tmp/x.pcap"
expect_error "more than 1" "${base[@]}" --drop 0.6 --swap 0.6 --pcap "$tmp/x.pcap"
expect_error "excludes" "${base[@]}" --rate 10 --gbps 1 --pcap "$tmp/x.pcap"
expect_error "--layout" "${base[@]}" --layout v2 --pcap "$tmp/x.pcap"
expect_error "cannot create $tmp/nodir/x.pcap" "${base[@]}" --pcap "$tmp/nodir/x.pcap"
if [ -w /dev/full ]; then
  expect_error "/dev/full: No space left on device" gen --groups 239.17.0.1:36001 --sources 192.0.2.11 --frames 2000 --pcap /dev/full
fi
# 192.0.2.250 is TEST-NET-1: never an address of a test host.
expect_error "source 192.0.2.250 is not an address of this host" gen --groups 239.17.0.1:36001 --sources 192.0.2.250 --frames 1
expect_error "no such interface" gen --groups 239.17.0.1:36001 --sources 127.0.0.1 --frames 1 --interface rcnosuch0
expect_error "does not exist" inspect "$tmp/missing.pcap"

# A good run exits 0 with a summary; the summary file option is honoured.
if ! "$rocecap" "${base[@]}" --pcap "$tmp/ok.pcap" --summary "$tmp/s.json" >"$tmp/out" 2>"$tmp/err" ||
  ! python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(s['datagrams'] != 10)" "$tmp/s.json"; then
  echo "FAIL: good run"
  cat "$tmp/err"
  fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo ok
exit "$fails"
