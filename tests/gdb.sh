#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The debugger with its real client: Debian's gdb in batch mode against
# `topolab run --gdb 0 -S` on testcases/debug_race.c (4 vCPUs unless a
# case says otherwise). Each case runs one gdb script from tests/gdb/ and
# checks what gdb printed.
# Usage: gdb.sh TOPOLAB IMAGES CASE
#   threads       4 threads with their topology; a breakpoint every vCPU hits
#   registers     registers and memory at a breakpoint, the same as under
#                 qemu-system-x86_64 -s -S (the differential test)
#   watch         a watchpoint on the variable every vCPU races to write
#   same_output   attached, stopped and continued: the output and report of a
#                 run without a debugger, byte for byte
#   reverse       reverse-stepi and forwards again, reverse-continue to the
#                 last store before now, back through an IPI handler, the
#                 start of history; the output printed once
#   reverse_checkpoints  the same, replaying from in-memory snapshots: the
#                 same answers as replaying from the start
#   snapshots     the monitor's snapshot save, load (back, then forward
#                 again) and list
#   resume        --resume FILE with the stub: the same output
#   monitor       --monitor stdio: QEMU's monitor on stdin while the run goes on
#   refusals      a second client is refused; a client that dies lets the run
#                 go on; a bad --gdb is one line
set -euo pipefail
topolab=$1 images=$2 case=$3
here=$(cd "$(dirname "$0")" && pwd)
image=$images/debug_race64.elf
symbols=$images/debug_race64.elf64
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
[ -n "${GDB_TEST_KEEP:-}" ] && trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; echo "kept $tmp"' EXIT

fail() { echo "FAIL: $*"; echo "--- gdb:"; cat "$tmp/gdb.out" 2>/dev/null || true; echo "--- topolab stderr:"; cat "$tmp/err" 2>/dev/null || true; exit 1; }

# Starts topolab with the stub on a free port and -S; sets $pid and $port.
start_topolab() {
  timeout 120 "$topolab" run "$image" --gdb 127.0.0.1:0 -S "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^topolab: gdb: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/err" 2>/dev/null || true)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  fail "topolab never said where its stub listens"
}

# Runs tests/gdb/$1.gdb against the stub on $port.
run_gdb() {
  # gdb retries the connection (tcp auto-retry) while a loaded machine starts the peer.
  timeout 120 gdb -batch -nx -ex 'set pagination off' -ex 'set confirm off' -ex 'set tcp connect-timeout 60' \
    -ex "file $symbols" -ex "target remote 127.0.0.1:$port" -x "$here/gdb/$1.gdb" >"$tmp/gdb.out" 2>&1 || true
}

wait_topolab() {
  local status=0
  wait "$pid" || status=$?
  pid=
  return "$status"
}

# What tests/gdb/reverse.gdb must have found.
check_reverse_session() {
  value() { sed -n "s/^$1 \(.*\)$/\1/p" "$tmp/gdb.out"; }
  [ -n "$(value 'forward rip')" ] && [ "$(value 'forward rip')" = "$(value 'forward again rip')" ] ||
    fail "stepping forward after reverse-stepi did not come back to the same instruction"
  [ "$(value 'back rip')" != "$(value 'forward rip')" ] || fail "reverse-stepi did not move"
  grep -Eq '^last writer thread ([1-4]) wrote ([0-3]) at rip 0x' "$tmp/gdb.out" || fail "reverse-continue found no writer"
  writer=$(sed -n 's/^last writer thread \([1-4]\) wrote \([0-3]\).*/\1 \2/p' "$tmp/gdb.out")
  [ "$(( ${writer% *} - 1 ))" = "${writer#* }" ] || fail "the last writer's value is not its own index: $writer"
  [ "$(value 'in handler rip')" = "$(value 'in handler again rip')" ] ||
    fail "back through the IPI handler and forwards again is not the same state"
  entry=$(value 'handler entry thread [0-9]* rip')
  [ "$(value 'handler entry again rip')" = "$entry" ] || fail "reverse-stepi did not come back to the handler's entry"
  grep -q 'No more reverse-execution history' "$tmp/gdb.out" || fail "the start of history was not reported"
  cmp "$tmp/plain.out" "$tmp/out" || fail "output printed twice or differs after replays"
}

