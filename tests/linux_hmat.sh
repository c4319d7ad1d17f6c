#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debian's Linux 6.1 reads topolab's HMAT as it reads QEMU 7.2's: the same
# -machine hmat=on machine (three nodes, the third memory-only with node 0
# as its initiator, latencies, bandwidths, a memory-side cache) booted under
# both, and the kernel's "acpi/hmat:" lines (drivers/acpi/numa/hmat.c) must
# be the same, line for line. QEMU needs no initramfs: the lines come long
# before the root mount, and the panic that follows ends its run.
# Usage: linux_hmat.sh TOPOLAB OUT
# Without a complete .deps/linux (tools/linux_guest.sh) the test is skipped
# (exit 77); LINUX_GUEST_DIR names another copy of it.
set -euo pipefail
topolab=$1 out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${LINUX_GUEST_DIR:-$top/.deps/linux}
if [ ! -f "$dir/.complete" ]; then
  echo "SKIP: no $dir/.complete (tools/linux_guest.sh fetches the guest)"
  exit 77
fi
mkdir -p "$out"
R=memory-backend-ram LB=hmat-lb,hierarchy=memory
machine=(-smp 2,sockets=2 -cpu Skylake-Server -m 1G -machine hmat=on
  -object $R,id=a,size=512M -object $R,id=b,size=256M -object $R,id=c,size=256M
  -numa node,memdev=a,cpus=0 -numa node,memdev=b,cpus=1 -numa node,memdev=c,initiator=0
  -numa $LB,initiator=0,target=0,data-type=access-latency,latency=10
  -numa $LB,initiator=0,target=2,data-type=access-latency,latency=40
  -numa $LB,initiator=1,target=1,data-type=access-latency,latency=10
  -numa $LB,initiator=0,target=0,data-type=access-bandwidth,bandwidth=10G
  -numa $LB,initiator=0,target=2,data-type=access-bandwidth,bandwidth=2G
  -numa $LB,initiator=0,target=2,data-type=read-latency,latency=30
  -numa hmat-cache,node-id=0,size=10K,level=1,associativity=direct,policy=write-back,line=8)
# topolab's run spells -smp, -cpu, -machine, -object and -numa with two dashes.
args=()
for a in "${machine[@]}"; do
  case $a in -smp|-cpu|-machine|-object|-numa) args+=("-$a") ;; *) args+=("$a") ;; esac
done
append="console=ttyS0 panic=-1"
"$topolab" run "$dir/vmlinux" --initrd "$dir/initramfs.cpio" "${args[@]}" --append "$append" --time-limit 30 \
  --report none >"$out/hmat.topolab" 2>&1 || { tail -20 "$out/hmat.topolab"; echo "FAIL: topolab's boot"; exit 1; }
timeout 120 qemu-system-x86_64 -accel tcg -display none -nodefaults -no-reboot -serial "file:$out/hmat.qemu" \
  "${machine[@]}" -kernel "$dir/vmlinux" -append "$append" >/dev/null 2>&1 || true
lines() { grep -a 'acpi/hmat:' "$1" | sed 's/^\[[^]]*\] //'; }
count=$(lines "$out/hmat.qemu" | wc -l)
[ "$count" -gt 0 ] || { echo "FAIL: no acpi/hmat lines under QEMU 7.2"; exit 1; }
if ! diff <(lines "$out/hmat.qemu") <(lines "$out/hmat.topolab"); then
  echo "FAIL: Linux reads the HMATs differently (< QEMU 7.2, > topolab)"
  exit 1
fi
echo "linux_hmat: Linux 6.1's $count acpi/hmat lines are the same under QEMU 7.2 and topolab"
