#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The scheduler guest (testcases/sched): every workload under a few idle
# modes, each ending with exit 0 and a well-formed sched-result line; the
# consequences of the wakeup mechanism that follow from the topology alone
# (not from the cost model), wake_wide and its decay included; the op_ns
# burn; IPIs and EOIs without MSR exits in xAPIC and x2APIC mode; the AMD
# control; bad command lines; and the same output byte for byte on a second
# run.
# Usage: sched.sh TOPOLAB IMAGES_DIR [mwait]
#   mwait: only the idle=mwait cases (they need MONITOR/MWAIT in topolab).
set -uo pipefail
topolab=$1 images=$2 only=${3:-}
image=$images/sched.elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passed=0
keys="workload idle wakelist cpus llc_size loops groups op_ns elapsed_cycles elapsed_ns ns_per_op ops
      wakeups direct queued ipi_res ipi_cal ipi_total poll_wakes idle_entries halts mwaits
      poll_timeouts migrations wide forks switches"

S8="8,sockets=1,cores=8,threads=1"
S16="16,sockets=1,cores=8,threads=2"

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; passed=$((passed + 1)); }

# sched NAME SMP CPU APPEND [REPORT]: runs quietly; leaves the result line in
# $tmp/NAME (and with REPORT=json the run report in $tmp/NAME.json).
sched() {
  local name=$1 smp=$2 cpu=$3 append=$4 report=(--report none)
  [ "${5:-}" = json ] && report=(--report json --report-file "$tmp/$name.json")
  timeout 120 "$topolab" run "$image" --smp "$smp" --cpu "$cpu" --quantum 1000 "${report[@]}" \
    --append "$append quiet=1" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local status=$?
  local line
  line=$(grep -a '^sched-result: ' "$tmp/$name.out")
  if [ "$status" -ne 0 ] || [ "$(grep -c . "$tmp/$name.out")" -ne 1 ] || [ -z "$line" ]; then
    fail "$name: status $status (want 0) and exactly one sched-result line; got:"
    sed 's/^/    /' "$tmp/$name.out" "$tmp/$name.err" | head -8
    return 1
  fi
  for k in $keys; do
    if ! grep -qE "(^| )$k=[^ ]+( |$)" <<<"$line"; then
      fail "$name: no $k= in: $line"
      return 1
    fi
  done
  echo "$line" >"$tmp/$name"
  return 0
}

# field NAME KEY: the value of KEY in NAME's result line.
field() { grep -oE "(^| )$2=[^ ]+" "$tmp/$1" | head -1 | cut -d= -f2-; }

# check NAME EXPR: EXPR in terms of $key shell variables set from the line.
check() {
  local name=$1 expr=$2
  [ -f "$tmp/$name" ] || return
  local vars=""
  for k in wakeups direct queued ipi_res ipi_cal ipi_total poll_wakes halts mwaits loops ops \
           wide op_ns elapsed_ns; do
    vars+="local $k=$(field "$name" "$k"); "
  done
  if (eval "$vars"; eval "(( $expr ))"); then
    pass "$name: $expr ($(cut -d' ' -f2- "$tmp/$name" | cut -c1-160))"
  else
    fail "$name: $expr does not hold: $(cat "$tmp/$name")"
  fi
}

if [ "$only" = mwait ]; then
  sched mwait_ctxsw 4 Skylake-Server,+monitor "workload=ctxsw idle=mwait loops=200" &&
    check mwait_ctxsw "mwaits > 0 && poll_wakes > 0 && halts == 0"
  sched mwait_msg 8 qemu64,+monitor "workload=messaging idle=mwait loops=5" &&
    check mwait_msg "mwaits > 0 && halts == 0"
  echo "sched.sh mwait: $passed passed, $failures failed"
  [ "$failures" -eq 0 ]
  exit
fi

