#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `topolab check` on a machine with NUMA nodes (QEMU's -numa and -object):
# it must report exactly the findings given, none for a good configuration,
# with exit 1 (0 without) and the same ids in --json and in the text; with
# --qemu, QEMU 7.2 must accept the same command line instead, so that every
# configuration tested is one a user can run.
# Usage: check_numa.sh TOPOLAB "IDS" OPTIONS...   (QEMU spellings: -smp, -numa, ...)
#        check_numa.sh --qemu OPTIONS...
set -uo pipefail
if [ "$1" = --qemu ]; then
  shift
  # An accepted configuration reaches the monitor and quits with 0; QEMU
  # refuses every bad one with 1 before that (a timeout is a failure too).
  printf 'quit\n' | timeout 20 qemu-system-x86_64 -accel tcg -display none -nodefaults -S -monitor stdio "$@" >/dev/null
  status=$?
  [ "$status" -eq 0 ] || { echo "FAIL: QEMU exited $status on: $*"; exit 1; }
  echo "ok: QEMU accepts $*"
  exit 0
fi
topolab=$1 want=$2
shift 2
# topolab spells -numa and -object with two dashes.
args=()
for a in "$@"; do
  case $a in -numa | -object) args+=("-$a") ;; *) args+=("$a") ;; esac
done
json=$("$topolab" check "${args[@]}" --json)
status=$?
got=$(python3 -c 'import json,sys; print(" ".join(sorted({f["id"] for f in json.load(sys.stdin)["findings"]})))' <<<"$json")
want=$(tr ' ' '\n' <<<"$want" | sed '/^$/d' | sort | tr '\n' ' ' | sed 's/ $//')
in_text=$("$topolab" check "${args[@]}" | grep -o '^finding [0-9]* \[[a-z0-9-]*\]' | sed 's/.*\[\(.*\)\]/\1/' | sort -u | tr '\n' ' ' | sed 's/ $//')
want_status=$([ -n "$want" ] && echo 1 || echo 0)
if [ "$got" != "$want" ] || [ "$in_text" != "$want" ] || [ "$status" -ne "$want_status" ]; then
  echo "FAIL: check $*: findings [$got] (text [$in_text]), exit $status; expected [$want], exit $want_status"
  "$topolab" check "${args[@]}"
  exit 1
fi
echo "ok: check $*: ${got:-no findings}"
