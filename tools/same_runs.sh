#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Determinism at scale: runs one `topolab run` command N times, JOBS at a
# time, and compares every run's stdout (the guest's console), stderr (the
# closing line and the table) and JSON report byte for byte with the first
# run's. Prints one line per run that differs and a summary; exits 1 if any
# differs or a run is killed by a signal, 0 if all N are identical.
# docs/reliability.md has the figures measured with it.
#
# Usage: tools/same_runs.sh [-n N] [-j JOBS] [--topolab BIN] -- RUN-ARGUMENTS...
#   tools/same_runs.sh -n 50 -j 2 -- .deps/linux/vmlinux --initrd .deps/linux/initramfs.cpio \
#     -m 512 --smp 2 --cpu Skylake-Server --append "console=ttyS0 panic=-1"
set -uo pipefail
cd "$(dirname "$0")/.."
n=10 jobs=1 topolab=build/topolab
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --topolab) topolab=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "same_runs.sh: unknown argument $1 (the run's own arguments go after --)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "same_runs.sh: no run arguments after --" >&2; exit 2; }
case $n$jobs in *[!0-9]*) echo "same_runs.sh: -n and -j take whole numbers" >&2; exit 2 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
running=0
for i in $(seq 1 "$n"); do
  ("$topolab" run "$@" --report json --report-file "$work/$i.json" >"$work/$i.out" 2>"$work/$i.err"
   echo $? >"$work/$i.status") &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

differ=0 signalled=0
first_status=$(cat "$work/1.status")
for i in $(seq 1 "$n"); do
  status=$(cat "$work/$i.status")
  if [ "$status" -gt 128 ]; then
    echo "same_runs: run $i was killed by signal $((status - 128))"
    signalled=$((signalled + 1))
    continue
  fi
  [ "$i" -eq 1 ] && continue
  what=""
  [ "$status" = "$first_status" ] || what="exit status $status, not $first_status"
  for f in out err json; do
    cmp -s "$work/1.$f" "$work/$i.$f" || what="${what:+$what, }$f"
  done
  if [ -n "$what" ]; then
    echo "same_runs: run $i differs from run 1: $what"
    differ=$((differ + 1))
  fi
done
echo "same_runs: $n runs in $(($(date +%s) - start)) s, exit status $first_status," \
  "$(wc -c <"$work/1.out") bytes of console, $((n - 1 - differ - signalled)) of $((n - 1)) reruns" \
  "byte-identical to run 1 (stdout, stderr, JSON report)"
[ "$differ" -eq 0 ] && [ "$signalled" -eq 0 ]
