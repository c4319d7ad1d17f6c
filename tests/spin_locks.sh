#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Spin-wait guests under topolab (testcases/spin_print.c, tsc_delay.c).
# Usage:
#   spin_locks.sh lock TOPOLAB IMAGES SMP CPU LOCK LINES [IMAGE [TOPOLAB ARGS...]]
#     spin_print lock=LOCK lines=LINES: exit 0, the summary line
#     "spin_print: lock=LOCK cpus=N lines=LINES total=T ok" with T = N * LINES
#     (tas, ticket) and, for tas and ticket, "cpu C line I" for every C < N
#     and I < LINES exactly once (N = the summary's cpus=).
#   spin_locks.sh determinism TOPOLAB IMAGES SMP CPU APPEND [IMAGE]
#     the same run twice: byte-identical output (serial and topolab's
#     closing line) and the same exit status, which must be 0.
#   spin_locks.sh tsc TOPOLAB IMAGES US MAX_LATE [IMAGE [TOPOLAB ARGS...]]
#     tsc_delay us=US on one CPU: exit 0 and "elapsed=E" with
#     ticks <= E <= ticks + MAX_LATE (spin skipping: one quantum of ticks).
#   spin_locks.sh skips TOPOLAB IMAGES SMP CPU APPEND
#     with --spin-skip on the JSON report counts pause-loop exits and
#     skipped time; with off, none, and every instruction ran (more of them).
# IMAGE defaults to spin_print.elf / tsc_delay.elf.
set -euo pipefail
mode=$1 topolab=$2 images=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run OUT IMAGE ARGS...: topolab's output to OUT, its status on stdout
  local out=$1 image=$2 status=0
  shift 2
  timeout 60 "$topolab" run "$images/$image" "$@" >"$out" 2>&1 || status=$?
  echo "$status"
}

