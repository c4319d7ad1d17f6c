#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Debian's Linux 6.1 on topolab (the guest of tools/linux_guest.sh).
#
#   linux_boot.sh TOPOLAB OUT boot NAME [KERNEL]   boot on 2 vCPUs, run a
#       short perf bench sched messaging, power off; check the guest's
#       topology files against `topolab cpuid --format linux` and its
#       /proc/interrupts RES and CAL deltas against topolab's window
#       (tools/linux_check.py); keep the console and report as
#       OUT/NAME.{console,json}. KERNEL: vmlinuz (the bzImage, the default)
#       or vmlinux (the same kernel uncompressed, booted by PVH)
#   linux_boot.sh TOPOLAB OUT high-ram    boot the bzImage by the boot
#       protocol with -m 16G (RAM above 4 GiB) in two NUMA nodes; the e820
#       map, Linux's present pages and MemTotal match -m, and linux_check
#       holds the topology, the nodes and the IPIs to topolab's
#   linux_boot.sh TOPOLAB OUT kvm-pv      boot by PVH on 4 vCPUs with every KVM
#       paravirtual feature; Linux's lines for each, its clocksource
#       (kvm-clock), linux_check, and the report's hypercalls
#   linux_boot.sh TOPOLAB OUT same A B    the two boots gave the same bytes
#   linux_boot.sh TOPOLAB OUT bad-input   one-line refusals of broken input
#
# Without a complete .deps/linux (tools/linux_guest.sh, which needs the
# network; tools/test.sh runs it first) the test is skipped (exit 77).
set -euo pipefail
topolab=$1 out=$2 mode=$3
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/.deps/linux
if [ ! -f "$dir/.complete" ]; then
  echo "SKIP: no $dir/.complete (tools/linux_guest.sh fetches the guest)"
  exit 77
fi
mkdir -p "$out"
kernel=$dir/vmlinuz initrd=$dir/initramfs.cpio
smp=2 cpu=Skylake-Server
# The command line README.md's "Linux" section explains.
append="console=ttyS0 panic=-1 topolab.bench=messaging:1:5"

