#!/usr/bin/env bash
# Every symbol softverbs exports must carry the version node rdma-core's libibverbs gives it
# (its default version), and softverbs must define every IBVERBS_1.x node the real one does.
# Usage: check_abi.sh SOFTVERBS_LIB [REAL_LIB]
set -euo pipefail
ours=$1
# awk reads all of ldconfig's output: an early exit would SIGPIPE it, and pipefail + set -e end the script silently.
real=${2:-$(ldconfig -p | awk '/libibverbs.so.1 / && !found {print $NF; found = 1}')}
[[ -n $real && -e $real ]] || { echo "SKIP: no system libibverbs.so.1"; exit 77; }
defaults() {  # symbol version, default versions only (objdump shows hidden ones in parentheses)
  objdump -T "$1" | awk '$4 == ".text" && $(NF-1) !~ /^\(/ {print $NF, $(NF-1)}' | sort
}
nodes() { objdump -p "$1" | awk '/^Version definitions/ {on=1; next} /^$/ {on=0} on && $4 ~ /^IBVERBS_1/ {print $4}' | sort; }
fail=0
missing=$(comm -13 <(nodes "$ours") <(nodes "$real"))
if [[ -n $missing ]]; then echo "FAIL: version nodes missing: $missing"; fail=1; fi
while read -r sym ver; do
  want=$(defaults "$real" | awk -v s="$sym" '$1 == s {print $2}')
  if [[ -z $want ]]; then echo "FAIL: $sym is not a libibverbs symbol"; fail=1
  elif [[ $want != "$ver" ]]; then echo "FAIL: $sym@$ver, rdma-core has $sym@@$want"; fail=1; fi
done < <(defaults "$ours")
n=$(defaults "$ours" | wc -l)
[[ $n -ge 40 ]] || { echo "FAIL: only $n symbols exported"; fail=1; }
[[ $fail -eq 0 ]] && echo "ok: $n symbols, versions match $real"
exit $fail
