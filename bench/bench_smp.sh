#!/usr/bin/env bash
# SMP benchmarks, side by side in one run (never part of the tests):
#  1. IPI round trips per host second between 2 vCPUs (ipi_pingpong), under
#     topolab, QEMU 7.2's default multi-threaded TCG and its deterministic
#     mode (-accel tcg,thread=single -icount shift=0), boot time subtracted;
#  2. booting 1,024 vCPUs in x2APIC mode (each takes INIT, SIPI, SIPI and a
#     wake-up IPI): host time and memory per vCPU;
#  3. guest MIPS with 16 busy vCPUs against 1 (smp_compute, same total work).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
t=build/topolab img=build/testcases
n=${1:-100000}
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); python3 -c "print($e - $s)"; }
qemu() { qemu-system-x86_64 -kernel "$1" -display none -no-reboot -nic none -serial null -m 128 \
  -device isa-debug-exit,iobase=0xf4,iosize=4 -smp 2 -cpu Skylake-Server "${@:2}"; }

echo "== 1. IPI ping-pong, $n round trips (host seconds, boot subtracted; median of 3)"
median() { sort -n | sed -n 2p; }
for who in topolab mttcg icount; do
  runs=()
  for _ in 1 2 3; do
    case $who in
      topolab) full=$(secs $t run $img/ipi_pingpong.elf -smp 2 -cpu Skylake-Server -append iterations=$n --report none)
               boot=$(secs $t run $img/ipi_pingpong.elf -smp 2 -cpu Skylake-Server -append iterations=10 --report none) ;;
      mttcg)   full=$(secs qemu $img/ipi_pingpong.elf -accel tcg -append iterations=$n)
               boot=$(secs qemu $img/ipi_pingpong.elf -accel tcg -append iterations=10) ;;
      icount)  full=$(secs qemu $img/ipi_pingpong.elf -accel tcg,thread=single -icount shift=0 -append iterations=$n)
               boot=$(secs qemu $img/ipi_pingpong.elf -accel tcg,thread=single -icount shift=0 -append iterations=10) ;;
    esac
    runs+=("$(python3 -c "print($full - $boot)")")
  done
  s=$(printf '%s\n' "${runs[@]}" | median)
  printf '  %-8s %8.3f s  %10.0f round trips/s\n' "$who" "$s" "$(python3 -c "print($n / $s)")"
done

echo "== 2. 1,024 vCPUs (x2APIC): boot every AP and wake each with an IPI"
/usr/bin/time -f "  %e s wall, %M KiB max RSS" $t run $img/smp_boot.elf -smp 1024 -cpu Skylake-Server,+x2apic \
  --report none 2>&1 >/dev/null | tail -1

echo "== 3. guest MIPS: 16 busy vCPUs against 1, the same total work (smp_compute)"
mips() {
  local s e out ins
  s=$(date +%s.%N)
  out=$($t run $img/smp_compute.elf -smp "$1" -cpu Skylake-Server -append iterations="$2" --report none --time-limit 100 2>&1 | tail -1)
  e=$(date +%s.%N)
  ins=$(echo "$out" | sed -n 's/.*after \([0-9]*\) instructions.*/\1/p')
  python3 -c "print('%.0f' % ($ins / ($e - $s) / 1e6))"
}
one=$(mips 1 160000000)
sixteen=$(mips 16 10000000)
echo "  1 vCPU: $one MIPS   16 vCPUs: $sixteen MIPS   ratio $(python3 -c "print('%.0f%%' % (100 * $sixteen / $one))")"