case $case in
threads)
  start_topolab -smp 4,sockets=2,cores=2
  run_gdb threads
  wait_topolab || fail "topolab exited $?"
  grep -q 'CPU 3 APIC 0x3 pkg 1 die 0 core 1 thread 0' "$tmp/gdb.out" || fail "info threads lacks CPU 3's topology"
  grep -Eq '^3 +0x3 +1 +0 +0 +1 +0 +L1d 3, L1i 3, L2 3, L3 2-3$' "$tmp/gdb.out" ||
    fail "monitor info topology does not show CPU 3's place and the caches it shares"
  grep -q "gdb's addresses are guest-physical now" "$tmp/gdb.out" || fail "monitor memory physical did not answer"
  grep -q '^physical race_winner 0xffffffff$' "$tmp/gdb.out" || fail "a read through physical addresses failed"
  [ "$(grep -c 'Thread [0-9]* (CPU ' "$tmp/gdb.out")" -ge 4 ] || fail "info threads does not list 4 vCPUs"
  # Every vCPU stops at race_store once (its first turn).
  hits=$(grep -o '^hit on thread [0-9]*' "$tmp/gdb.out" | sort -u | wc -l)
  [ "$hits" -eq 4 ] || fail "race_store stopped $hits distinct vCPUs, not 4"
  grep -Eq 'exited (normally|with code)' "$tmp/gdb.out" || fail "gdb did not see the run end"
  grep -q '^race winner: cpu [0-3]$' "$tmp/out" || fail "the guest's output is missing"
  ;;
registers)
  start_topolab -smp 1
  run_gdb registers
  wait_topolab || fail "topolab exited $?"
  grep '^reg ' "$tmp/gdb.out" >"$tmp/topolab.regs" || fail "no registers printed"
  # The same script under QEMU 7.2's own stub.
  qport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  timeout 120 qemu-system-x86_64 -accel tcg -kernel "$image" -display none -no-reboot -nic none -m 128 \
    -serial "file:$tmp/qemu.out" -device isa-debug-exit,iobase=0xf4,iosize=4 -smp 1 \
    -gdb "tcp:127.0.0.1:$qport" -S 2>"$tmp/qemu.err" &
  qpid=$!
  port=$qport run_gdb registers
  wait "$qpid" || true
  grep '^reg ' "$tmp/gdb.out" >"$tmp/qemu.regs" || fail "no registers printed under QEMU"
  diff "$tmp/qemu.regs" "$tmp/topolab.regs" || fail "registers or memory at main differ from QEMU's"
  echo "ok: $(wc -l <"$tmp/topolab.regs") values at main as QEMU 7.2's stub gives them"
  ;;
watch)
  start_topolab -smp 4
  run_gdb watch
  wait_topolab || fail "topolab exited $?"
  grep -q 'Hardware watchpoint 2: race_winner' "$tmp/gdb.out" || fail "the watchpoint never stopped"
  # The value at the stop is the index of the vCPU that wrote it.
  [ "$(grep -c '^writer thread [1-4] wrote [0-3] ok$' "$tmp/gdb.out")" -eq 3 ] || fail "a stop is not right after its writer's store"
  [ "$(grep -o '^writer thread [1-4]' "$tmp/gdb.out" | sort -u | wc -l)" -ge 2 ] || fail "the race never changed hands"
  ;;
same_output)
  timeout 120 "$topolab" run "$image" -smp 4 --report json --report-file "$tmp/plain.json" >"$tmp/plain.out" 2>/dev/null
  start_topolab -smp 4 --report json --report-file "$tmp/debugged.json"
  run_gdb same_output
  wait_topolab || fail "topolab exited $?"
  cmp "$tmp/plain.out" "$tmp/out" || fail "the guest's output differs with a debugger attached"
  cmp "$tmp/plain.json" "$tmp/debugged.json" || fail "the report differs with a debugger attached"
  echo "ok: output and report byte-identical with gdb attached, stopped $(grep -c '^stopped' "$tmp/gdb.out") times"
  ;;
reverse | reverse_checkpoints)
  # reverse_checkpoints: the same session replaying from in-memory
  # snapshots every 3,000 instructions (the run has some 77,000), then from
  # the start of the run (--checkpoint-every 0): the same answers. 32 MiB of
  # RAM: a checkpoint hashes all of it.
  every=100000000 mem=()
  [ "$case" = reverse_checkpoints ] && every=3000 mem=(-m 32)
  timeout 120 "$topolab" run "$image" -smp 4 "${mem[@]}" --report none >"$tmp/plain.out" 2>/dev/null
  start_topolab -smp 4 "${mem[@]}" --report none --checkpoint-every "$every"
  run_gdb reverse
  wait_topolab || fail "topolab exited $?"
  check_reverse_session
  if [ "$case" = reverse_checkpoints ]; then
    grep -v '^\[' "$tmp/gdb.out" >"$tmp/with_checkpoints.out"
    start_topolab -smp 4 "${mem[@]}" --report none --checkpoint-every 0
    run_gdb reverse
    wait_topolab || fail "topolab exited $?"
    check_reverse_session
    grep -v '^\[' "$tmp/gdb.out" | diff "$tmp/with_checkpoints.out" - ||
      fail "replays from checkpoints and from the start disagree"
  fi
  ;;
