#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bad input and misbehaving guests: each must end with a clear one-line error
# on stderr and the documented non-zero status, never a crash or a hang.
# Usage: bad_input.sh TOPOLAB IMAGES_DIR
set -uo pipefail
topolab=$1 images=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passed=0

# expect STATUS FRAGMENT -- ARGS...: exit status STATUS, stderr exactly one
# line containing FRAGMENT, within 60 s.
expect() {
  local status=$1 fragment=$2
  shift 3
  timeout 60 "$topolab" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ "$got" -ne "$status" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$fragment" "$tmp/err"; then
    echo "FAIL: topolab $* -> status $got (want $status), $lines stderr lines (want 1), want '$fragment':"
    sed 's/^/    /' "$tmp/err" | head -5
    failures=$((failures + 1))
  else
    echo "PASS: topolab $* -> $got: $(cat "$tmp/err")"
    passed=$((passed + 1))
  fi
}

good=$images/cpuid_dump.elf
head -c 100 "$good" >"$tmp/truncated.elf"                  # ELF header cut short
printf 'not an image at all\n' >"$tmp/text.img"
cp "$good" "$tmp/corrupt.elf"
printf '\xff\xff' | dd of="$tmp/corrupt.elf" bs=1 seek=44 conv=notrunc 2>/dev/null  # e_phnum = 65535
: >"$tmp/empty.elf"
mkdir -p "$tmp/dir.elf"

# Images
expect 125 "cannot read $tmp/missing.elf: No such file" -- run "$tmp/missing.elf"
expect 125 "no Multiboot header" -- run "$tmp/text.img"
expect 125 "is empty" -- run "$tmp/empty.elf"
expect 125 "is a directory" -- run "$tmp/dir.elf"
expect 125 "no Multiboot header" -- run "$tmp/truncated.elf"
expect 125 "program headers run past the end" -- run "$tmp/corrupt.elf"
expect 125 "no Multiboot header" -- run /bin/true
expect 125 "outside the 2 MiB of guest RAM" -- run "$good" -m 2
expect 125 "-m 0: not a size" -- run "$good" -m 0
expect 125 "-m 1: topolab's guest RAM is at least 2 MiB" -- run "$good" -m 1
expect 125 "-m 4x: unknown size suffix 'x'" -- run "$good" -m 4x
expect 125 "-m 65536M: address space limit 0xfffffffff < 0x10bfffffff phys-bits too low (36)" -- \
  run "$good" -m 64G --cpu qemu64,phys-bits=36
expect 125 "-m 2097152M: topolab's engine addresses 40 bits" -- run "$good" -m 2T --cpu qemu64,phys-bits=52
expect 1 "-m 65536M: address space limit 0xfffffffff < 0x10bfffffff phys-bits too low (36)" -- \
  qemu -kernel "$good" -m 64G -cpu qemu64,phys-bits=36
expect 125 "not a regular file" -- run /dev/zero
mkfifo "$tmp/fifo.elf"
expect 125 "not a regular file" -- run "$tmp/fifo.elf"
expect 125 "cannot read $tmp/nomodule" -- run "$good" -initrd "$tmp/nomodule"
expect 125 "-serial bogus" -- run "$good" -serial bogus

# -smp and -cpu
expect 125 "greater than zero" -- run "$good" -smp 0
expect 125 "must equal maxcpus (7)" -- run "$good" -smp 7,sockets=2,cores=2
expect 125 "more than the 4096" -- run "$good" -smp 4097
expect 125 "add +x2apic" -- run "$good" -smp 300
expect 125 "unknown parameter 'sockts'" -- cpuid -smp 4,sockts=2
expect 125 "unknown CPU model 'Pentium9'" -- run "$good" -cpu Pentium9
expect 125 "unknown feature 'avx9'" -- cpuid -cpu qemu64,+avx9
expect 125 "unknown property 'l4-cache'" -- cpuid -cpu qemu64,l4-cache=on
expect 125 "--time-limit" -- run "$good" --time-limit -1
expect 125 "--time-limit" -- run "$good" --time-limit inf
expect 125 "--time-limit" -- run "$good" --time-limit nan
expect 125 "--quantum: Value 0 not in range" -- run "$good" --quantum 0
expect 125 "= 281474976710656 but must equal maxcpus (4)" -- cpuid -smp 4,sockets=4096,dies=4096,threads=4096,cores=4096
expect 125 "must equal maxcpus (4)" -- cpuid -smp 4,sockets=4096,dies=4096,threads=4096
expect 125 "cannot create" -- cpuid --format hwloc --output /proc/nope/dir
expect 125 "--format" -- cpuid --format xml
expect 125 "needs --output" -- cpuid --format hwloc