case $mode in
  boot)
    name=$4
    case ${5:-vmlinuz} in
      vmlinuz) ;;
      vmlinux) kernel=$dir/vmlinux ;;
      *) echo "usage: linux_boot.sh TOPOLAB OUT boot NAME [vmlinuz|vmlinux [OPTIONS...]]" >&2; exit 2 ;;
    esac
    # OPTIONS: --snapshot-at VTIME FILE or --resume FILE (tests/CMakeLists.txt).
    extra=("${@:6}")
    # Offline with the cache complete: this only (re)builds the initramfs.
    flock "$dir/.lock" true
    "$top/tools/linux_guest.sh" >/dev/null
    status=0
    "$topolab" run "$kernel" --initrd "$initrd" -m 512 --smp $smp --cpu $cpu --append "$append" \
      --time-limit 30 --report-file "$out/$name.json" --report json "${extra[@]}" >"$out/$name.console" \
      2>"$out/$name.stderr" ||
      status=$?
    if [ "$status" != 0 ]; then
      echo "FAIL: topolab exited with $status"; tail -20 "$out/$name.console"; cat "$out/$name.stderr"; exit 1
    fi
    grep -q "powered the machine off (ACPI S5" "$out/$name.stderr" || { echo "FAIL: no ACPI power-off"; cat "$out/$name.stderr"; exit 1; }
    "$topolab" cpuid -m 512 --smp $smp --cpu $cpu --format linux >"$out/$name.expected"
    python3 "$top/tools/linux_check.py" --console "$out/$name.console" --expect "$out/$name.expected" \
      --report "$out/$name.json"
    ;;
  high-ram)
    # -m 16G: 3 GiB of RAM from 0 and 13 GiB from 4 GiB (docs/machine.md,
    # "Memory map"), booted by PVH. A wrapper init in a second cpio
    # (the kernel unpacks archives one after the other) prints MemTotal and
    # goes on to the guest's own /init; tests/linux_memory_check.py holds the
    # e820 map, Linux's count of present pages and MemTotal against -m.
    flock "$dir/.lock" true
    "$top/tools/linux_guest.sh" >/dev/null
    printf '%s\n' '#!/bin/sh' 'mount -t proc proc /proc' \
      'echo "topolab-meminfo $(grep MemTotal /proc/meminfo)"' 'umount /proc' 'exec /init' >"$out/meminit"
    python3 "$top/tools/make_initramfs.py" --file /topolab-meminit="$out/meminit" --mode /topolab-meminit=0755 \
      -o "$out/meminit.cpio"
    cat "$initrd" "$out/meminit.cpio" >"$out/high-ram-initramfs.cpio"
    status=0
    # Two nodes, the first SRAT entry's node second (Linux numbers its
    # nodes as they appear), the boundary between them above 4 GiB, a SLIT.
    numa=(--smp 2,sockets=2 --cpu $cpu -m 16G --object memory-backend-ram,id=a,size=6G
          --object memory-backend-ram,id=b,size=10G --numa node,memdev=a,cpus=1 --numa node,memdev=b,cpus=0
          --numa dist,src=0,dst=1,val=31)
    "$topolab" run "$dir/vmlinuz" --initrd "$out/high-ram-initramfs.cpio" "${numa[@]}" \
      --append "$append rdinit=/topolab-meminit" --time-limit 30 --report json --report-file "$out/high-ram.json" \
      >"$out/high-ram.console" 2>"$out/high-ram.stderr" || status=$?
    if [ "$status" != 0 ]; then
      echo "FAIL: topolab exited with $status"; tail -20 "$out/high-ram.console"; cat "$out/high-ram.stderr"; exit 1
    fi
    grep -q "powered the machine off (ACPI S5" "$out/high-ram.stderr" || { echo "FAIL: no ACPI power-off"; exit 1; }
    grep -q "^topolab-init: done" "$out/high-ram.console" || { echo "FAIL: /init did not finish"; exit 1; }
    python3 "$top/tests/linux_memory_check.py" "$out/high-ram.console" 16384
    "$topolab" cpuid "${numa[@]}" --format linux >"$out/high-ram.expected"
    python3 "$top/tools/linux_check.py" --console "$out/high-ram.console" --expect "$out/high-ram.expected" \
      --report "$out/high-ram.json"
    ;;
  kvm-pv)
    # KVM's paravirtual interface with every feature on (docs/kvm_pv.md),
    # 4 vCPUs so that Linux sends multicast IPIs, booted by PVH. A wrapper
    # init prints the clocksource Linux chose and goes on to /init.
    flock "$dir/.lock" true
    "$top/tools/linux_guest.sh" >/dev/null
    printf '%s\n' '#!/bin/sh' 'mount -t sysfs sysfs /sys' \
      'echo "topolab-clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"' \
      'umount /sys' 'exec /init' >"$out/pvinit"
    python3 "$top/tools/make_initramfs.py" --file /topolab-pvinit="$out/pvinit" --mode /topolab-pvinit=0755 \
      -o "$out/pvinit.cpio"
    cat "$initrd" "$out/pvinit.cpio" >"$out/kvm-pv-initramfs.cpio"
    pv=(--smp 4 --cpu "$cpu,+x2apic,kvm=on,kvm-pv-ipi=on,kvm-pv-unhalt=on,kvm-pv-tlb-flush=on,kvm-pv-sched-yield=on,kvm-poll-control=on")
    status=0
    "$topolab" run "$dir/vmlinux" --initrd "$out/kvm-pv-initramfs.cpio" -m 512 "${pv[@]}" \
      --append "$append rdinit=/topolab-pvinit" --time-limit 30 --report json --report-file "$out/kvm-pv.json" \
      >"$out/kvm-pv.console" 2>"$out/kvm-pv.stderr" || status=$?
    if [ "$status" != 0 ]; then
      echo "FAIL: topolab exited with $status"; tail -20 "$out/kvm-pv.console"; cat "$out/kvm-pv.stderr"; exit 1
    fi
    grep -q "powered the machine off (ACPI S5" "$out/kvm-pv.stderr" || { echo "FAIL: no ACPI power-off"; exit 1; }
    # What Linux 6.1 prints as it takes up each feature (arch/x86/kernel/kvm.c, kvmclock.c).
    for line in "kvm-clock: Using msrs 4b564d01 and 4b564d00" "kvm-guest: KVM setup pv remote TLB flush" \
      "kvm-guest: setup PV sched yield" "kvm-guest: PV spinlocks enabled" "kvm-guest: setup PV IPIs" \
      "clocksource: Switched to clocksource kvm-clock" "^topolab-clocksource kvm-clock"; do
      grep -q -- "$line" "$out/kvm-pv.console" || { echo "FAIL: the guest did not print '$line'"; exit 1; }
    done
    "$topolab" cpuid -m 512 "${pv[@]}" --format linux >"$out/kvm-pv.expected"
    python3 "$top/tools/linux_check.py" --console "$out/kvm-pv.console" --expect "$out/kvm-pv.expected" \
      --report "$out/kvm-pv.json"
    # The report's hypercalls: each one exit, PV IPIs among them, and no
    # more kick wakeups than kicks.
    python3 - "$out/kvm-pv.json" <<'PY'