snapshots)
  timeout 120 "$topolab" run "$image" -smp 4 --report none >"$tmp/plain.out" 2>/dev/null
  start_topolab -smp 4 --report none --checkpoint-every 5000
  run_gdb snapshots
  wait_topolab || fail "topolab exited $?"
  value() { sed -n "s/^$1 \(.*\)$/\1/p" "$tmp/gdb.out"; }
  [ -n "$(value saved)" ] && [ "$(value saved)" = "$(value loaded)" ] ||
    fail "snapshot load did not come back to the saved registers and memory"
  [ -n "$(value later)" ] && [ "$(value later)" = "$(value 'forward again')" ] ||
    fail "snapshot load did not go forward again to the later snapshot"
  [ "$(value saved)" != "$(value later)" ] || fail "the two snapshots are the same point"
  grep -Eq '^two_stores +[0-3] +[0-9]+ +[0-9]+$' "$tmp/gdb.out" || fail "snapshot list did not list two_stores"
  grep -q '^snapshot load: no snapshot named nothing$' "$tmp/gdb.out" || fail "an unknown snapshot was not refused"
  cmp "$tmp/plain.out" "$tmp/out" || fail "output printed twice or differs after snapshot loads"
  echo "ok: snapshot save, load back and forward again: $(value loaded)"
  ;;
resume)
  # A run resumed from a file snapshot under gdb: the same output as the
  # run never stopped, and reverse execution back to the snapshot's start.
  timeout 120 "$topolab" run "$image" -smp 4 --report none >"$tmp/plain.out" 2>/dev/null
  timeout 120 "$topolab" run "$image" -smp 4 --report none --snapshot-at 300us "$tmp/s.snap" >/dev/null 2>&1
  start_topolab -smp 4 --report none --resume "$tmp/s.snap"
  run_gdb same_output
  wait_topolab || fail "topolab exited $?"
  cmp "$tmp/plain.out" "$tmp/out" || fail "the output resumed under gdb differs"
  echo "ok: resumed from a snapshot under gdb, the same output"
  ;;
monitor)
  printf 'info cpus\ninfo topology\nxp /4xw 0x1000\ninfo lapic 1\ninfo ipis\ninfo time\nfrobnicate\n' |
    timeout 120 "$topolab" run "$image" -smp 4,sockets=2,cores=2 --monitor stdio --report none >"$tmp/gdb.out" 2>"$tmp/err" ||
    fail "topolab exited $?"
  grep -q '^\* CPU #0: thread_id=1' "$tmp/gdb.out" || fail "no info cpus"
  grep -Eq '^3 +0x3 +1 +0 +0 +1 +0 ' "$tmp/gdb.out" || fail "no info topology"
  grep -Eq '^0000000000001000: 0x[0-9a-f]{8} 0x[0-9a-f]{8} 0x[0-9a-f]{8} 0x[0-9a-f]{8}$' "$tmp/gdb.out" || fail "no xp"
  grep -q '^cpu 1: apic id 0x1' "$tmp/gdb.out" || fail "no info lapic 1"
  grep -q '^CPU  IPIs sent' "$tmp/gdb.out" || fail "no info ipis"
  grep -q '^CPU  virtual ns' "$tmp/gdb.out" || fail "no info time"
  grep -qi 'frobnicate' "$tmp/gdb.out" || fail "an unknown command was not named"
  grep -q '^race winner: cpu [0-3]$' "$tmp/gdb.out" || fail "the run did not go on to its end"
  ;;
refusals)
  start_topolab -smp 1
  # A first client holds the stub; a second, from inside its script, is
  # refused with one line.
  GDB_TEST_PORT=$port run_gdb detach_late
  wait_topolab || fail "topolab exited $?"
  grep -q 'topolab: gdb: a client is already attached' "$tmp/err" || fail "the second client was not refused"
  # A client that dies at a breakpoint: the run goes on to its end.
  start_topolab -smp 4
  run_gdb drop
  wait_topolab || fail "topolab exited $? after its client died"
  grep -q '^race winner: cpu [0-3]$' "$tmp/out" || fail "the run did not go on after its client died"
  status=0
  "$topolab" run "$image" --gdb nonsense >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" -ne 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a bad --gdb is not one line and a failure"
  ;;
*) echo "gdb.sh: unknown case $case"; exit 2 ;;
esac
echo "ok: gdb $case"
