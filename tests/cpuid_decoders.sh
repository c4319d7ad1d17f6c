#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Our dumps must be readable by the tools people already use: Debian's
# `cpuid -f` decodes the raw dump, and hwloc's lstopo builds the configured
# topology from the HWLOC_CPUID_PATH directory.
# Usage: cpuid_decoders.sh TOPOLAB SMP CPU PACKAGES CORES PUS L3S
set -euo pipefail
topolab=$1 smp=$2 cpu=$3 packages=$4 cores=$5 pus=$6 l3s=$7
source "$(dirname "$0")/decoders_lib.sh"

decode_with_cpuid "$topolab" "$smp" "$cpu"
decoded_cpus=$(grep -c '^CPU [0-9]*:$' "$tmp/decoded.txt")
[ "$decoded_cpus" -eq "$pus" ] || fail "cpuid -f decoded $decoded_cpus CPUs, expected $pus"
# Every CPU's x2APIC ID as cpuid decodes it must match what topolab says.
"$topolab" cpuid -smp "$smp" -cpu "$cpu" --format raw | awk '/^   0x0000000b 0x00:/ {print $6}' | sed 's/edx=//' \
  | while read -r hex; do printf '%d\n' "$hex"; done > "$tmp/ours.txt"
# cpuid prints leaf 0xB's EDX as "extended APIC ID = N" once per CPU.
grep -A1 'processor topology (0xb):' "$tmp/decoded.txt" | awk '/extended APIC ID/ {print $NF}' > "$tmp/theirs.txt"
diff -q "$tmp/ours.txt" "$tmp/theirs.txt" >/dev/null || fail "cpuid -f decodes other x2APIC IDs than topolab reports"

lstopo_from "$topolab" "$smp" "$cpu"
[ "$(count Package)" -eq "$packages" ] || fail "lstopo shows $(count Package) packages, expected $packages"
[ "$(count Core)" -eq "$cores" ] || fail "lstopo shows $(count Core) cores, expected $cores"
[ "$(count PU)" -eq "$pus" ] || fail "lstopo shows $(count PU) PUs, expected $pus"
[ "$(count L3)" -eq "$l3s" ] || fail "lstopo shows $(count L3) L3 caches, expected $l3s"
echo "ok: $smp / $cpu: cpuid -f decodes $decoded_cpus CPUs; lstopo: $packages packages, $cores cores, $pus PUs, $l3s L3"
