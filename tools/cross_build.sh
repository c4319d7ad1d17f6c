#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cross-build determinism: topolab built at -O0 (build-O0/, CMAKE_BUILD_TYPE
# Debug) must give byte-identical output to the Release build (build/) on a
# set of runs: serial output, the closing line, the JSON report and the exit
# status; the testcases below, and the CI Linux boot when .deps/linux has it. Virtual time is computed in integers, so the optimiser must not
# change a single byte. Not in CI (it costs a second full build of topolab);
# docs/reliability.md.
# Usage: tools/cross_build.sh [OTHER_TOPOLAB]   (default: build it at -O0)
set -uo pipefail
cd "$(dirname "$0")/.."
release=build/topolab images=build/testcases
[ -x "$release" ] || { echo "cross_build: no $release: run tools/build.sh" >&2; exit 2; }
other=${1:-}
if [ -z "$other" ]; then
  [ -f build-O0/CMakeCache.txt ] || cmake -S . -B build-O0 -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-O0 -j"$(nproc)" --target topolab >/dev/null || exit 2
  other=build-O0/topolab
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# image and flags | what -append gives the guest (empty: no -append)
runs=(
  "compute_loop.elf|iterations=200000"
  "cpuid_dump.elf -smp 12,sockets=2,cores=3,threads=2 -cpu EPYC|"
  "topology_check64.elf -smp 32,sockets=2,dies=2,cores=4,threads=2 -cpu Skylake-Server --quantum 777|sockets=2 dies=2 cores=4 threads=2"
  "ipi.elf -smp 8,sockets=2,cores=2,threads=2 -cpu Skylake-Server,+x2apic|"
  "ipi64.elf -smp 4 -cpu Skylake-Server|"
  "apic_timer.elf -smp 2 -cpu Skylake-Server,+x2apic,+tsc-deadline --cost none|"
  "apic_timer64.elf -smp 2 -cpu Skylake-Server,+tsc-deadline --cost none,freq_mhz=500|"
  "apic_fuzz.elf -smp 2 -cpu Skylake-Server,+x2apic|"
  "smp_boot64.elf -smp 16,sockets=2,dies=2,cores=2,threads=2 -cpu EPYC|"
  "ipi_pingpong.elf -smp 2 -cpu Skylake-Server|iterations=2000"
  "mwait.elf -smp 2 -cpu qemu64,+monitor|mode=store"
  "mwait64.elf -smp 2 -cpu Skylake-Server,+monitor|mode=pause=1000"
  "sched.elf -smp 4 -cpu Skylake-Server|workload=pipe loops=300"
  "sched.elf -smp 4 -cpu Skylake-Server --cost halt_poll_ns=0,ipiv=1|workload=messaging loops=10"
  "sched.elf -smp 4 -cpu qemu64,+monitor|workload=ctxsw loops=300 idle=mwait"
  "smp_compute.elf -smp 4 -cpu Skylake-Server|iterations=100000"
  "cpu_features64.elf -cpu EPYC|"
  "misbehave.elf --time-limit 0.05|mode=spin"
  "misbehave.elf -cpu qemu64,+tsc-deadline --cost freq_mhz=500 --time-limit 0.05|mode=tsc_deadline_far"
  "smp_boot.elf -smp 300 -cpu Skylake-Server,+x2apic --cost none|cores=300"
)
# With the Linux guest fetched (tools/linux_guest.sh), its CI boot too: two
# vCPUs, PVH, perf's messaging run in the window (about 10 s in Release,
# a few minutes at -O0); and the same on 4 vCPUs as QEMU's KVM guest with
# every paravirtual feature on, whose kvmclock pages scale virtual time
# (docs/kvm_pv.md).
linux=.deps/linux
if [ -f "$linux/vmlinux" ] && [ -f "$linux/initramfs.cpio" ]; then
  linux_run="../../$linux/vmlinux --initrd $linux/initramfs.cpio -m 512 --time-limit 30"
  linux_append="console=ttyS0 panic=-1 topolab.bench=messaging:1:5"
  kvm_pv="kvm=on,kvm-pv-ipi=on,kvm-pv-unhalt=on,kvm-pv-tlb-flush=on,kvm-pv-sched-yield=on,kvm-poll-control=on"
  runs+=("$linux_run --smp 2 --cpu Skylake-Server|$linux_append"
         "$linux_run --smp 4 --cpu Skylake-Server,+x2apic,$kvm_pv|$linux_append")
fi
differ=0 statuses=""
for i in "${!runs[@]}"; do
  IFS='|' read -r spec append <<<"${runs[$i]}"
  read -r -a args <<<"$spec"
  image=$images/${args[0]}
  flags=("${args[@]:1}")
  [ -n "$append" ] && flags+=(-append "$append")
  for side in release other; do
    bin=$release
    [ $side = other ] && bin=$other
    "$bin" run "$image" "${flags[@]}" --report json --report-file "$tmp/$i.$side.json" >"$tmp/$i.$side.out" 2>"$tmp/$i.$side.err"
    echo $? >"$tmp/$i.$side.status"
  done
  statuses+=" $(cat "$tmp/$i.release.status")"
  same=1
  for f in out err json status; do cmp -s "$tmp/$i.release.$f" "$tmp/$i.other.$f" || same=0; done
  if [ $same -eq 0 ]; then
    echo "cross_build: DIFFER: ${runs[$i]}"
    differ=$((differ + 1))
  fi
done
echo "cross_build: ${#runs[@]} runs (exit statuses:$statuses), $differ differ between $release and $other"
[ $differ -eq 0 ]