# pipe on 1 socket x 8 cores: without a shared LLC both tasks end up on one
# CPU (the first sync wakeup pulls the wakee to the waker's CPU) and hardly
# any IPI is sent. After that every wakeup is wide (sd_llc_size is 1 and
# both tasks have one wakee flip), so it targets the task's previous CPU,
# which is that same CPU. With a shared LLC (size 8) nothing is wide,
# select_idle_sibling spreads them and every wakeup kicks a halted CPU.
sched pipe_l3off "$S8" Skylake-Server,l3-cache=off "workload=pipe loops=300" &&
  check pipe_l3off "ipi_total < 10 && halts < 10 && wide >= wakeups - 2"
sched pipe_l3on "$S8" Skylake-Server,l3-cache=on "workload=pipe loops=300" &&
  check pipe_l3on "ipi_res >= 2 * loops && halts >= 2 * loops && wide == 0"
# The flips decay once per second of TSC time: with tsc_khz=1000 a "second"
# is 10^6 cycles (0.5 ms here), after which each task's single flip halves
# to 0 and stays there (it keeps waking the same task), so wake_wide stops.
sched pipe_decay "$S8" Skylake-Server,l3-cache=off "workload=pipe loops=2000 tsc_khz=1000" &&
  check pipe_decay "ipi_total < 10 && wide > 0 && wide < wakeups / 4"

# op_ns: each channel write and read burns op_ns of TSC time, so a pipe
# round trip (two writes, two reads) on one CPU takes 4 * op_ns longer.
sched pipe_op0 "$S8" Skylake-Server,l3-cache=off "workload=pipe loops=1000 op_ns=0" &&
  sched pipe_op1000 "$S8" Skylake-Server,l3-cache=off "workload=pipe loops=1000" && {
  extra=$(( $(field pipe_op1000 elapsed_ns) - $(field pipe_op0 elapsed_ns) ))
  if [ "$(field pipe_op1000 op_ns)" = 1000 ] && [ "$(field pipe_op0 op_ns)" = 0 ] &&
     (( extra >= 4 * 1000 * 1000 && extra <= 4 * 1000 * 1000 * 105 / 100 )); then
    pass "pipe: op_ns=1000 adds $extra ns to 1000 round trips (4 ops of 1000 ns each, +5% at most)"
  else
    fail "pipe: op_ns=1000 adds $extra ns to 1000 round trips, want 4,000,000 to 4,200,000"
  fi
}

# IPIs and EOIs use the APIC mode and address cached at bring-up: the
# measured window has no MSR exits (each would be an RDMSR of
# IA32_APIC_BASE), and one ICR exit per IPI, in xAPIC mode (8 vCPUs) and in
# x2APIC mode (300 vCPUs need it; the scheduler uses 8 of them).
no_msr_exits() {  # NAME
  python3 - "$tmp/$1.json" "$(field "$1" ipi_total)" <<'PY'
import json, sys
vcpus = json.load(open(sys.argv[1]))["window"]["vcpus"]
msr = sum(v["exits"]["msr"] for v in vcpus)
icr = sum(v["exits"]["icr"] for v in vcpus)
ipis = int(sys.argv[2])
assert ipis > 0 and msr == 0 and icr == ipis, f"msr exits {msr}, icr exits {icr}, IPIs sent {ipis}"
print(f"no MSR exits, {icr} ICR exits for {ipis} IPIs")
PY
}
for mode in xapic x2apic; do
  if [ $mode = xapic ]; then
    sched apic_$mode "$S8" Skylake-Server,l3-cache=on "workload=pipe loops=200" json
  else
    sched apic_$mode 300 Skylake-Server,+x2apic "workload=pipe loops=200 cpus=8" json
  fi && if out=$(no_msr_exits apic_$mode 2>&1); then
    pass "pipe in $mode mode: $out"
  else
    fail "pipe in $mode mode: $(tail -1 <<<"$out")"
  fi
done
sched pipe_cal "$S8" Skylake-Server,l3-cache=on "workload=pipe loops=300 wakelist=cal" &&
  check pipe_cal "ipi_cal >= 2 * loops && direct == 0"
