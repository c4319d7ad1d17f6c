#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debian's Linux 6.1 (tools/linux_guest.sh, booted by PVH) on the topology
# matrix, each boot checked by tools/linux_check.py: the guest's sysfs
# topology and caches against `topolab cpuid --format linux`, no topology,
# clock or MSR complaint, no panic, and a short perf bench sched messaging
# whose RES/CAL deltas must equal topolab's counts. Too long for the tests
# (minutes per boot at 16 vCPUs and more); its table goes into docs/linux.md.
#
# Usage: tools/linux_matrix.sh [OUTDIR] [NAME...]   (default: every row)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/linux-matrix}
shift || true
mkdir -p "$out"
tools/linux_guest.sh >/dev/null
d=.deps/linux t=build/topolab
append="console=ttyS0 panic=-1 topolab.bench=messaging:1:5"

# name|-smp|-cpu|-m MiB
rows=(
  "1cpu|1|Skylake-Server|512"
  "1s8c|8,sockets=1,cores=8,threads=1|Skylake-Server|512"
  "1s8c2t-x2apic|16,sockets=1,cores=8,threads=2|Skylake-Server,+x2apic,kvm=on|1024"
  "2s3c2t-sparse|12,sockets=2,cores=3,threads=2|Skylake-Server|1024"
  "2s2d4c2t-x2apic|32,sockets=2,dies=2,cores=4,threads=2|Skylake-Server,+x2apic,kvm=on|1024"
  "1s8c2t-epyc|16,sockets=1,cores=8,threads=2|EPYC|1024"
  "1s8c2t-qemu64|16,sockets=1,cores=8,threads=2|qemu64|1024"
  "300-x2apic|300,sockets=2,cores=75,threads=2|Skylake-Server,+x2apic,kvm=on|2048"
)
want=("$@")
printf '%-18s %-40s %-32s %7s  %s\n' name smp cpu host_s result
for row in "${rows[@]}"; do
  IFS='|' read -r name smp cpu mem <<<"$row"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  start=$EPOCHREALTIME status=0
  "$t" run "$d/vmlinux" --initrd "$d/initramfs.cpio" -m "$mem" --smp "$smp" --cpu "$cpu" --append "$append" \
    --time-limit 60 --report json --report-file "$out/$name.json" >"$out/$name.console" 2>"$out/$name.stderr" ||
    status=$?
  secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$EPOCHREALTIME")
  "$t" cpuid --smp "$smp" --cpu "$cpu" --format linux >"$out/$name.expected"
  if [ "$status" != 0 ]; then
    result="topolab exited $status: $(tail -1 "$out/$name.stderr")"
  else
    python3 tools/linux_check.py --console "$out/$name.console" --expect "$out/$name.expected" \
      --report "$out/$name.json" >"$out/$name.check" || true
    result=$(tail -1 "$out/$name.check" | sed 's/^linux_check: //')
  fi
  printf '%-18s %-40s %-32s %7s  %s\n' "$name" "$smp" "$cpu" "$secs" "$result"
done
