#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Linux boot benchmark (never part of the tests): Debian's 6.1 from the
# guest of tools/linux_guest.sh, booted to /init and powered off, on 2 and 8
# vCPUs, by the bzImage (its own XZ decompressor first) and by PVH (the same
# kernel uncompressed), side by side in one run: host seconds, guest
# instructions, and where they go from the run report (page faults taken,
# timer interrupts, I/O exits, PAUSEs and pause-loop exits, time skipped).
# Usage: bench/linux_boot.sh [RUNS]   (default 1: each boot is long)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
tools/build.sh >/dev/null
tools/linux_guest.sh >/dev/null
d=.deps/linux t=build/topolab out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
append="console=ttyS0 panic=-1 quiet"

boot() {  # KERNEL SMP REPORT: host seconds on stdout
  local start=$EPOCHREALTIME
  "$t" run "$d/$1" --initrd "$d/initramfs.cpio" -m 512 --smp "$2" --cpu Skylake-Server --append "$append" \
    --time-limit 30 --report json --report-file "$3" >/dev/null 2>&1
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$EPOCHREALTIME"
}

printf '%-8s %-5s %8s %14s %10s %8s %8s %8s %9s %6s %10s\n' kernel vcpus host_s instructions virtual_s '#PF' LOC io_exits pauses ple skipped_ms
for smp in 2 8; do
  for r in $(seq "$runs"); do
    for kernel in vmlinuz vmlinux; do
      s=$(boot $kernel $smp "$out/r.json")
      python3 - "$out/r.json" "$kernel" "$smp" "$s" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["vcpus"]
total = lambda f: sum(f(c) for c in v)
print(f"{sys.argv[2]:<8} {sys.argv[3]:<5} {float(sys.argv[4]):8.1f} {r['instructions']:14,} {r['virtual_ns'] / 1e9:10.3f} "
      f"{total(lambda c: c['exceptions_taken'].get('0x0e', 0)):8,} {total(lambda c: c['interrupts_taken'].get('0xec', 0)):8,} "
      f"{total(lambda c: c['exits']['io']):8,} {total(lambda c: c['pauses']):9,} {total(lambda c: c['ple_exits']):6,} "
      f"{total(lambda c: c['skipped_ns']) / 1e6:10.1f}")
EOF
    done
  done
done
