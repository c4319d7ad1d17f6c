#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `topolab check` on one configuration of the test matrix: it must report
# nothing but the findings tests/check/known_topolab_findings.txt
# lists for it, and each listed finding must still be there.
# Usage: check_matrix.sh TOPOLAB SMP CPU
set -uo pipefail
topolab=$1 smp=$2 cpu=$3
known=$(dirname "$0")/check/known_topolab_findings.txt
json=$("$topolab" check -smp "$smp" -cpu "$cpu" --json)
status=$?
if [ "$status" -gt 1 ]; then echo "FAIL: topolab check exited $status"; exit 1; fi
actual=$(python3 -c 'import json,sys; print("\n".join(sorted({f["id"] for f in json.load(sys.stdin)["findings"]})))' <<<"$json")
expected=$(awk -F' *\\| *' -v smp="$smp" -v cpu="$cpu" '!/^#/ && NF >= 3 && $1 == smp && $2 == cpu {print $3}' "$known" | sort -u)
if [ "$status" -eq 0 ] && [ -n "$actual" ]; then echo "FAIL: exit 0 with findings"; exit 1; fi
if [ "$actual" != "$expected" ]; then
  echo "FAIL: -smp $smp -cpu $cpu: findings [$(echo $actual)], known [$(echo $expected)]"
  "$topolab" check -smp "$smp" -cpu "$cpu"
  exit 1
fi
echo "ok: -smp $smp -cpu $cpu: ${actual:-no findings}"
