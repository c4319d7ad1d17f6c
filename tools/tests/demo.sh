#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The main job with no arguments: the CPUID table of the l3-cache machine
# and the topology_check guest on it must both appear, the guest pass, and
# the l3-cache experiment's tables follow.
set -euo pipefail
topolab=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$topolab" >"$out" 2>&1
grep -q '1 socket x 8 cores x 2 threads = 16 CPUs' "$out"
grep -q 'L3 #0: CPUs 0-15' "$out"
grep -q '^SUMMARY: [0-9]* tests, 0 unexpected failures' "$out"
grep -q 'topolab: guest exit 0' "$out"
grep -q '^== pipe: ' "$out"
grep -q '^8 vCPUs 1s x 8c qemu64' "$out"
echo "ok: the demo shows the table, a passing topology_check and the l3-cache experiment"
