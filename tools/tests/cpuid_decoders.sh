#!/usr/bin/env bash
# Our dumps must be readable by the tools people already use: Debian's
# `cpuid -f` decodes the raw dump, and hwloc's lstopo builds the configured
# topology from the HWLOC_CPUID_PATH directory.
# Usage: cpuid_decoders.sh TOPOLAB SMP CPU PACKAGES CORES PUS L3S
set -euo pipefail
topolab=$1 smp=$2 cpu=$3 packages=$4 cores=$5 pus=$6 l3s=$7
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$topolab" cpuid -smp "$smp" -cpu "$cpu" --format raw --output "$tmp/raw.txt"
cpuid -f "$tmp/raw.txt" > "$tmp/decoded.txt" 2> "$tmp/cpuid.err" || fail "cpuid -f exited $?: $(head -3 "$tmp/cpuid.err")"
[ ! -s "$tmp/cpuid.err" ] || fail "cpuid -f complained: $(head -3 "$tmp/cpuid.err")"
decoded_cpus=$(grep -c '^CPU [0-9]*:$' "$tmp/decoded.txt")
[ "$decoded_cpus" -eq "$pus" ] || fail "cpuid -f decoded $decoded_cpus CPUs, expected $pus"
# Every CPU's x2APIC ID as cpuid decodes it must match what topolab says.
"$topolab" cpuid -smp "$smp" -cpu "$cpu" --format raw | awk '/^   0x0000000b 0x00:/ {print $6}' | sed 's/edx=//' \
  | while read -r hex; do printf '%d\n' "$hex"; done > "$tmp/ours.txt"
# cpuid prints leaf 0xB's EDX as "extended APIC ID = N" once per CPU.
grep -A1 'processor topology (0xb):' "$tmp/decoded.txt" | awk '/extended APIC ID/ {print $NF}' > "$tmp/theirs.txt"
diff -q "$tmp/ours.txt" "$tmp/theirs.txt" >/dev/null || fail "cpuid -f decodes other x2APIC IDs than topolab reports"

"$topolab" cpuid -smp "$smp" -cpu "$cpu" --format hwloc --output "$tmp/hwloc" >/dev/null
HWLOC_CPUID_PATH="$tmp/hwloc" HWLOC_COMPONENTS=x86,stop lstopo-no-graphics --of console > "$tmp/lstopo.txt" 2> "$tmp/lstopo.err" \
  || fail "lstopo exited $?: $(head -3 "$tmp/lstopo.err")"
count() { grep -oE "(^|[ +])$1 L#[0-9]+" "$tmp/lstopo.txt" | wc -l; }
[ "$(count Package)" -eq "$packages" ] || fail "lstopo shows $(count Package) packages, expected $packages"
[ "$(count Core)" -eq "$cores" ] || fail "lstopo shows $(count Core) cores, expected $cores"
[ "$(count PU)" -eq "$pus" ] || fail "lstopo shows $(count PU) PUs, expected $pus"
[ "$(count L3)" -eq "$l3s" ] || fail "lstopo shows $(count L3) L3 caches, expected $l3s"
echo "ok: $smp / $cpu: cpuid -f decodes $decoded_cpus CPUs; lstopo: $packages packages, $cores cores, $pus PUs, $l3s L3"
