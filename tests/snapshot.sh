#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Whole-machine snapshots (emu/machine_snapshot.h, docs/debugging.md).
# Usage: snapshot.sh TOPOLAB IMAGES CASE
#   resume     for a set of testcases that exercise every device and vCPU
#              state (IPIs in both APIC modes, APIC timers, MWAIT, spin
#              locks with pause-loop exits, the TSC, paging and exceptions,
#              INIT/SIPI with APs not yet started, the sched guest's halt
#              polling): a snapshot at a third and at two thirds of the run
#              changes nothing in the run that takes it, and a run resumed
#              from it prints the same output, closing line and JSON report
#              as the run that was never stopped, byte for byte
#   refusals   a snapshot of another configuration, a damaged, truncated or
#              foreign file, another format version, a bad VTIME, and a
#              VTIME after the run's end: one line each, status 125
set -euo pipefail
topolab=$1 images=$2 case=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "${SNAPSHOT_TEST_KEEP:-}" ] && trap 'echo "kept $tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# run NAME ARGS...: stdout to NAME.out, stderr to NAME.err, the JSON report
# to NAME.json, the status to NAME.status.
run() {
  local name=$1
  shift
  local status=0
  timeout 300 "$topolab" run "$@" --report json --report-file "$tmp/$name.json" >"$tmp/$name.out" \
    2>"$tmp/$name.err" || status=$?
  echo "$status" >"$tmp/$name.status"
}

same() {  # same A B WHAT: the outputs, closing lines, reports and statuses of runs A and B agree
  local a=$1 b=$2 what=$3
  cmp -s "$tmp/$a.out" "$tmp/$b.out" || { diff "$tmp/$a.out" "$tmp/$b.out" | head -5; fail "$what: the output differs"; }
  cmp -s "$tmp/$a.json" "$tmp/$b.json" ||
    { diff <(tr , '\n' <"$tmp/$a.json") <(tr , '\n' <"$tmp/$b.json") | head -8; fail "$what: the report differs"; }
  cmp -s "$tmp/$a.status" "$tmp/$b.status" || fail "$what: the exit status differs"
  diff <(grep -v '^topolab: snapshot at' "$tmp/$a.err") <(grep -v '^topolab: snapshot at' "$tmp/$b.err") >/dev/null ||
    { diff "$tmp/$a.err" "$tmp/$b.err" | head -5; fail "$what: stderr differs"; }
}

# The run's virtual time at its end, in ns, from the closing line.
end_ns() {
  sed -n 's/.* \([0-9.]*\) s of virtual time.*/\1/p' "$tmp/$1.err" | tail -1 | awk '{printf "%d", $1 * 1e9}'
}

resume_case() {
  local name=$1
  shift
  run "$name.plain" "$@"
  local end
  end=$(end_ns "$name.plain")
  [ -n "$end" ] && [ "$end" -gt 0 ] || fail "$name: no closing line: $(cat "$tmp/$name.plain.err")"
  for third in 1 2; do
    local at=$((end * third / 3))ns file=$tmp/$name.$third.snap
    run "$name.taken$third" "$@" --snapshot-at "$at" "$file"
    [ -s "$file" ] || fail "$name: no snapshot at $at: $(cat "$tmp/$name.taken$third.err")"
    same "$name.plain" "$name.taken$third" "$name: taking a snapshot at $at"
    run "$name.resumed$third" "$@" --resume "$file"
    same "$name.plain" "$name.resumed$third" "$name: resumed from $at"
  done
  # A run resumed from the first takes the second again, byte for byte.
  run "$name.again" "$@" --resume "$tmp/$name.1.snap" --snapshot-at "$((end * 2 / 3))ns" "$tmp/$name.again.snap"
  same "$name.plain" "$name.again" "$name: resumed and snapshot again"
  cmp -s "$tmp/$name.again.snap" "$tmp/$name.2.snap" ||
    fail "$name: the snapshot a resumed run took differs from the one the whole run took"
  echo "ok: $name: snapshots at a third and two thirds of $end ns; resumed, the same output and report"
}

