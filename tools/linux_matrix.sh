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

# name|-smp|-cpu|-m|more options (-machine, -object, -numa)|linux_check --ignore (a documented difference)
R=memory-backend-ram
rows=(
  "1cpu|1|Skylake-Server|512|"
  "1s8c|8,sockets=1,cores=8,threads=1|Skylake-Server|512|"
  "1s8c2t-x2apic|16,sockets=1,cores=8,threads=2|Skylake-Server,+x2apic,kvm=on|1024|"
  "2s3c2t-sparse|12,sockets=2,cores=3,threads=2|Skylake-Server|1024|"
  "2s2d4c2t-x2apic|32,sockets=2,dies=2,cores=4,threads=2|Skylake-Server,+x2apic,kvm=on|1024|"
  "1s8c2t-epyc|16,sockets=1,cores=8,threads=2|EPYC|1024|"
  "1s8c2t-qemu64|16,sockets=1,cores=8,threads=2|qemu64|1024|"
  # The production shape of issue 23: 2 sockets x 72 cores x 2 threads,
  # APIC IDs to 0x1FF (KVM's extended destination ID), a node per socket.
  "288-x2apic-numa|288,sockets=2,cores=72,threads=2|Skylake-Server,+x2apic,kvm=on|8G|-object $R,id=a,size=4G -object $R,id=b,size=4G -numa node,memdev=a -numa node,memdev=b -numa dist,src=0,dst=1,val=21|"
  # NUMA (docs/numa.md): a node per socket with a SLIT; sub-NUMA clustering
  # (4 nodes on one socket, the L3 per die and a node per die); EPYC with 4
  # nodes per socket; and a node cut through an LLC, which `topolab check`
  # reports and Linux complains about (AMD's LLC is the socket here: no
  # SNC exemption, arch/x86/kernel/smpboot.c match_llc).
  "numa-2s2n|16,sockets=2,cores=8|Skylake-Server|8G|-object $R,id=a,size=4G -object $R,id=b,size=4G -numa node,memdev=a -numa node,memdev=b -numa dist,src=0,dst=1,val=21"
  "numa-snc4|16,sockets=1,dies=4,cores=4|Skylake-Server|2G|-machine smp-cache.0.cache=l3,smp-cache.0.topology=die -object $R,id=a,size=512M -object $R,id=b,size=512M -object $R,id=c,size=512M -object $R,id=d,size=512M -numa node,memdev=a,cpus=0-3 -numa node,memdev=b,cpus=4-7 -numa node,memdev=c,cpus=8-11 -numa node,memdev=d,cpus=12-15"
  "numa-epyc-4n|32,sockets=1,dies=4,cores=4,threads=2|EPYC|4G|-object $R,id=a,size=1G -object $R,id=b,size=1G -object $R,id=c,size=1G -object $R,id=d,size=1G -numa node,memdev=a,cpus=0-7 -numa node,memdev=b,cpus=8-15 -numa node,memdev=c,cpus=16-23 -numa node,memdev=d,cpus=24-31|die_cpus_list"
  "numa-broken-llc|8,sockets=1,cores=8|qemu64|1G|-object $R,id=a,size=512M -object $R,id=b,size=512M -numa node,memdev=a,cpus=0-3 -numa node,memdev=b,cpus=4-7"
)
want=("$@")
printf '%-18s %-40s %-32s %7s  %s\n' name smp cpu host_s result
for row in "${rows[@]}"; do
  IFS='|' read -r name smp cpu mem more ignore <<<"$row"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  # QEMU's one-dash spellings as topolab's options.
  read -r -a extra <<<"${more//-object /--object }"
  extra=("${extra[@]//-numa/--numa}")
  extra=("${extra[@]//-machine/--machine}")
  start=$EPOCHREALTIME status=0
  "$t" run "$d/vmlinux" --initrd "$d/initramfs.cpio" -m "$mem" --smp "$smp" --cpu "$cpu" "${extra[@]}" \
    --append "$append" --time-limit 120 --report json --report-file "$out/$name.json" >"$out/$name.console" \
    2>"$out/$name.stderr" || status=$?
  secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$EPOCHREALTIME")
  "$t" cpuid -m "$mem" --smp "$smp" --cpu "$cpu" "${extra[@]}" --format linux >"$out/$name.expected"
  if [ "$status" != 0 ]; then
    result="topolab exited $status: $(tail -1 "$out/$name.stderr")"
  else
    python3 tools/linux_check.py --console "$out/$name.console" --expect "$out/$name.expected" \
      --report "$out/$name.json" ${ignore:+--ignore "$ignore"} >"$out/$name.check" || true
    result=$(tail -1 "$out/$name.check" | sed 's/^linux_check: //')
    # What `topolab check` says of the row beforehand (a deliberately broken
    # row must have a finding; docs/numa.md). check exits 1 when it finds
    # something, which is no failure to read its JSON.
    findings=$({ "$t" check -m "$mem" --smp "$smp" --cpu "$cpu" "${extra[@]}" --json 2>/dev/null || true; } |
      python3 -c 'import json,sys; print(",".join(sorted({f["id"] for f in json.load(sys.stdin)["findings"]})) or "none")' ||
      echo "?")
    result="$result; check: $findings"
  fi
  printf '%-18s %-40s %-32s %7s  %s\n' "$name" "$smp" "$cpu" "$secs" "$result"
done
