#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A sweep in pieces (docs/sweeps.md): each experiment, run small, in one piece
# and as one `--case K` per line of `--list-cases` then `--merge`, must give
# the same tables, results.json, results.txt and charts, byte for byte; a
# missing or foreign case file is one line and the bad-input status.
# Usage: experiment_sweep.sh TOPOLAB
set -uo pipefail
topolab=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The quick configuration of experiments.sh: the mechanisms, not the statistics.
small=(--scale 5 --repeats 2)

check_sweep() {  # NAME CHARTS...
  local name=$1 dir=$tmp/$1
  shift
  mkdir -p "$dir"
  timeout 300 "$topolab" experiment "$name" "${small[@]}" --output "$dir/whole" >"$dir/whole.stdout" 2>"$dir/whole.stderr" ||
    { fail "$name: the run in one piece failed"; tail -3 "$dir/whole.stderr"; return; }
  "$topolab" experiment "$name" "${small[@]}" --list-cases >"$dir/list" || { fail "$name: --list-cases"; return; }
  local cases
  cases=$(wc -l <"$dir/list")
  cut -f1 "$dir/list" | cmp -s - <(seq 0 $((cases - 1))) || fail "$name: --list-cases does not number 0..$((cases - 1))"
  # Two at a time, as a scheduler would run them, in no particular order.
  cut -f1 "$dir/list" | sort -r | timeout 300 xargs -P 2 -I {} \
    "$topolab" experiment "$name" "${small[@]}" --case {} --output "$dir/cases" 2>"$dir/cases.stderr" ||
    { fail "$name: a --case run failed"; tail -3 "$dir/cases.stderr"; return; }
  [ "$(ls "$dir/cases" | wc -l)" -eq "$cases" ] || fail "$name: $cases cases, $(ls "$dir/cases" | wc -l) case files"
  "$topolab" experiment "$name" "${small[@]}" --merge "$dir/cases" --output "$dir/merged" >"$dir/merged.stdout" \
    2>"$dir/merged.stderr" || { fail "$name: --merge failed: $(tail -1 "$dir/merged.stderr")"; return; }
  cmp -s "$dir/whole.stdout" "$dir/merged.stdout" || fail "$name: merged tables differ from the run in one piece"
  for f in results.json results.txt "$@"; do
    cmp -s "$dir/whole/$f" "$dir/merged/$f" || fail "$name: merged $f differs from the run in one piece"
  done
  "$topolab" experiment "$name" "${small[@]}" --format json --merge "$dir/cases" >"$dir/merged.json" 2>/dev/null
  cmp -s "$dir/whole/results.json" "$dir/merged.json" || fail "$name: --merge --format json is not results.json"
  echo "ok: $name ($cases cases merged, byte-identical)"
}

check_sweep l3-cache l3-cache-messaging.svg l3-cache-pipe.svg
check_sweep halt-poll halt-poll.svg

# Bad input: one line and status 125, as for any bad option.
source "$(dirname "$0")/expect_error.sh"
cases=$tmp/halt-poll/cases
expect_error "run with --scale 5, this merge has --scale 100" experiment halt-poll --repeats 2 --merge "$cases"
expect_error "a case of experiment halt-poll, not l3-cache" experiment l3-cache "${small[@]}" --merge "$cases"
expect_error "run with --cost ipiv=0, this merge has --cost ipiv=1" \
  experiment halt-poll "${small[@]}" --cost ipiv=1 --merge "$cases"
mv "$cases/case-3.json" "$tmp/case-3.json"
expect_error "1 of 22 case files missing; the first is case 3 (" experiment halt-poll "${small[@]}" --merge "$cases"
cp "$tmp/case-3.json" "$cases/case-3.json"
cp "$tmp/case-3.json" "$cases/case-30.json"
expect_error "case-30.json: case 3 again (it is in $cases/case-3.json too)" \
  experiment halt-poll "${small[@]}" --merge "$cases"
head -c 100 "$tmp/case-3.json" >"$cases/case-30.json"
expect_error "case-30.json: not JSON" experiment halt-poll "${small[@]}" --merge "$cases"
expect_error "--merge $tmp/none: no such directory" experiment halt-poll --merge "$tmp/none"
expect_error "--case 22: experiment halt-poll has 22 cases with these options (0-21" \
  experiment halt-poll "${small[@]}" --case 22
expect_error "--case excludes --merge" experiment halt-poll --case 1 --merge "$cases"

[ "$failures" -eq 0 ] && echo "ok: experiment sweeps" || { echo "$failures failure(s)"; exit 1; }