case $case in
  resume)
    resume_case ipi "$images/ipi.elf" -smp 8,sockets=2,cores=2,threads=2 -cpu Skylake-Server,+x2apic
    resume_case ipi64 "$images/ipi64.elf" -smp 4 -cpu Skylake-Server,+x2apic
    resume_case apic_timer "$images/apic_timer64.elf" -smp 2
    resume_case mwait "$images/mwait64.elf" -smp 4 -cpu Skylake-Server
    resume_case spin_print "$images/spin_print64.elf" -smp 4 -cpu Skylake-Server -append "lock=ticket lines=10"
    resume_case tsc_delay "$images/tsc_delay64.elf" -append us=2000
    resume_case exceptions "$images/exceptions64.elf"
    resume_case demand_paging "$images/demand_paging.elf"
    resume_case smp_boot "$images/smp_boot64.elf" -smp 6,sockets=2,cores=3
    resume_case sched "$images/sched.elf" -smp 4 -cpu Skylake-Server
    ;;
  refusals)
    image=$images/ipi64.elf
    run made "$image" -smp 4 --snapshot-at 1ms "$tmp/s.snap"
    [ -s "$tmp/s.snap" ] || fail "no snapshot written: $(cat "$tmp/made.err")"
    expect() {  # expect WHAT PATTERN ARGS...: one line on stderr matching PATTERN, status 125
      local what=$1 pattern=$2
      shift 2
      run refused "$@"
      [ "$(cat "$tmp/refused.status")" = 125 ] || fail "$what: status $(cat "$tmp/refused.status"), not 125"
      [ "$(wc -l <"$tmp/refused.err")" = 1 ] || fail "$what: not one line: $(cat "$tmp/refused.err")"
      grep -q -- "$pattern" "$tmp/refused.err" || fail "$what: $(cat "$tmp/refused.err")"
      echo "ok: $what: $(cat "$tmp/refused.err")"
    }
    expect "another -smp" 'another machine or build (topology: ' "$image" -smp 2 --resume "$tmp/s.snap"
    expect "another -cpu" 'another machine or build (-cpu: ' "$image" -smp 4 -cpu EPYC --resume "$tmp/s.snap"
    expect "another image" 'another machine or build (memory at start' "$images/apic_timer64.elf" -smp 4 \
      --resume "$tmp/s.snap"
    expect "another quantum" 'another machine or build (quantum: ' "$image" -smp 4 --quantum 5000 \
      --resume "$tmp/s.snap"
    cp "$tmp/s.snap" "$tmp/bad.snap"
    printf 'x' | dd of="$tmp/bad.snap" bs=1 seek=100 conv=notrunc status=none
    expect "a damaged file" 'is damaged: its checksum does not match' "$image" -smp 4 --resume "$tmp/bad.snap"
    head -c 30 "$tmp/s.snap" >"$tmp/short.snap"
    expect "a truncated file" 'is not a topolab snapshot' "$image" -smp 4 --resume "$tmp/short.snap"
    head -c 1000 "$tmp/s.snap" >"$tmp/cut.snap"
    expect "a file cut short" 'is damaged' "$image" -smp 4 --resume "$tmp/cut.snap"
    expect "a foreign file" 'is not a topolab snapshot' "$image" -smp 4 --resume "$image"
    expect "a missing file" 'cannot read the snapshot' "$image" -smp 4 --resume "$tmp/none.snap"
    cp "$tmp/s.snap" "$tmp/v9.snap"
    printf '\x09' | dd of="$tmp/v9.snap" bs=1 seek=16 conv=notrunc status=none
    expect "another format" 'is a snapshot of format 9; this build reads format [0-9]*' "$image" -smp 4 \
      --resume "$tmp/v9.snap"
    expect "a bad VTIME" '--snapshot-at soon: expected a virtual time' "$image" --snapshot-at soon "$tmp/x.snap"
    run late "$image" -smp 4 --snapshot-at 100s "$tmp/late.snap"
    [ "$(cat "$tmp/late.status")" = 125 ] || fail "a VTIME after the end: status $(cat "$tmp/late.status")"
    grep -q '^topolab: no snapshot written: the run ended at' "$tmp/late.err" || fail "a VTIME after the end: $(cat "$tmp/late.err")"
    [ ! -e "$tmp/late.snap" ] || fail "a VTIME after the end wrote a file"
    echo "ok: a VTIME after the end: $(grep 'no snapshot' "$tmp/late.err")"
    ;;
  *) fail "unknown case $case" ;;
esac