case $mode in
lock)
  smp=$1 cpu=$2 lock=$3 lines=$4 image=${5:-spin_print.elf}
  shift $(( $# < 5 ? $# : 5 ))
  status=$(run "$tmp/out" "$image" -smp "$smp" -cpu "$cpu" -append "lock=$lock lines=$lines" "$@")
  summary=$(grep -a '^spin_print:' "$tmp/out" || true)
  echo "topolab exit $status: ${summary:-no summary line}"
  grep -a '^FAIL:' "$tmp/out" || true
  [ "$status" -eq 0 ] || { tail -5 "$tmp/out"; exit 1; }
  n=$(sed -n 's/^spin_print: lock=[a-z]* cpus=\([0-9]*\) .*/\1/p' <<<"$summary")
  [ -n "$n" ] || { echo "FAIL: no cpus= in the summary"; exit 1; }
  if [ "$lock" = barrier ]; then
    want=$(( lines * (lines + 1) / 2 * (n * (n + 1) / 2) ))
  else
    want=$(( n * lines ))
  fi
  [ "$summary" = "spin_print: lock=$lock cpus=$n lines=$lines total=$want ok" ] ||
    { echo "FAIL: expected total=$want ok"; exit 1; }
  if [ "$lock" != barrier ]; then
    got=$(grep -a -c '^cpu [0-9]* line [0-9]*$' "$tmp/out" || true)
    [ "$got" -eq "$want" ] || { echo "FAIL: $got 'cpu C line I' lines, expected $want"; exit 1; }
    # Each (C, I) exactly once, and nothing outside 0..N-1 x 0..LINES-1.
    bad=$(grep -a '^cpu [0-9]* line [0-9]*$' "$tmp/out" | sort | uniq -d | head -1)
    [ -z "$bad" ] || { echo "FAIL: printed twice: $bad"; exit 1; }
    bad=$(grep -a '^cpu [0-9]* line [0-9]*$' "$tmp/out" |
          awk -v n="$n" -v k="$lines" '$2 >= n || $4 >= k' | head -1)
    [ -z "$bad" ] || { echo "FAIL: out of range: $bad"; exit 1; }
    for ((c = 0; c < n; c++)); do
      per=$(grep -a -c "^cpu $c line " "$tmp/out" || true)
      [ "$per" -eq "$lines" ] || { echo "FAIL: cpu $c printed $per lines, expected $lines"; exit 1; }
    done
  fi
  echo "ok: $n CPUs, $lines each"
  ;;
determinism)
  smp=$1 cpu=$2 append=$3 image=${4:-spin_print.elf}
  s1=$(run "$tmp/out1" "$image" -smp "$smp" -cpu "$cpu" -append "$append")
  s2=$(run "$tmp/out2" "$image" -smp "$smp" -cpu "$cpu" -append "$append")
  [ "$s1" -eq 0 ] || { echo "FAIL: exit $s1"; tail -5 "$tmp/out1"; exit 1; }
  [ "$s1" -eq "$s2" ] || { echo "FAIL: exit $s1, then $s2"; exit 1; }
  cmp "$tmp/out1" "$tmp/out2" || { echo "FAIL: the output differs between two runs"; exit 1; }
  echo "ok: two runs identical ($(wc -l <"$tmp/out1") lines; $(grep -a "^topolab: guest exit" "$tmp/out1" || true))"
  ;;
tsc)
  us=$1 max_late=$2 image=${3:-tsc_delay.elf}
  shift $(( $# < 3 ? $# : 3 ))
  status=$(run "$tmp/out" "$image" -smp 1 -append "us=$us" "$@")
  line=$(grep -a '^tsc_delay: us=' "$tmp/out" || true)
  echo "topolab exit $status: ${line:-no result line}"
  [ "$status" -eq 0 ] || { tail -5 "$tmp/out"; exit 1; }
  ticks=$(sed -n 's/.* ticks=\([0-9]*\) .*/\1/p' <<<"$line")
  elapsed=$(sed -n 's/.* elapsed=\([0-9]*\)$/\1/p' <<<"$line")
  [ -n "$ticks" ] && [ -n "$elapsed" ] || { echo "FAIL: no ticks=/elapsed="; exit 1; }
  [ "$elapsed" -ge "$ticks" ] || { echo "FAIL: left after $elapsed of $ticks ticks"; exit 1; }
  [ "$elapsed" -le $((ticks + max_late)) ] ||
    { echo "FAIL: left $((elapsed - ticks)) ticks late, more than $max_late"; exit 1; }
  echo "ok: late by $((elapsed - ticks)) ticks (at most $max_late)"
  ;;
skips)
  smp=$1 cpu=$2 append=$3
  for s in on off; do
    status=$(run "$tmp/out.$s" spin_print.elf -smp "$smp" -cpu "$cpu" -append "$append" --spin-skip "$s" \
             --report json --report-file "$tmp/report.$s.json")
    [ "$status" -eq 0 ] || { echo "FAIL: --spin-skip $s: exit $status"; tail -5 "$tmp/out.$s"; exit 1; }
  done
  read -r exits skipped insns_on < <(python3 - "$tmp/report.on.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["vcpus"]
print(sum(c["ple_exits"] for c in v), sum(c["skipped_ns"] for c in v), r["instructions"])
PY
)
  read -r exits_off skipped_off insns_off < <(python3 - "$tmp/report.off.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["vcpus"]
print(sum(c["ple_exits"] for c in v), sum(c["skipped_ns"] for c in v), r["instructions"])
PY
)
  echo "on: $exits pause-loop exits, $skipped ns skipped, $insns_on instructions; off: $exits_off, $skipped_off, $insns_off"
  [ "$exits" -gt 0 ] && [ "$skipped" -gt 0 ] || { echo "FAIL: spin skipping on skipped nothing"; exit 1; }
  [ "$exits_off" -eq 0 ] && [ "$skipped_off" -eq 0 ] || { echo "FAIL: spin skipping off skipped"; exit 1; }
  [ "$insns_off" -gt "$insns_on" ] || { echo "FAIL: off ran no more instructions than on"; exit 1; }
  ;;
*)
  echo "usage: $0 lock|determinism|tsc|skips TOPOLAB IMAGES ..." >&2
  exit 2
  ;;
esac
