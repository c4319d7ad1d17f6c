#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SMP benchmarks, side by side in one run (never part of the tests):
#  pingpong   IPI round trips per host second between 2 vCPUs (ipi_pingpong),
#             under topolab, QEMU 7.2's default multi-threaded TCG and its
#             deterministic mode (-accel tcg,thread=single -icount shift=0),
#             boot time subtracted;
#  boot       booting 1,024 vCPUs in x2APIC mode (each takes INIT, SIPI, SIPI
#             and a wake-up IPI): host time and memory per vCPU;
#  mips       guest MIPS with 16 busy vCPUs against 1 (smp_compute, same
#             total work);
#  spinlock   spin_print (N CPUs print in turn under one lock / meet at a
#             barrier) at 2, 8, 32 and 128 vCPUs: topolab with spin skipping
#             on and off, QEMU MTTCG and QEMU icount; the growth 32 -> 128 and
#             the ratios at 32;
#  tsc        the 10 ms RDTSC+PAUSE delay loop (tsc_delay, tsc_delay64),
#             spin skipping on and off;
#  experiments  `topolab experiment l3-cache` and `halt-poll` host time, this
#             build against OLD_TOPOLAB (another build's topolab; the row is
#             skipped when unset), alternating old/new;
#  tables     the experiments' JSON with --spin-skip on against off.
# Usage: bench_smp.sh [SECTION...] [ROUND_TRIPS]   (default: every section;
# a number sets the ping-pong round trips, default 100000).
# Environment: OLD_TOPOLAB=path/to/old/topolab, RUNS (default 3),
# SPIN_TIMEOUT (seconds per spin_print run, default 300),
# EXPERIMENT_ARGS (extra flags for both experiment builds, e.g. "--scale 50").
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
t=$PWD/build/topolab img=$PWD/build/testcases
n=100000 sections=()
for a in "$@"; do
  case $a in
    [0-9]*) n=$a ;;
    pingpong|boot|mips|spinlock|tsc|experiments|tables) sections+=("$a") ;;
    *) echo "usage: $0 [pingpong|boot|mips|spinlock|tsc|experiments|tables]... [ROUND_TRIPS]" >&2; exit 2 ;;
  esac
done
[ ${#sections[@]} -gt 0 ] || sections=(pingpong boot mips spinlock tsc experiments tables)
want() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
runs=${RUNS:-3} spin_timeout=${SPIN_TIMEOUT:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); python3 -c "print($e - $s)"; }
qemu() { qemu-system-x86_64 -kernel "$1" -display none -no-reboot -nic none -serial null -m 128 \
  -device isa-debug-exit,iobase=0xf4,iosize=4 -smp 2 -cpu Skylake-Server "${@:2}"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

if want pingpong; then
echo "== IPI ping-pong, $n round trips (host seconds, boot subtracted; median of $runs)"
declare -A pp
for who in topolab mttcg icount; do
  rs=()
  for _ in $(seq "$runs"); do
    case $who in
      topolab) full=$(secs $t run $img/ipi_pingpong.elf -smp 2 -cpu Skylake-Server -append iterations=$n --report none)
               boot=$(secs $t run $img/ipi_pingpong.elf -smp 2 -cpu Skylake-Server -append iterations=10 --report none) ;;
      mttcg)   full=$(secs qemu $img/ipi_pingpong.elf -accel tcg -append iterations=$n)
               boot=$(secs qemu $img/ipi_pingpong.elf -accel tcg -append iterations=10) ;;
      icount)  full=$(secs qemu $img/ipi_pingpong.elf -accel tcg,thread=single -icount shift=0 -append iterations=$n)
               boot=$(secs qemu $img/ipi_pingpong.elf -accel tcg,thread=single -icount shift=0 -append iterations=10) ;;
    esac
    rs+=("$(python3 -c "print($full - $boot)")")
  done
  s=$(printf '%s\n' "${rs[@]}" | median)
  pp[$who]=$s
  printf '  %-8s %8.3f s  %10.0f round trips/s\n' "$who" "$s" "$(python3 -c "print($n / $s)")"
done
echo "  topolab / icount (round trips/s): $(ratio "${pp[icount]}" "${pp[topolab]}")x   topolab / MTTCG: $(ratio "${pp[mttcg]}" "${pp[topolab]}")x"
fi

if want boot; then
echo "== 1,024 vCPUs (x2APIC): boot every AP and wake each with an IPI (default cost model)"
for _ in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$tmp/time" $t run $img/smp_boot.elf -smp 1024 -cpu Skylake-Server,+x2apic \
    --report none >/dev/null 2>&1 || echo "  (exit status $?)"
  read -r e kib <"$tmp/time"
  printf '  %6.2f s wall, %8d KiB max RSS = %.2f MiB per vCPU\n' "$e" "$kib" "$(python3 -c "print($kib / 1024 / 1024)")"
done
fi

if want mips; then
echo "== guest MIPS: 16 busy vCPUs against 1, the same total work (smp_compute)"
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
fi

