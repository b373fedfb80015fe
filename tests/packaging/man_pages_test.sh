#!/usr/bin/env bash
# The manual pages (doc/man/) against the programs they describe: Debian's mandoc finds nothing
# to warn about (-T lint; of its style notes only cross-references to pages not installed on
# this host are accepted), every option `rocecapd --help` lists is in rocecapd(8), every
# subcommand `rocecap --help` lists has its section in rocecap(1) and every option of its
# --help (and of its own subcommands' --help: `rocecap fleet start`, ...) is in that section,
# and, given ROCECAP_AGENT, every option of `rocecap-agent --help` is in rocecap-agent(8).
# rocecap-run.yaml(5) is checked key by key against the loader's schema by
# RunFileManual.DocumentsEveryKeyTheLoaderAccepts.
#
# usage: man_pages_test.sh SOURCE_DIR ROCECAPD ROCECAP [ROCECAP_AGENT]
set -euo pipefail
src=$1
rocecapd=$2
rocecap=$3
agent=${4:-}
command -v mandoc >/dev/null || { echo "FAIL: no mandoc (apt-get install mandoc)"; exit 1; }
man=$src/doc/man
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

for page in rocecapd.8 rocecap.1 rocecap-run.yaml.5 rocecap-agent.8; do
  mandoc -T lint -W style "$man/$page" >"$tmp/lint" 2>&1 || true
  if grep -v -e "STYLE: referenced manual not found" -e "outdated mandoc.db" "$tmp/lint"; then
    echo "FAIL: mandoc -T lint $page (above)"
    fail=1
  fi
done

# Option names of a --help text (CLI11: "  -c,--config TEXT ..."), footer excluded.
options() { sed -n '/^Options:/,/^$/p' | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u; }
render() { mandoc -T utf8 "$man/$1" | col -b; }

render rocecapd.8 >"$tmp/rocecapd.txt"
for opt in $("$rocecapd" --help | options); do
  grep -qE -- "(^|[^a-z-])$opt([^a-z-]|$)" "$tmp/rocecapd.txt" ||
    { echo "FAIL: rocecapd(8) does not mention $opt"; fail=1; }
done

if [ -n "$agent" ]; then
  render rocecap-agent.8 >"$tmp/agent.txt"
  for opt in $("$agent" --help | options); do
    grep -qE -- "(^|[^a-z-])$opt([^a-z-]|$)" "$tmp/agent.txt" ||
      { echo "FAIL: rocecap-agent(8) does not mention $opt"; fail=1; }
  done
fi

render rocecap.1 >"$tmp/rocecap.txt"
subs=$("$rocecap" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
[ -n "$subs" ] || { echo "FAIL: no subcommands in rocecap --help"; exit 1; }
for sub in $subs; do
  # The section's text: from its heading to the next heading.
  awk -v h="   rocecap $sub" '$0 == h { on = 1; next } on && (/^   rocecap / || /^[A-Z]/) { exit } on' \
    "$tmp/rocecap.txt" >"$tmp/$sub.txt"
  [ -s "$tmp/$sub.txt" ] || { echo "FAIL: rocecap(1) has no section for rocecap $sub"; fail=1; continue; }
  # A subcommand with subcommands of its own (fleet) documents theirs in its section too.
  commands=("$sub")
  for inner in $("$rocecap" "$sub" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }'); do
    commands+=("$sub $inner")
  done
  for cmd in "${commands[@]}"; do
    # The option groups (trigger's daemon group) are indented further; take every --word.
    # shellcheck disable=SC2086  # "fleet start": two words
    for opt in $("$rocecap" $cmd --help | sed -n '/^Options:/,/^Subcommands:/p' |
      grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u); do
      grep -qE -- "(^|[^a-z-])$opt([^a-z-]|$)" "$tmp/$sub.txt" ||
        { echo "FAIL: rocecap(1), section rocecap $sub, does not mention $opt (rocecap $cmd)"; fail=1; }
    done
  done
done
[ "$fail" -eq 0 ] || exit 1
echo "manual pages: OK ($(echo $subs | wc -w) subcommands)"