import json, sys
vcpus = json.load(open(sys.argv[1]))["vcpus"]
calls = {}
for v in vcpus:
    assert v["exits"]["hypercall"] == sum(v["hypercalls"].values()), v["index"]
    for name, n in v["hypercalls"].items():
        calls[name] = calls.get(name, 0) + n
assert set(calls) <= {"send_ipi", "kick_cpu", "sched_yield"}, calls
# Every CPU took up kvmclock, steal time and PV EOI by their MSRs (Linux
# prints nothing for the last two); the BSP wrote the wall clock.
for v in vcpus:
    for msr, what in (("0x4b564d01", "kvmclock"), ("0x4b564d03", "steal time"), ("0x4b564d04", "PV EOI")):
        assert v["kvm_msr_writes"].get(msr, 0) >= 1, f"CPU {v['index']} did not take up {what}: {v['kvm_msr_writes']}"
assert vcpus[0]["kvm_msr_writes"].get("0x4b564d00", 0) >= 1, "no wall clock"
assert calls.get("send_ipi", 0) > 0, f"no PV IPI: {calls}"
kicked = sum(v["wakes"]["pv-kick"] for v in vcpus)
assert kicked <= calls.get("kick_cpu", 0), (kicked, calls)
print(f"ok: hypercalls {calls}, {kicked} vCPU(s) woken by a kick; KVM MSRs taken up: {vcpus[0]['kvm_msr_writes']}")
PY
    ;;
  same)
    for ext in console json; do
      cmp "$out/$4.$ext" "$out/$5.$ext" || { echo "FAIL: the two boots' $ext differ"; exit 1; }
    done
    # A boot that wrote a snapshot says so in one more line.
    diff <(grep -v '^topolab: snapshot at' "$out/$4.stderr") <(grep -v '^topolab: snapshot at' "$out/$5.stderr") ||
      { echo "FAIL: the two boots' closing lines differ"; exit 1; }
    echo "ok: two boots gave byte-identical console output, report and closing line"
    ;;
  bad-input)
    expect_error() {  # STATUS PATTERN ARGS...: exits with STATUS and one stderr line matching PATTERN
      local want=$1 pattern=$2 status=0
      shift 2
      "$topolab" run "$@" >/dev/null 2>"$out/bad.err" || status=$?
      [ "$status" = "$want" ] || { echo "FAIL: $* exited $status, not $want"; cat "$out/bad.err"; exit 1; }
      [ "$(wc -l <"$out/bad.err")" = 1 ] || { echo "FAIL: $* said more than one line"; cat "$out/bad.err"; exit 1; }
      grep -q "$pattern" "$out/bad.err" || { echo "FAIL: $*: '$(cat "$out/bad.err")' lacks '$pattern'"; exit 1; }
      echo "ok: $(cat "$out/bad.err")"
    }
    head -c 1000000 "$kernel" >"$out/truncated.bzImage"
    expect_error 125 "is truncated" "$out/truncated.bzImage"
    expect_error 125 "does not fit in guest RAM" "$kernel" --initrd "$initrd" -m 96
    expect_error 125 "too small for this Linux kernel" "$kernel" -m 32
    expect_error 125 "this kernel takes at most 2047" "$kernel" --append "$(printf 'x%.0s' $(seq 2100))"
    expect_error 125 "takes one -initrd file" "$kernel" --initrd "$initrd,$initrd"
    # The same kernel by PVH.
    "$top/tools/linux_guest.sh" >/dev/null
    expect_error 125 "does not fit in guest RAM" "$dir/vmlinux" --initrd "$initrd" -m 96
    expect_error 125 "outside guest RAM above 1 MiB" "$dir/vmlinux" -m 72
    expect_error 125 "Linux takes at most 2047" "$dir/vmlinux" --append "$(printf 'x%.0s' $(seq 2100))"
    expect_error 125 "takes one -initrd file" "$dir/vmlinux" --initrd "$initrd,$initrd"
    ;;
  *) echo "usage: linux_boot.sh TOPOLAB OUT boot NAME [vmlinuz|vmlinux] | high-ram | kvm-pv | same A B | bad-input" >&2; exit 2 ;;
esac