# Guests that go wrong
bad=$images/misbehave.elf
expect 126 "halted with interrupts disabled" -- run "$bad" -append mode=halt
# jmp . with interrupts off: proved endless at once (docs/unicorn.md), not run to the time limit.
expect 126 "guest hang: cpu 0 loops forever in a jump to itself at RIP 0x" -- run "$bad" -append mode=spin
# A wait on a flag nobody sets, with interrupts off: a loop that only reads
# memory, proved endless at once; and the same when the one CPU that could
# set it has halted with interrupts off.
expect 126 "guest hang: cpu 0 loops forever in a loop that only reads memory (3 instructions at 0x" -- \
  run "$bad" -append mode=flag
expect 126 "guest hang: cpu 0 loops forever in a loop that only reads memory (3 instructions at 0x" -- \
  run "$bad" -smp 2 -append mode=peer_flag
# Stuck loops of other shapes (issue 27), each diagnosed at once with why
# nothing can end it, never run to the time limit.
expect 126 "guest hang: cpu 0 loops forever in a loop of 2 blocks (0x" -- run "$bad" -append mode=two_blocks
expect 126 "3 instructions a turn) that stores nothing and comes back to the same registers every turn at RIP" -- \
  run "$bad" -append mode=same_branch
expect 126 "that stores only what its stack already holds and comes back to the same registers every turn" -- \
  run "$bad" -append mode=call_loop
expect 126 "loops forever in a PAUSE loop that stores nothing" -- run "$bad" -append mode=pause_forever
expect 126 "with interrupts on: interrupts are on, but no interrupt source is armed: its APIC timer is not running" -- \
  run "$bad" -append mode=sti_spin
expect 126 "that has no way out (its registers move, but no branch leaves it and nothing in it can fault) at RIP" -- \
  run "$bad" -append mode=sti_count
expect 126 "with interrupts off: interrupts are off and nothing in the loop can turn them on; it is the only vCPU" -- \
  run "$bad" -append mode=count_forever
expect 126 "every other vCPU is halted or stuck too (cpu 0 loops forever at RIP 0x" -- \
  run "$bad" -smp 2 -append mode=all_stuck
expect 126 "nothing can end it before the time limit (60 s of virtual time)" -- run "$bad" -append mode=spin
# A REP of 4 G turns is one instruction to the guest, but no longer free to
# the budget past 2^26 turns (Unicorn patch 0005): the time limit ends it
# (before the patch it ran its 4 G turns, a minute or more of host time).
expect 124 "did not finish within 0.01 s of virtual time" -- run "$bad" -append mode=rep_forever --time-limit 0.01
# F11: the same hang with APs never started (no engine yet) crashed.
expect 126 "every other vCPU is halted or stuck too (cpu 1 waits for SIPI)" -- run "$bad" -smp 2 -append mode=spin
# The PIT's IRQ 0 at 596.6 kHz, unmasked, with nothing able to take it: a
# hang found at once, not after 72 million edges; with no IDT, a crash.
expect 126 "halted with interrupts disabled" -- run "$bad" -append mode=pit_halt
expect 126 "guest hang: cpu 0 loops forever in a jump to itself at RIP 0x" -- run "$bad" -append mode=pit_spin
expect 126 "interrupt 0x30 has no usable handler" -- run "$bad" -append mode=pit_no_idt
# Not stuck: a loop that leaves after 2^26 turns runs them all and goes on.
expect 1 "guest exit 1 after" -- run "$bad" -append mode=ends_late --report none
# Not stuck either: loops on a device and on the TSC, which change with time.
expect 1 "guest exit 1 after" -- run "$bad" -append mode=rtc_wait --report none
expect 1 "guest exit 1 after" -- run "$bad" -append mode=tsc_wait --report none
expect 124 "did not finish within 0.0001 s" -- run "$images/compute_loop.elf" -append iterations=100000000 \
  --time-limit 0.0001
