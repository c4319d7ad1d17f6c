#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The engine issue's benchmarks, side by side in one run (never a test):
# this build's topolab, a baseline topolab binary if BASE names one (an
# older build, on the prebuilt engine, say), and QEMU 7.2 where it can run
# the same image. Medians of RUNS (default 3) interleaved runs; host
# seconds with the image's boot subtracted where a short run measures it.
# Usage: [BASE=/path/to/old/topolab] [RUNS=3] bench/engine.sh [sections...]
#   sections: compute pingpong hang boot1024 linux (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
t=$PWD/build/topolab img=$PWD/build/testcases base=${BASE:-}
runs=${RUNS:-3}
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(compute pingpong hang boot1024 linux)
want() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
secs() { local s=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || true; python3 -c "print($EPOCHREALTIME - $s)"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
qemu() { qemu-system-x86_64 -kernel "$1" -display none -no-reboot -nic none -serial null -m 128 \
  -device isa-debug-exit,iobase=0xf4,iosize=4 -cpu Skylake-Server "${@:2}"; }
who=(new); [ -n "$base" ] && who+=(base)
bin() { [ "$1" = new ] && echo "$t" || echo "$base"; }

# NAME: the median over RUNS of (full - short) seconds for each runner.
# PEER=none: no QEMU column (a guest QEMU 7.2's TCG cannot run).
side_by_side() {  # LABEL UNIT WORK FULL_ARGS... -- SHORT_ARGS... (image args after the runner)
  local label=$1 work=$2; shift 2
  local runners=("${who[@]}"); [ "${PEER:-icount}" = none ] || runners+=(icount)
  local full=() short=(); while [ "$1" != -- ]; do full+=("$1"); shift; done; shift; short=("$@")
  declare -A res
  for r in $(seq "$runs"); do
    for w in "${runners[@]}"; do
      if [ "$w" = icount ]; then
        f=$(secs qemu "${full[@]}" -accel tcg,thread=single -icount shift=0)
        s=$(secs qemu "${short[@]}" -accel tcg,thread=single -icount shift=0)
      else
        f=$(secs "$(bin "$w")" run "${full[@]}" --report none)
        s=$(secs "$(bin "$w")" run "${short[@]}" --report none)
      fi
      res[$w]+="$(python3 -c "print(max($f - $s, 1e-6))") "
    done
  done
  local line="  $label:"
  for w in "${runners[@]}"; do
    m=$(printf '%s\n' ${res[$w]} | median); res[$w]=$m
    line+=$(printf '  %s %.3f s (%.0f/s)' "$w" "$m" "$(python3 -c "print($work / $m)")")
  done
  echo "$line"
  line="    ratios (rate):"
  [ "${PEER:-icount}" = none ] || line+=$(printf ' new/icount %.2fx' "$(python3 -c "print(${res[icount]} / ${res[new]})")")
  [ -n "$base" ] && line+=$(printf ' new/base %.2fx' "$(python3 -c "print(${res[base]} / ${res[new]})")")
  echo "$line"
}

if want compute; then
  echo "== compute_loop, 1 vCPU, 20,000,000 iterations (rate: iterations/s)"
  for stores in off on; do
    side_by_side "stores=$stores" 20000000 \
      "$img/compute_loop.elf" -append "iterations=20000000 stores=$stores" -- \
      "$img/compute_loop.elf" -append "iterations=1000 stores=$stores"
  done
fi
if want pingpong; then
  echo "== IPI ping-pong, 2 vCPUs in sti; hlt, 100,000 round trips (rate: round trips/s)"
  side_by_side "ipi_pingpong" 100000 \
    "$img/ipi_pingpong.elf" -smp 2 -append iterations=100000 -- "$img/ipi_pingpong.elf" -smp 2 -append iterations=10
  # x2APIC: each round trip is an ICR WRMSR and an EOI WRMSR on each side.
  # QEMU 7.2's TCG has no x2APIC, so no peer here.
  PEER=none side_by_side "ipi_pingpong x2apic=1" 100000 \
    "$img/ipi_pingpong.elf" -smp 2 -cpu Skylake-Server,+x2apic -append "iterations=100000 x2apic=1" -- \
    "$img/ipi_pingpong.elf" -smp 2 -cpu Skylake-Server,+x2apic -append "iterations=10 x2apic=1"
fi
if want hang; then
  echo "== a guest in jmp . with interrupts off (misbehave mode=spin), to its diagnosis or the 5 s time limit (host seconds, one run)"
  for w in "${who[@]}"; do
    # Once: an engine that runs the loop takes its whole time limit.
    rs=("$(secs "$(bin "$w")" run "$img/misbehave.elf" -append mode=spin --report none)")
    printf '  %s %.2f s\n' "$w" "$(printf '%s\n' "${rs[@]}" | median)"
  done
fi
if want boot1024; then
  echo "== 1,024 vCPUs (x2APIC): INIT/SIPI every AP and one IPI each (host seconds, median)"
  for w in "${who[@]}"; do
    rs=(); for _ in $(seq "$runs"); do
      rs+=("$(secs "$(bin "$w")" run "$img/smp_boot.elf" -smp 1024 -cpu Skylake-Server,+x2apic)"); done
    printf '  %s %.2f s\n' "$w" "$(printf '%s\n' "${rs[@]}" | median)"
  done
fi
if want linux && [ -f .deps/linux/vmlinux ]; then
  echo "== Debian's Linux 6.1 by PVH on 2 vCPUs, boot to /init and power-off (CI's boot; host seconds, median)"
  append="console=ttyS0 panic=-1 quiet"
  for w in "${who[@]}"; do
    rs=(); for _ in $(seq "$runs"); do
      rs+=("$(secs "$(bin "$w")" run .deps/linux/vmlinux --initrd .deps/linux/initramfs.cpio -m 512 --smp 2 \
        --cpu Skylake-Server --append "$append" --time-limit 30)"); done
    printf '  %s %.2f s\n' "$w" "$(printf '%s\n' "${rs[@]}" | median)"
  done
fi
