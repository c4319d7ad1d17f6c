#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Same image and configuration, same output, byte for byte: serial output,
# the closing line (instruction count, virtual time) and the CPUID dumps.
set -euo pipefail
topolab=$1 images=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in 1 2; do
  "$topolab" run "$images/compute_loop.elf" -append iterations=200000 >"$tmp/loop$i" 2>&1
  "$topolab" run "$images/cpuid_dump.elf" -smp 12,sockets=2,cores=3,threads=2 -cpu EPYC >"$tmp/dump$i" 2>&1
  "$topolab" run "$images/topology_check64.elf" -smp 32,sockets=2,dies=2,cores=4,threads=2 -cpu Skylake-Server \
    -append "sockets=2 dies=2 cores=4 threads=2" --quantum 777 >"$tmp/check$i" 2>&1
  "$topolab" cpuid -smp 300 -cpu Skylake-Server,+x2apic --format raw >"$tmp/raw$i"
  "$topolab" run "$images/ipi.elf" -smp 8,sockets=2,cores=2,threads=2 -cpu Skylake-Server,+x2apic \
    --report json --report-file "$tmp/ipi$i.json" >"$tmp/ipi$i" 2>&1
done
for f in loop dump check raw ipi ipi1.json; do
  [ "$f" = ipi1.json ] && { cmp "$tmp/ipi1.json" "$tmp/ipi2.json" || { echo "FAIL: the IPI report differs"; exit 1; }; continue; }
  cmp "$tmp/${f}1" "$tmp/${f}2" || { echo "FAIL: $f differs between two runs"; exit 1; }
done
echo "ok: four outputs identical across runs ($(tail -1 "$tmp/loop1"))"
