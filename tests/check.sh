#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `topolab check` and `topolab cpuid --diff` from the command line:
# - every hand-made dump in check/bad/ (one bad pattern each) and every
#   QEMU 7.2 dump in check/qemu-7.2/ gives exactly the findings listed here,
#   with exit 1 (0 when there are none), the same in text and --json;
# - configurations of topolab's own -cpu that produce a bad pattern;
# - --consumer narrows the views; bad input is one line and the bad-input status;
# - the diff of l3-cache=off against on matches its golden file.
# Usage: check.sh TOPOLAB [--update]   (--update rewrites the golden diff)
set -uo pipefail
topolab=$1
update=${2:-}
dir=$(dirname "$0")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

ids_of_json() { python3 -c 'import json,sys; print(" ".join(sorted({f["id"] for f in json.load(sys.stdin)["findings"]})))'; }

# expect_ids "ARGS" "ids..."
expect_ids() {
  local args=$1 want=$2 json text status
  json=$("$topolab" check $args --json)
  status=$?
  local got
  got=$(ids_of_json <<<"$json")
  [ "$got" = "$want" ] || fail "check $args: findings [$got], expected [$want]"
  local want_status=$([ -n "$want" ] && echo 1 || echo 0)
  [ "$status" -eq "$want_status" ] || fail "check $args: exit $status, expected $want_status"
  text=$("$topolab" check $args)
  local in_text
  in_text=$(grep -o '^finding [0-9]* \[[a-z0-9-]*\]' <<<"$text" | sed 's/.*\[\(.*\)\]/\1/' | sort -u | tr '\n' ' ' | sed 's/ $//')
  [ "$in_text" = "$want" ] || fail "check $args: text shows [$in_text], JSON [$want]"
}

expect_ids "--dump $dir/check/bad/l3-across-packages.txt" "consumers-disagree l3-across-packages leaf4-counts llc-wider-than-package"
expect_ids "--dump $dir/check/bad/smt-private-l2.txt" "smt-not-sharing-l1-l2"
expect_ids "--dump $dir/check/bad/x2apic-edx-zero.txt" "apic-id-layout consumers-disagree x2apic-id-mismatch"
expect_ids "--dump $dir/check/bad/stop-rules.txt" "ext-topology-stop-rules"
expect_ids "--dump $dir/check/bad/dense-apic-ids.txt" "apic-id-layout"
expect_ids "--dump $dir/check/bad/amd-zero-8000001e.txt" "amd-topoext-bad-8000001e consumers-disagree"
expect_ids "--dump $dir/check/bad/hybrid-no-1a.txt" "hybrid-without-1a"

# QEMU 7.2's own leaves (docs/check.md compares them with docs/deviations.md).
q=$dir/check/qemu-7.2
expect_ids "--dump $q/skx-1s8c2t-l3on.txt" "smt-not-sharing-l1-l2"
expect_ids "--dump $q/skx-1s8c2t-l3off.txt" "smt-not-sharing-l1-l2"
expect_ids "--dump $q/skx-2s3c2t.txt" "smt-not-sharing-l1-l2"
expect_ids "--dump $q/skx-2s2d4c2t.txt" "apic-id-layout leaf1-logical-count leaf4-counts smt-not-sharing-l1-l2"
expect_ids "--dump $q/epyc-2s3c2t.txt" "amd-without-topoext consumers-disagree"
expect_ids "--dump $q/qemu64-1s2c2t.txt" "amd-without-topoext consumers-disagree"
expect_ids "--dump $q/qemu64-2s4c.txt" ""

# topolab's own -cpu, asked for a bad topology.
expect_ids "-smp 4,cores=2,threads=2 -cpu EPYC,-topoext" "amd-without-topoext consumers-disagree differs-from-intended"
expect_ids "-smp 4 -cpu Skylake-Server,level=0x1f" "empty-leaf-1f"
expect_ids "-smp 12,sockets=2,cores=3,threads=2 -cpu Skylake-Server" ""

# --consumer: edk2 reads no caches, so the private L2 is no finding for it.
expect_ids "--dump $dir/check/bad/smt-private-l2.txt --consumer edk2" ""
expect_ids "--dump $dir/check/bad/smt-private-l2.txt --consumer linux-6.x" "smt-not-sharing-l1-l2"

# Bad input: one line on stderr, the bad-input status, nothing on stdout.
bad() {
  local out err status
  out=$("$topolab" "$@" 2>/tmp/check_err.$$)
  status=$?
  err=$(cat /tmp/check_err.$$)
  rm -f /tmp/check_err.$$
  [ "$status" -eq 125 ] || fail "$*: exit $status, expected 125"
  [ -z "$out" ] || fail "$*: wrote to stdout"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$*: $(wc -l <<<"$err") lines on stderr"
  echo "ok: $* -> $err"
}
bad check --dump /nonexistent/dump.txt
bad check --dump "$dir/check.sh"
bad check --dump "$dir/check/qemu-7.2/qemu64-2s4c.txt" -smp 4
bad check --consumer windows
bad check -smp 0 -cpu qemu64
bad cpuid --diff "-smp 4" "-smp"
bad cpuid --diff "-smp 4 -cpu EPYC" "-numa node"
bad cpuid --diff "-smp 4 -cpu EPYC" "-smp 4 -cpu Nehalem"

# The diff of the README, against its golden file.
golden=$dir/golden/diff-l3-cache.txt
diff_out=$("$topolab" cpuid --diff "-smp 16,sockets=1,cores=8,threads=2 -cpu Skylake-Server,l3-cache=off" \
                                   "-smp 16,sockets=1,cores=8,threads=2 -cpu Skylake-Server,l3-cache=on")
if [ "$update" = "--update" ]; then
  printf '%s\n' "$diff_out" >"$golden"
  echo "updated $golden"
elif ! diff -u "$golden" <(printf '%s\n' "$diff_out"); then
  fail "cpuid --diff differs from $golden; if intended, run: tests/check.sh build/topolab --update"
fi
# -machine reaches check and --diff as it reaches run and cpuid (both once
# dropped it): an L3 per core is four L3s of two CPUs.
l3_per_core="-smp 8,sockets=1,cores=4,threads=2 -cpu Skylake-Server -machine smp-cache.0.cache=l3,smp-cache.0.topology=core"
grep -q "L3 x4 of 2" <<<"$("$topolab" check $l3_per_core)" || fail "check $l3_per_core: the L3 is not per core"
grep -q "\[25:14\].* 7 -> 1" <<<"$("$topolab" cpuid --diff "-smp 8,sockets=1,cores=4,threads=2 -cpu Skylake-Server" "$l3_per_core")" ||
  fail "cpuid --diff: -machine smp-cache changed no leaf"
# A machine against itself differs nowhere.
same=$("$topolab" cpuid --diff "-smp 4 -cpu EPYC" "-smp 4 -cpu EPYC")
grep -q "no leaf differs on CPUs 0-3" <<<"$same" || fail "cpuid --diff of a machine with itself: $same"

[ "$failures" -eq 0 ] && echo "ok: check and cpuid --diff" 
exit $((failures > 0))
