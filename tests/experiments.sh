#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `topolab experiment`: both experiments run small (--scale), print their
# tables, write JSON, text and SVG charts, and write the same bytes twice;
# bad names and options are one-line errors with status 125.
# Usage: experiments.sh TOPOLAB IMAGES_DIR
set -uo pipefail
topolab=$1 images=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A run small enough for a test: the mechanisms, not the statistics.
run() {  # NAME OUTDIR
  timeout 600 "$topolab" experiment "$1" --scale 5 --repeats 2 --output "$2" >"$2.stdout" 2>"$2.stderr"
}

check_experiment() {  # NAME CASES CHARTS...
  local name=$1 cases=$2
  shift 2
  if ! run "$name" "$tmp/$name.1"; then
    fail "$name: exit status $?"; sed 's/^/    /' "$tmp/$name.1.stderr" | tail -5; return
  fi
  run "$name" "$tmp/$name.2" || fail "$name: second run failed"
  for f in results.json results.txt "$@"; do
    [ -s "$tmp/$name.1/$f" ] || fail "$name: no $f"
    cmp -s "$tmp/$name.1/$f" "$tmp/$name.2/$f" || fail "$name: $f differs between two runs"
  done
  cmp -s "$tmp/$name.1.stdout" "$tmp/$name.2.stdout" || fail "$name: stdout differs between two runs"
  cmp -s "$tmp/$name.1.stdout" "$tmp/$name.1/results.txt" || fail "$name: stdout is not results.txt"
  for svg in "$@"; do
    head -c 4 "$tmp/$name.1/$svg" | grep -q '<svg' || fail "$name: $svg is no SVG"
  done
  grep -q "^\[ *$((2 * cases))/$((2 * cases))\]" "$tmp/$name.1.stderr" || fail "$name: no progress line for run $((2 * cases))"
  python3 - "$tmp/$name.1/results.json" "$cases" <<'PY' || fail "$name: results.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "topolab.experiment/1", j["schema"]
assert len(j["cases"]) == int(sys.argv[2]), len(j["cases"])
assert len(j["runs"]) == 2 * int(sys.argv[2]), len(j["runs"])
for c in j["cases"]:
    assert c["runs"] == 2 and c["window_ns"] > 0, c
    assert c["guest_first_run"]["workload"] == c["workload"], c
for r in j["runs"]:
    assert r["guest"]["workload"] == r["workload"], r
assert j["runs"][0]["quantum"] != j["runs"][1]["quantum"], "repeats run at other quanta"
PY
  echo "ok: $name ($cases machines, deterministic)"
}

check_experiment l3-cache 12 l3-cache-messaging.svg l3-cache-pipe.svg
check_experiment halt-poll 11 halt-poll.svg

# Machines run side by side in threads; how many must not matter.
timeout 600 "$topolab" experiment halt-poll --scale 5 --repeats 2 --jobs 1 >"$tmp/jobs1.stdout" 2>/dev/null
cmp -s "$tmp/jobs1.stdout" "$tmp/halt-poll.1.stdout" || fail "halt-poll: --jobs 1 prints other results than --jobs 2"

# The mechanism behind the seeds' pipe result: on 8 Intel vCPUs without a
# shared L3 both tasks end up on one CPU and need no IPIs; with one, each
# wakeup of the other task goes to an idle CPU and needs a RES IPI. The AMD
# family 15 control does not change at all.
python3 - "$tmp/l3-cache.1/results.json" <<'PY' || fail "l3-cache: pipe mechanism"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
def case(workload, machine_part, setting):
    return next(c for c in cases if c["workload"] == workload and machine_part in c["machine"] and c["setting"] == setting)
off = case("pipe", "8 vCPUs 1s x 8c Skylake", "l3-cache=off")
on = case("pipe", "8 vCPUs 1s x 8c Skylake", "l3-cache=on")
assert off["res_ipis"] * 10 < on["res_ipis"], (off["res_ipis"], on["res_ipis"])
assert off["hlt_exits"] * 10 < on["hlt_exits"], (off["hlt_exits"], on["hlt_exits"])
for w in ("pipe", "messaging"):
    a, b = case(w, "qemu64", "l3-cache=off"), case(w, "qemu64", "l3-cache=on")
    assert a["guest_first_run"] == b["guest_first_run"] and a["res_ipis"] == b["res_ipis"], w
PY

# Bad input.
source "$(dirname "$0")/expect_error.sh"
expect_error "no such experiment (known: l3-cache, halt-poll)" experiment l4-cache
expect_error "--cost halt_poll_ns=-5: must be a whole number" experiment halt-poll --cost halt_poll_ns=-5
expect_error "--cost warp_ns: unknown parameter" run "$images/cpuid_dump.elf" --cost warp_ns=3
expect_error "--cost hlt_exit_ns=99999999999: must be a whole number" run "$images/cpuid_dump.elf" --cost hlt_exit_ns=99999999999
expect_error "--kernel" experiment l3-cache --kernel 5.x
timeout 60 "$topolab" experiment l3-cache --image "$tmp/none.elf" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 125 ] && grep -qF "cannot read $tmp/none.elf" "$tmp/err" || fail "a missing sched image: $(tail -1 "$tmp/err")"
"$topolab" experiment | grep -q '^  halt-poll' || fail "topolab experiment does not list the experiments"

[ "$failures" -eq 0 ] && echo "ok: experiments" || { echo "$failures failure(s)"; exit 1; }
