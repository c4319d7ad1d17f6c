#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The SRAT, SLIT and HMAT of one -numa configuration under topolab and under
# QEMU 7.2 (testcases/numa_tables.c prints every entry as a "numa:" line and
# checks the tables against each other): both runs must pass, and their
# "numa:" lines must be the same.
# Usage: numa_tables.sh TOPOLAB IMAGE APPEND QEMU-OPTION...   (-smp, -m, -machine, -object, -numa)
set -euo pipefail
topolab=$1 image=$2 append=$3
shift 3
ours=$(mktemp) theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
# The same options for topolab's run command: -smp, -machine and
# -numa/-object take two dashes there (-m keeps QEMU's one).
args=()
while [ $# -gt 0 ]; do
  case $1 in
    -smp|-numa|-object|-machine) args+=("-$1" "$2") ;;
    *) args+=("$1" "$2") ;;
  esac
  qemu_args+=("$1" "$2")
  shift 2
done
"$topolab" run "$image" "${args[@]}" --append "$append" --report none >"$ours" 2>&1 ||
  { cat "$ours"; echo "numa_tables: topolab's run failed"; exit 1; }
status=0
timeout 120 qemu-system-x86_64 -accel tcg -kernel "$image" -display none -no-reboot -nic none \
  -serial "file:$theirs" -device isa-debug-exit,iobase=0xf4,iosize=4 "${qemu_args[@]}" -append "$append" \
  2>/dev/null || status=$?
# isa-debug-exit: guest 0 -> 1.
[ "$status" -eq 1 ] || { cat "$theirs"; echo "numa_tables: QEMU 7.2 exited $status"; exit 1; }
if ! diff <(grep -a '^numa:' "$theirs") <(grep -a '^numa:' "$ours"); then
  echo "numa_tables: the tables differ (< QEMU 7.2, > topolab)"
  exit 1
fi
echo "numa_tables: $(grep -ac '^numa:' "$ours") lines the same under QEMU 7.2 and topolab; $(grep -a '^SUMMARY' "$ours")"