# With no IDT an exception is a triple fault (SDM 6.15), named in one line.
expect 126 "triple fault: #GP(0x43) while delivering #DF(0x0) while delivering #GP(0x33) while delivering #UD" -- \
  run "$bad" -append mode=ud
expect 126 "while delivering #DE (the first raised by" -- run "$bad" -append mode=divide
# A read far beyond RAM is open bus: all ones, counted, and the guest goes on.
report=$(mktemp)
out=$("$topolab" run "$bad" -append mode=unmapped --report json --report-file "$report" 2>/dev/null || true)
if printf "%s\n" "$out" | grep -qx ffffffff && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['vcpus'][0]['open_bus_reads'] == 1 else 1)" "$report"; then
  passed=$((passed + 1))
else
  echo "FAIL: mode=unmapped should read 0xffffffff from open bus and count one open-bus read: stdout '$out'"
  failures=$((failures + 1))
fi
rm -f "$report"
expect 126 "rdmsr of unknown MSR 0x4b564dff" -- run "$bad" -append mode=msr
expect 126 "guest exit 256 does not fit" -- run "$bad" -append mode=exit256
expect 126 "took an INIT and waits for a SIPI" -- run "$bad" -append mode=init_self
expect 126 "reserved delivery mode 011b" -- run "$bad" -append mode=reserved_delivery
expect 126 "has no usable handler" -- run "$bad" -append mode=no_idt_interrupt
# MONITOR/MWAIT: bad input stops the run; without +monitor they are #UD.
expect 126 "with no MONITOR before it" -- run "$bad" -cpu qemu64,+monitor -append mode=mwait_no_monitor
expect 126 "the guest waits in MWAIT on line" -- run "$bad" -cpu qemu64,+monitor -append mode=mwait_forever
expect 126 "with hint EAX 0x20: this CPU model enumerates no C-state sub-states" -- \
  run "$bad" -cpu Skylake-Server,+monitor -append mode=mwait_bad_hint
expect 126 "on 0xfee00000, which is not RAM (the local APIC page)" -- run "$bad" -cpu qemu64,+monitor -append mode=monitor_mmio
expect 126 "invalid opcode: monitor at" -- run "$bad" -cpu qemu64 -append mode=monitor_absent
# Issue 14 F1: a TSC deadline past 2^64 ns (a 500 MHz TSC) never comes; the
# run ends at the time limit instead of spinning the host (timeout: 60 s).
expect 124 "did not finish within 0.05 s of virtual time (halted, waiting for timers" -- \
  run "$bad" -cpu qemu64,+tsc-deadline --cost freq_mhz=500 --time-limit 0.05 -append mode=tsc_deadline_far
# Issue 14 F5: IA32_TSC_DEADLINE without CPUID.1:ECX[24] is #GP.
expect 126 "wrmsr of unknown MSR 0x6e0" -- run "$bad" -cpu qemu64 -append mode=tsc_deadline_absent

# Hostile device programming (issue 27, part 4): each is survived, and the
# guest checks what the devices did ("; ok") and exits 0. pci_all_ones needs
# -device pci-testdev: tests/qemu_cli.sh runs it.
survives() {
  local mode=$1 fragment=$2
  timeout 60 "$topolab" run "$bad" -append "mode=$mode" --report none >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq 0 ] && grep -q -- "^misbehave: $mode: .*$fragment.*; ok$" "$tmp/out" && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then
    echo "PASS: mode=$mode -> 0: $(tail -1 "$tmp/out")"
    passed=$((passed + 1))
  else
    echo "FAIL: mode=$mode -> $got (want 0 and '$fragment ... ok'):"
    sed 's/^/    /' "$tmp/out" "$tmp/err" | head -5
    failures=$((failures + 1))
  fi
}
survives pci_all_ones "1 functions, 0 BAR size masks"
survives ioapic_wild "ESR 0x40 (receive illegal vector), pin 2 level entry 0xc005, 0x18005 after its EOI"
survives rtc_pit_storm "100000 rounds; PIT counts 0x"
survives fw_cfg_dma "ID 0x1 (no DMA), DMA requests past RAM and over the code changed nothing, signature QEMU"
survives pic_storm "20000 rounds, 10626 interrupts through ExtINT; without EOI 1, ISR 0x1; after the EOI 2"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
