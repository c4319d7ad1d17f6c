#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tools/same_runs.sh: four runs of an SMP image are byte-identical and say
# so (status 0); a "topolab" whose console differs from run to run is caught
# (status 1, a line per rerun); bad arguments are one line and status 2.
# Usage: same_runs.sh SAME_RUNS TOPOLAB IMAGES_DIR
set -uo pipefail
same_runs=$1 topolab=$2 images=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

out=$(bash "$same_runs" -n 4 -j 2 --topolab "$topolab" -- "$images/ipi.elf" -smp 4)
[ $? -eq 0 ] && grep -q "3 of 3 reruns byte-identical" <<<"$out" || fail "four ipi.elf runs: $out"

# A stand-in whose console is a new random number each time.
printf '#!/bin/bash\necho $RANDOM$RANDOM\nfor a; do [ "$prev" = --report-file ] && echo {} >"$a"; prev=$a; done\n' \
  >"$tmp/flaky" && chmod +x "$tmp/flaky"
out=$(bash "$same_runs" -n 3 --topolab "$tmp/flaky" -- x)
[ $? -eq 1 ] && [ "$(grep -c 'differs from run 1: out' <<<"$out")" = 2 ] || fail "a flaky run was not caught: $out"

err=$(bash "$same_runs" -n many -- x 2>&1 >/dev/null)
[ $? -eq 2 ] && [ "$(wc -l <<<"$err")" = 1 ] || fail "-n many: $err"

[ "$failures" -eq 0 ] && echo "ok: same_runs.sh" || exit 1
