#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job with no arguments: the CPUID table of the l3-cache machine
# and the topology_check guest on it must both appear, the guest pass, and
# the l3-cache experiment's tables follow, byte for byte the recorded
# results (docs/results/l3-cache.txt), which this test is what guards.
# Usage: demo.sh TOPOLAB RECORDED_RESULTS
set -euo pipefail
topolab=$1 recorded=$2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$topolab" >"$out" 2>"$err"
grep -q '1 socket x 8 cores x 2 threads = 16 CPUs' "$out"
grep -q 'L3 #0: CPUs 0-15' "$out"
grep -q '^SUMMARY: [0-9]* tests, 0 unexpected failures' "$out"
grep -q 'topolab: guest exit 0' "$err"
# The experiment's section: its heading, a blank line, then the tables.
if ! sed -n '/^== topolab experiment l3-cache$/,$p' "$out" | tail -n +3 | cmp -s - "$recorded"; then
  echo "FAIL: the demo's l3-cache tables are not $recorded:"
  sed -n '/^== topolab experiment l3-cache$/,$p' "$out" | tail -n +3 | diff - "$recorded" | head -20
  exit 1
fi
echo "ok: the demo shows the table, a passing topology_check and the recorded l3-cache results"