sched pipe_poll "$S16" Skylake-Server "workload=pipe loops=300 idle=poll" &&
  check pipe_poll "ipi_total < 10 && poll_wakes >= 2 * loops && halts == 0"

# messaging: outside a shared LLC wakeups go through the wake list.
sched msg_l3off "$S8" Skylake-Server,l3-cache=off "workload=messaging loops=10" &&
  check msg_l3off "queued > direct && ipi_res > 0"
sched msg_l3on "$S16" Skylake-Server,l3-cache=on "workload=messaging loops=10" &&
  check msg_l3on "queued == 0 && direct > 0"
sched msg_haltpoll 4 Skylake-Server "workload=messaging loops=10 groups=2 idle=haltpoll=20000" &&
  check msg_haltpoll "ops == 2 * 20 * 20 * loops"

# ctxsw across CPUs 0 and 1: halt needs an IPI per wakeup, polling none.
sched ctxsw_halt 4 Skylake-Server "workload=ctxsw loops=300" &&
  check ctxsw_halt "ipi_res == ops && halts >= ops && op_ns == 0"
sched ctxsw_haltpoll 4 Skylake-Server "workload=ctxsw loops=300 idle=haltpoll=500000" &&
  check ctxsw_haltpoll "ipi_res < 10 && poll_wakes >= ops - 10"
sched ctxsw_poll 4 Skylake-Server "workload=ctxsw loops=300 idle=poll" &&
  check ctxsw_poll "ipi_total < 10 && halts == 0"

# The AMD control: on qemu64 (family 15) Linux's LLC is the package with or
# without an L3, so l3-cache changes no decision and no count.
for w in pipe messaging; do
  for l3 in on off; do
    sched "amd_${w}_$l3" "$S8" "qemu64,l3-cache=$l3" "workload=$w loops=20"
  done
  if [ -f "$tmp/amd_${w}_on" ] && cmp -s "$tmp/amd_${w}_on" "$tmp/amd_${w}_off"; then
    pass "qemu64 $w: the same sched-result with l3-cache=on and off"
  else
    fail "qemu64 $w: l3-cache changed the sched-result"
  fi
done

# Bad command lines: a FAIL line naming the problem and exit status 1.
bad() {
  local append=$1 cpu=$2 fragment=$3
  timeout 60 "$topolab" run "$image" --smp 2 --cpu "$cpu" --report none --append "$append" \
    >"$tmp/bad.out" 2>&1
  local status=$?
  if [ "$status" -eq 1 ] && grep -q "^FAIL: .*$fragment" "$tmp/bad.out"; then
    pass "'$append' -> 1: $(grep '^FAIL' "$tmp/bad.out")"
  else
    fail "'$append' -> status $status, want 1 and a FAIL line with '$fragment'"
    sed 's/^/    /' "$tmp/bad.out" | head -5
  fi
}
bad "workload=nosuch" Skylake-Server "workload= wants"
bad "idle=haltpoll=soon" Skylake-Server "idle= wants"
bad "wakelist=ipi" Skylake-Server "wakelist= wants"
bad "loops=0" Skylake-Server "loops= wants"
bad "op_ns=fast" Skylake-Server "op_ns= wants"
bad "op_ns=1000000001" Skylake-Server "op_ns= wants"
bad "cpus=3" Skylake-Server "more CPUs than"
bad "idle=mwait" Skylake-Server,-monitor "CPUID.01H:ECX\[3\]"

# Determinism: the whole output, report included, twice.
for i in 1 2; do
  "$topolab" run "$image" --smp "$S16" --cpu Skylake-Server --quantum 1000 \
    --append "workload=messaging loops=10" >"$tmp/det$i" 2>&1
done
if cmp -s "$tmp/det1" "$tmp/det2"; then
  pass "two runs of messaging on 16 vCPUs are byte-identical"
else
  fail "two runs of messaging on 16 vCPUs differ"
  diff "$tmp/det1" "$tmp/det2" | head -10
fi

echo "sched.sh: $passed passed, $failures failed"
[ "$failures" -eq 0 ]
