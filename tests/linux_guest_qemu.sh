#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Linux guest (tools/linux_guest.sh) under the reference peer, QEMU
# TCG: Debian's kernel boots with the initramfs, /init prints the topology
# of a 1-socket, 1-core, 2-thread machine, runs a short perf bench sched
# messaging with /proc/interrupts around it, and powers the machine off.
# Fetching needs the network, which tests do not: without a complete
# cache (DIR/.complete) the test is skipped (exit 77).
# The guest's view must also be what `topolab cpuid --format linux` predicts
# (tools/linux_check.py): the differential test of the CPUID model against
# its real consumer, under the reference peer.
# Usage: linux_guest_qemu.sh TOPOLAB [DIR]   (default <repo>/.deps/linux)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
topolab=$1
dir=${2:-$top/.deps/linux}
if [ ! -f "$dir/.complete" ]; then
  echo "SKIP: no $dir/.complete (tools/linux_guest.sh fetches the guest)"
  exit 77
fi
# With the cache complete this only (re)builds the initramfs, offline.
"$top/tools/linux_guest.sh" --dir "$dir" >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# -nic none: no network card, so no iPXE option ROM to wait for.
timeout 300 qemu-system-x86_64 -accel tcg -m 512 -smp 2,sockets=1,cores=1,threads=2 -cpu Skylake-Server \
  -display none -no-reboot -nic none -serial "file:$out" \
  -kernel "$dir/vmlinuz" -initrd "$dir/initramfs.cpio" \
  -append "console=ttyS0 panic=-1 topolab.bench=messaging:1:2" 2>/dev/null || status=$?

# The kernel's serial console ends lines with CR LF.
sed -i 's/\r$//' "$out"
fail() { echo "FAIL: $*"; grep -a '^topolab' "$out" | head -60; exit 1; }
[ "$status" -eq 0 ] || fail "qemu exited with $status"
want() { grep -aqxE "$1" "$out" || fail "no line matching: $1"; }
want 'topolab-topology-begin'
want 'topolab-cpus online=0-1 possible=0-1 present=0-1'
want 'topolab-topology cpu0 .* core_cpus_list=0-1 .* package_cpus_list=0-1 .* thread_siblings_list=0-1'
want 'topolab-topology cpu1 .* core_cpus_list=0-1 .* thread_siblings_list=0-1'
want 'topolab-cache cpu1 index3 .* level=3 .* shared_cpu_list=0-1 .* type=Unified .*'
want 'topolab-sched-domain cpu0 domain0 name=SMT flags=[A-Z_|]*SD_SHARE_CPUCAPACITY[A-Z_|]* span_map=3 .*'
want 'topolab-topology-end'
want 'topolab-interrupts-before messaging:1:2'
want 'RES: .*Rescheduling interrupts'
want 'topolab-bench-end messaging:1:2 status=0'
want 'topolab-interrupts-after messaging:1:2'
want 'topolab-init: done'
grep -aq 'reboot: Power down' "$out" || fail "the kernel did not power down"
! grep -aq 'topolab-init: error' "$out" || fail "/init reported errors"
"$topolab" cpuid -m 512 --smp 2,sockets=1,cores=1,threads=2 --cpu Skylake-Server --format linux >"$out.expected"
# QEMU 7.2 makes L1 private to each SMT thread, where the SDM and topolab
# share it within a core (docs/deviations.md, "Topology fields use the SDM's
# encodings"): the one difference allowed.
python3 "$top/tools/linux_check.py" --console "$out" --expect "$out.expected" \
  --ignore 'topolab-cache cpu[0-9]+ index[01] shared_cpu_list' || fail "QEMU's guest saw another topology"
rm -f "$out.expected"
echo "ok: $(grep -a 'Total time' "$out" | tr -s ' ')"
