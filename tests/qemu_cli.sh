#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The QEMU command line (cli/qemu_command.h) end to end: topolab's own
# testcases booted through build/qemu-system-x86_64 with kvm-unit-tests'
# flags, QEMU's exit statuses, and bad input as one line with status 1.
# Usage: qemu_cli.sh BUILD_DIR
set -uo pipefail
build=$1
qemu=$build/qemu-system-x86_64
images=$build/testcases
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# kvm-unit-tests' x86/run flags (scripts/arch-run.bash adds the accelerator).
kut=(--no-reboot -nodefaults -global kvm-pit.lost_tick_policy=discard -device pc-testdev
     -device isa-debug-exit,iobase=0xf4,iosize=0x4 -display none -serial stdio -machine accel=tcg)

# boots STATUS IMAGE ARGS...: the guest passes (its SUMMARY has no unexpected
# failure) and QEMU's status is STATUS ((0 << 1) | 1 = 1 for a pass).
boots() {
  local status=$1 image=$2
  shift 2
  timeout 120 "$qemu" "${kut[@]}" -kernel "$images/$image" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$status" ] || ! grep -q "^SUMMARY: .* 0 unexpected failures" "$tmp/out" || [ -s "$tmp/err" ]; then
    fail "$image $* -> $got (want $status):"; tail -3 "$tmp/out" "$tmp/err" | sed 's/^/    /'
  else
    echo "PASS: $image $* -> $got, $(grep '^SUMMARY' "$tmp/out")"
  fi
}
boots 1 apic_regs.elf -smp 2 -cpu Skylake-Server -append "cpus=2"
boots 1 apic_regs64.elf -smp 4 -cpu Skylake-Server,+x2apic -m 256 -append "cpus=4"
boots 1 ipi.elf -smp 4 -cpu Skylake-Server -append "cpus=4"
boots 1 ipi64.elf -smp 4,sockets=2,cores=2 -cpu Skylake-Server,+x2apic -append "sockets=2 cores=2"

# refuses STATUS FRAGMENT ARGS...: one line on stderr naming the problem.
refuses() {
  local status=$1 fragment=$2
  shift 2
  timeout 60 "$qemu" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$status" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$fragment" "$tmp/err"; then
    fail "qemu-system-x86_64 $* -> $got (want $status), want one line with '$fragment':"; sed 's/^/    /' "$tmp/err" | head -3
  else
    echo "PASS: qemu-system-x86_64 $* -> $got: $(cat "$tmp/err")"
  fi
}
refuses 1 "-frobnicate: invalid option" -kernel "$images/ipi.elf" -frobnicate
refuses 1 "-enable-kvm: topolab runs its own TCG only" -kernel "$images/ipi.elf" -enable-kvm
refuses 1 "topolab does not emulate edu" -kernel "$images/ipi.elf" -device edu
refuses 1 "could not load kernel '$tmp/missing.flat'" "${kut[@]}" -kernel "$tmp/missing.flat"
refuses 1 "-m 1000k: topolab's RAM is a whole number of MiB" -kernel "$images/ipi.elf" -m 1000k
TOPOLAB_OPTS="--nosuch" timeout 60 "$qemu" -kernel "$images/ipi.elf" >"$tmp/out" 2>"$tmp/err"
got=$?
if [ "$got" -ne 1 ] || ! grep -q "^topolab: TOPOLAB_OPTS: " "$tmp/err"; then fail "bad TOPOLAB_OPTS -> $got"; cat "$tmp/err"; fi

# isa-debug-exit: (value << 1) | 1; misbehave exits 1 (EXIT_FAIL) for a
# mode that does not misbehave, and 256 wraps to (512 | 1) & 0xff as QEMU's.
"$qemu" "${kut[@]}" -kernel "$images/misbehave.elf" -append "mode=behave" >/dev/null 2>"$tmp/err"
got=$?
[ "$got" -eq 3 ] && echo "PASS: isa-debug-exit 1 -> 3" || { fail "isa-debug-exit 1 -> $got (want 3)"; cat "$tmp/err"; }
"$qemu" "${kut[@]}" -kernel "$images/misbehave.elf" -append "mode=exit256" >/dev/null 2>"$tmp/err"
got=$?
[ "$got" -eq 1 ] && echo "PASS: isa-debug-exit 256 -> 1" || { fail "isa-debug-exit 256 -> $got (want 1)"; cat "$tmp/err"; }

# A triple fault with -no-reboot: QEMU's 0, and topolab says which fault.
"$qemu" "${kut[@]}" -kernel "$images/misbehave.elf" -append "mode=ud" >/dev/null 2>"$tmp/err"
got=$?
if [ "$got" -eq 0 ] && grep -q "triple fault.*-no-reboot" "$tmp/err"; then echo "PASS: triple fault -> 0: $(cat "$tmp/err")"
else fail "triple fault -> $got (want 0)"; cat "$tmp/err"; fi

# TOPOLAB_OPTS reaches topolab's options: one JSON report per test name.
TESTNAME=ipi_test TOPOLAB_OPTS="--report json --report-file $tmp/%t.json --quantum 5000" \
  "$qemu" "${kut[@]}" -kernel "$images/ipi.elf" -smp 2 -append "cpus=2" >/dev/null 2>"$tmp/err"
if python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['config']['quantum'] == 5000" "$tmp/ipi_test.json"
then echo "PASS: TOPOLAB_OPTS wrote $tmp/ipi_test.json with quantum 5000"
else fail "TOPOLAB_OPTS report"; cat "$tmp/err"; fi

# No isa-debug-exit asked for: port 0xf4 is open bus, as on QEMU, so the
# guest's exit write does nothing and it halts for good after it.
TOPOLAB_OPTS="--time-limit 0.01" "$qemu" -kernel "$images/misbehave.elf" -append "mode=behave" \
  >/dev/null 2>"$tmp/err"
got=$?
[ "$got" -eq 126 ] && grep -q "nothing can wake it" "$tmp/err" && echo "PASS: no -device isa-debug-exit -> $got: $(head -1 "$tmp/err")" || { fail "debug exit without the device -> $got"; cat "$tmp/err"; }

# A hostile guest writes all ones over every PCI header (pci-testdev's BARs
# among them) and reads where the BARs then point; the machine must go on,
# and pci-testdev answer at its firmware address once its BARs are back
# (testcases/misbehave.c, issue 27).
"$qemu" "${kut[@]}" -device pci-testdev -kernel "$images/misbehave.elf" -append "mode=pci_all_ones" \
  >"$tmp/out" 2>"$tmp/err"
got=$?
want="misbehave: pci_all_ones: 2 functions, 2 BAR size masks, 2 open-bus reads at all ones, testdev BAR0 febff000 reads 0, ffffffff at all ones, 0 again; ok"
if [ "$got" -eq 1 ] && grep -qxF "$want" "$tmp/out" && [ ! -s "$tmp/err" ]; then echo "PASS: pci_all_ones -> 1"
else fail "pci_all_ones -> $got (want 1 and '$want')"; cat "$tmp/out" "$tmp/err"; fi

# -version, as scripts parse it.
"$qemu" -h | head -1 | grep -q "^QEMU emulator version 7\.2\.0 (topolab" && echo "PASS: -version" || fail "-version"
"$qemu" -device help | grep -qF '"pc-testdev"' && echo "PASS: -device help" || fail "-device help"

echo "qemu_cli: $failures failures"
[ "$failures" -eq 0 ]