# spin_run WHO IMAGE SMP APPEND: host seconds of one run that printed its
# "spin_print: ... ok" / "tsc_delay: us=" line, "timeout" past
# $spin_timeout s, or "failed".
spin_run() {
  local who=$1 image=$2 smp=$3 append=$4 s e status=0 out=$tmp/out
  s=$(date +%s.%N)
  case $who in
    on|off) timeout "$spin_timeout" $t run "$img/$image" -smp "$smp" -cpu Skylake-Server -append "$append" \
              --spin-skip "$who" --report none >"$out" 2>&1 || status=$? ;;
    mttcg)  timeout "$spin_timeout" qemu-system-x86_64 -accel tcg -kernel "$img/$image" -display none -no-reboot \
              -nic none -m 128 -serial "file:$out" -device isa-debug-exit,iobase=0xf4,iosize=4 \
              -smp "$smp" -cpu Skylake-Server -append "$append" >"$tmp/qemu.err" 2>&1 || status=$? ;;
    icount) timeout "$spin_timeout" qemu-system-x86_64 -accel tcg,thread=single -icount shift=0 -kernel "$img/$image" \
              -display none -no-reboot -nic none -m 128 -serial "file:$out" -device isa-debug-exit,iobase=0xf4,iosize=4 \
              -smp "$smp" -cpu Skylake-Server -append "$append" >"$tmp/qemu.err" 2>&1 || status=$? ;;
  esac
  e=$(date +%s.%N)
  if [ "$status" -eq 124 ]; then echo timeout
  elif grep -aq -e '^spin_print: .* ok$' -e '^tsc_delay: us=' "$out"; then python3 -c "print($e - $s)"
  else
    { echo "  [$who $image -smp $smp '$append': exit $status]"; tail -3 "$out"; cat "$tmp/qemu.err" 2>/dev/null; } | head -8 >&2
    echo failed
  fi
  rm -f "$tmp/qemu.err"
}
# spin_median WHO IMAGE SMP APPEND: the median of $runs runs; stops at the
# first run that times out ("> N s") or fails.
spin_median() {
  local r rs=()
  for _ in $(seq "$runs"); do
    r=$(spin_run "$@")
    case $r in timeout) echo "> $spin_timeout s"; return ;; failed) echo failed; return ;; esac
    rs+=("$r")
  done
  printf '%s\n' "${rs[@]}" | median
}
fmt_s() { case $1 in [0-9]*) printf '%.3f s' "$1" ;; *) printf '%s' "$1" ;; esac; }
num() { case $1 in [0-9]*) return 0 ;; *) return 1 ;; esac; }
smp_of() {
  case $1 in
    32) echo 32,sockets=2,dies=2,cores=4,threads=2 ;;
    128) echo 128,sockets=2,dies=2,cores=16,threads=2 ;;
    *) echo "$1" ;;
  esac
}

