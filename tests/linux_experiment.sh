#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `topolab experiment halt-poll --guest linux` small (--scale 10, one run
# per row), twice side by side: the two tables must be the same bytes, and
# each row must show what it configures (docs/results.md, "halt-poll on
# Linux"): the haltpoll driver loaded under menu with the host's polling
# switched off, the host's polling catching wakeups, idle=poll without HLT.
# Then one case of `l3-cache --guest linux --pv all`, twice: the same bytes,
# and no fewer IPIs than the exits that sent them.
#
#   linux_experiment.sh TOPOLAB OUT
#
# Skipped (77) without the Linux guest (tools/linux_guest.sh).
set -euo pipefail
topolab=$1 out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/.deps/linux
[ -f "$dir/.complete" ] || { echo "SKIP: no $dir/.complete (tools/linux_guest.sh fetches the guest)"; exit 77; }
flock "$dir/.lock" true
"$top/tools/linux_guest.sh" >/dev/null
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
run=("$topolab" experiment halt-poll --guest linux --scale 10 --repeats 1 --jobs 1)
"${run[@]}" --output "$out/a" >"$out/a.txt" 2>"$out/a.err" &
first=$!
"${run[@]}" --output "$out/b" >"$out/b.txt" 2>"$out/b.err" || fail "the second run: $(tail -3 "$out/b.err")"
wait $first || fail "the first run: $(tail -3 "$out/a.err")"
cmp "$out/a.txt" "$out/b.txt" || fail "two runs gave different tables"
cmp "$out/a/results.json" "$out/b/results.json" || fail "two runs gave different JSON"
python3 - "$out/a/results.json" <<'PY'
import json, sys
cases = {c["setting"]: c for c in json.load(open(sys.argv[1]))["cases"]}
def check(ok, what):
    if not ok:
        sys.exit(f"FAIL: {what}")
for name, c in cases.items():
    check(int(c["guest_first_run"].get("ns_per_op", "0")) > 0, f"{name}: no ns/ctxsw")
guest = cases["guest haltpoll driver"]["guest_first_run"]
check(guest.get("driver") == "haltpoll" and guest.get("governor") == "menu", f"haltpoll driver row: {guest}")
check(cases["guest haltpoll driver"]["halt_poll_hits"] == 0, "the guest's driver did not switch the host's polling off")
check(cases["no polling"]["guest_first_run"].get("driver") == "none", "no polling: a cpuidle driver loaded")
check(cases["host halt_poll_ns 10000"]["halt_poll_hits"] > 0, "host polling caught no wakeup")
check(cases["idle=poll"]["hlt_exits"] == 0, "idle=poll halted")
print("ok: halt-poll --guest linux: two runs, the same bytes; " +
      ", ".join(f"{n} {c['guest_first_run']['ns_per_op']} ns" for n, c in cases.items()))
PY

# The l3-cache experiment's --pv axis: one small case with every KVM
# feature (PV IPIs by hypercall), twice side by side, the same bytes.
pv=("$topolab" experiment l3-cache --guest linux --pv all --scale 5 --repeats 1 --case 0)
"${pv[@]}" --output "$out/pv-a" >/dev/null 2>"$out/pv-a.err" &
first=$!
"${pv[@]}" --output "$out/pv-b" >/dev/null 2>"$out/pv-b.err" || fail "--pv all: $(tail -3 "$out/pv-b.err")"
wait $first || fail "--pv all: $(tail -3 "$out/pv-a.err")"
cmp "$out/pv-a/case-0.json" "$out/pv-b/case-0.json" || fail "two runs of a --pv case differ"
python3 - "$out/pv-a/case-0.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["measurement"]
if not (m["send_exits"] > 0 and m["ipis_received"] >= m["send_exits"]):
    sys.exit(f"FAIL: {m['ipis_received']} IPIs from {m['send_exits']} sending exits: one exit sends one IPI or more")
print(f"ok: l3-cache --pv all: two runs, the same bytes; {m['ipis_received']} IPIs from {m['send_exits']} sending exits")
PY