if want spinlock; then
declare -A sp
lines=20
echo "== spin_print lines=$lines: host seconds, median of $runs (topolab --spin-skip on/off, QEMU 7.2 MTTCG, QEMU icount)"
echo "   off only up to 32 vCPUs; every run capped by timeout $spin_timeout"
printf '  %-8s %5s  %12s %12s %12s %12s\n' lock vCPUs "skip on" "skip off" "QEMU MTTCG" "QEMU icount"
for row in tas:2 tas:8 tas:32 tas:128 ticket:32 barrier:32 ticket:128 barrier:128; do
  lock=${row%:*} cpus=${row#*:} smp=$(smp_of "${row#*:}")
  for who in on off mttcg icount; do
    if [ "$who" = off ] && [ "$cpus" -gt 32 ]; then sp[$lock,$cpus,$who]=-; continue; fi
    sp[$lock,$cpus,$who]=$(spin_median "$who" spin_print.elf "$smp" "lock=$lock lines=$lines")
  done
  printf '  %-8s %5s  %12s %12s %12s %12s\n' "$lock" "$cpus" "$(fmt_s "${sp[$lock,$cpus,on]}")" \
    "$(fmt_s "${sp[$lock,$cpus,off]}")" "$(fmt_s "${sp[$lock,$cpus,mttcg]}")" "$(fmt_s "${sp[$lock,$cpus,icount]}")"
done
echo "  growth time(128) / time(32) (4x = linear, 16x = quadratic):"
for lock in tas ticket barrier; do
  for who in on mttcg icount; do
    a=${sp[$lock,32,$who]} b=${sp[$lock,128,$who]}
    if num "$a" && num "$b"; then printf '    %-8s %-7s %6.1fx\n' "$lock" "$who" "$(python3 -c "print($b / $a)")"
    else printf '    %-8s %-7s %s / %s\n' "$lock" "$who" "$b" "$a"; fi
  done
done
echo "  at 32 vCPUs, how many times faster topolab (skip on) is:"
for lock in tas ticket barrier; do
  o=${sp[$lock,32,on]}
  for who in icount mttcg off; do
    x=${sp[$lock,32,$who]}
    if num "$o" && num "$x"; then printf '    %-8s topolab/%-7s %8.2fx\n' "$lock" "$who" "$(ratio "$x" "$o")"
    else printf '    %-8s topolab/%-7s (%s against %s)\n' "$lock" "$who" "$o" "$x"; fi
  done
done
fi

if want tsc; then
echo "== tsc_delay us=10000 (a 10 ms RDTSC+PAUSE loop, 1 vCPU): host seconds, median of $runs"
for image in tsc_delay.elf tsc_delay64.elf; do
  on=$(spin_median on "$image" 1 us=10000) off=$(spin_median off "$image" 1 us=10000)
  icount=$(spin_median icount "$image" 1 us=10000) mttcg=$(spin_median mttcg "$image" 1 us=10000)
  printf '  %-16s skip on %s   skip off %s   QEMU MTTCG %s   QEMU icount %s\n' "$image" \
    "$(fmt_s "$on")" "$(fmt_s "$off")" "$(fmt_s "$mttcg")" "$(fmt_s "$icount")"
done
echo "  (a whole run: boot, the loop, exit; the run at 1 us for the boot alone:"
printf '   skip on %s)\n' "$(fmt_s "$(spin_median on tsc_delay.elf 1 us=1)")"
fi

if want experiments; then
echo "== topolab experiment NAME ${EXPERIMENT_ARGS:-} (default flags: 5 repeats, --jobs 2): host seconds, alternating old/new"
if [ -z "${OLD_TOPOLAB:-}" ]; then
  echo "  OLD_TOPOLAB unset: only this build"
fi
for name in l3-cache halt-poll; do
  olds=() news=()
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    [ -n "${OLD_TOPOLAB:-}" ] && olds+=("$(secs "$OLD_TOPOLAB" experiment "$name" ${EXPERIMENT_ARGS:-})")
    # shellcheck disable=SC2086
    news+=("$(secs $t experiment "$name" ${EXPERIMENT_ARGS:-})")
  done
  new=$(printf '%s\n' "${news[@]}" | median)
  if [ -n "${OLD_TOPOLAB:-}" ]; then
    old=$(printf '%s\n' "${olds[@]}" | median)
    printf '  %-9s old %7.2f s (%s)   new %7.2f s (%s)   new is %sx faster\n' "$name" "$old" \
      "$(printf '%.1f ' "${olds[@]}")" "$new" "$(printf '%.1f ' "${news[@]}")" "$(ratio "$old" "$new")"
  else
    printf '  %-9s new %7.2f s (%s)\n' "$name" "$new" "$(printf '%.1f ' "${news[@]}")"
  fi
done
fi

if want tables; then
echo "== the experiments with --spin-skip on against off (--format json ${EXPERIMENT_ARGS:-})"
for name in l3-cache halt-poll; do
  for s in on off; do
    # shellcheck disable=SC2086
    $t experiment "$name" --format json --spin-skip "$s" ${EXPERIMENT_ARGS:-} >"$tmp/$name.$s.json" 2>/dev/null
  done
  python3 - "$name" "$tmp/$name.on.json" "$tmp/$name.off.json" <<'PY'
import json, sys
name, on, off = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
def strip(x):
    # The spin_skip field says which run it was; cost lines describe the model.
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in ("spin_skip", "cost")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = strip(on), strip(off)
if a == b:
    print(f"  {name}: identical (apart from spin_skip and the cost line)")
    sys.exit(0)
diffs = []
def walk(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y: diffs.append((path + "." + k, x.get(k), y.get(k)))
            else: walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)): walk(u, v, f"{path}[{i}]")
    elif x != y:
        diffs.append((path, x, y))
walk(a, b, "")
same = sum(1 for c, d in zip(a["cases"], b["cases"]) if c == d)
print(f"  {name}: {len(diffs)} values differ (on / off); {same} of {len(a['cases'])} cases identical")
# Per case: the window (the tables' main figure) and the IPI rate against the spread of the repeats.
for c, d in zip(a["cases"], b["cases"]):
    if c == d:
        continue
    spread = max(d["window_ns_max"] - d["window_ns_min"], c["window_ns_max"] - c["window_ns_min"])
    diff = c["mean_window_ns"] - d["mean_window_ns"]
    rate = lambda x: (x["res_ipis"] + x["cal_ipis"]) / x["window_ns"] * 1e9
    rspread = max(d["ipi_per_s_max"] - d["ipi_per_s_min"], c["ipi_per_s_max"] - c["ipi_per_s_min"])
    rdiff = rate(c) - rate(d)
    print(f"    {c['workload']} / {c['setting']} / {c['machine']}: window {c['mean_window_ns']:.0f} / "
          f"{d['mean_window_ns']:.0f} ns ({100 * diff / d['mean_window_ns']:+.2f}%, repeats spread "
          f"{100 * spread / d['mean_window_ns']:.2f}%: {'within' if abs(diff) <= spread else 'OUTSIDE'}); "
          f"IPI/s {rate(c):.0f} / {rate(d):.0f} ({100 * rdiff / max(rate(d), 1e-9):+.2f}%, spread "
          f"{100 * rspread / max(rate(d), 1e-9):.2f}%: {'within' if abs(rdiff) <= rspread else 'OUTSIDE'})")
PY
done
fi
