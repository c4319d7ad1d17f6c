#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Idle semantics: every mode of the mwait image (testcases/mwait.c) on two
# vCPUs must pass, the JSON report must show what the guest did (an MWAIT
# ended by another vCPU's store, by an interrupt, by an NMI, not by a masked
# interrupt; N PAUSEs), two runs must be byte-identical, and without
# +monitor the guest must say that MONITOR is absent and fail.
# Usage: idle.sh TOPOLAB IMAGE CPU   (CPU with +monitor, e.g. qemu64,+monitor)
set -uo pipefail
topolab=$1 image=$2 cpu=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passed=0 checked=0
pauses=12345

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "PASS: $*"; passed=$((passed + 1)); }

# run TAG APPEND: two runs of the image; TAG.{out,err,json,status}[12].
run() {
  local tag=$1 append=$2 i
  for i in 1 2; do
    timeout 60 "$topolab" run "$image" -smp 2 -cpu "$cpu" -append "$append" \
      --report json --report-file "$tmp/$tag.json$i" >"$tmp/$tag.out$i" 2>"$tmp/$tag.err$i"
    echo $? >"$tmp/$tag.status$i"
  done
}

# check MODE PASSES...: the run of mode MODE exited 0 with each PASS line,
# no FAIL or SKIP, and both runs agree byte for byte; false otherwise (its
# report is then not looked at).
check() {
  local mode=$1 tag=${1%%=*} name bad=""
  shift
  checked=0
  run "$tag" "mode=$mode"
  local status
  status=$(cat "$tmp/$tag.status1")
  [ "$status" -eq 0 ] || bad="exit status $status (want 0)"
  for name in "$@"; do
    grep -qx "PASS: $name" "$tmp/$tag.out1" || bad="${bad:+$bad; }no 'PASS: $name'"
  done
  if grep -q '^FAIL\|^SKIP' "$tmp/$tag.out1"; then
    bad="${bad:+$bad; }$(grep -m1 '^FAIL\|^SKIP' "$tmp/$tag.out1")"
  fi
  if [ -n "$bad" ]; then
    fail "mode=$mode: $bad"
    sed 's/^/    /' "$tmp/$tag.out1" "$tmp/$tag.err1" | tail -12
    return 1
  fi
  ok "mode=$mode: $(grep -m1 '^mwait: [a-z_]*:' "$tmp/$tag.out1" || true)"
  local f
  for f in out err json status; do
    if ! cmp -s "$tmp/$tag.${f}1" "$tmp/$tag.${f}2"; then
      fail "mode=$mode: the $f of two runs differs"
      diff "$tmp/$tag.${f}1" "$tmp/$tag.${f}2" | head -6 | sed 's/^/    /'
      return 1
    fi
  done
  ok "mode=$mode: two runs byte-identical"
  checked=1
}

# said TAG REGEX WHAT: the guest printed a line matching REGEX; only looked
# at after a check that passed. topolab's MWAIT has no spurious wakeups, so
# each wait below takes exactly one MWAIT (the guests would tolerate more).
said() {
  local tag=$1 regex=$2 what=$3
  [ "$checked" -eq 1 ] || return 0
  if grep -qE -- "$regex" "$tmp/$tag.out1"; then
    ok "$tag: $what"
  else
    fail "$tag: $what: no line like /$regex/ in:"
    grep '^mwait: ' "$tmp/$tag.out1" | sed 's/^/    /'
  fi
}

# report TAG WHAT PYTHON-EXPR: EXPR over r (the JSON report, v its vCPUs)
# must hold; only looked at after a check that passed.
report() {
  local tag=$1 what=$2 expr=$3 got
  [ "$checked" -eq 1 ] || return 0
  [ -s "$tmp/$tag.json1" ] || { fail "$tag: no JSON report"; return; }
  if got=$(python3 - "$tmp/$tag.json1" "$expr" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = r["vcpus"]
ok = eval("(" + sys.argv[2] + ")")
print(json.dumps([{k: c.get(k) for k in ("index", "wakes", "pauses", "monitor_arms", "mwait_entries", "mwait_hints")
                   if k in c} for c in v]))
sys.exit(0 if ok else 1)
PY
  ); then
    ok "$tag: report shows $what"
  else
    fail "$tag: report does not show $what ($expr): $got"
  fi
}

# Every MWAIT mode: vCPU 1 armed MONITOR once and entered MWAIT once, with
# hint 0 (C1).
one_mwait='v[1]["monitor_arms"] == 1 and v[1]["mwait_entries"] == 1 and v[1]["mwait_hints"] == {"0x00": 1}'

check store mwait.monitor_present mwait.two_cpus mwait.started store.woken store.saw_flag store.parked \
  store.bsp.started store.bsp.woken store.bsp.parked
said store '^mwait: store: CPU 1 woke after 1 MWAIT, ' "CPU 1: one MWAIT, ended by the store"
said store '^mwait: store: CPU 0 woke after 1 MWAIT, ' "CPU 0: one MWAIT, ended by the store"
# Then the BSP's wait, ended by vCPU 1's store (vCPU 1's two interrupt wakes
# are the library's idle HLT taking each piece of work).
report store "each vCPU's MWAIT ended by the other's store" \
  "$one_mwait"' and v[1]["wakes"]["mwait-store"] == 1 and v[1]["wakes"]["interrupt"] == 2 and
   v[0]["monitor_arms"] == 1 and v[0]["mwait_entries"] == 1 and v[0]["wakes"]["mwait-store"] == 1'

check masked masked.sent masked.woken masked.saw_flag masked.handler_not_run masked.still_pending \
  masked.taken_after_sti
said masked '^mwait: masked: CPU 1 did 0 MWAITs before the store, 1 in all$' \
  "the masked IPI did not end the MWAIT, the store did"
# The only interrupt wake is the library's idle HLT taking the work (0xf0).
report masked "vCPU 1's MWAIT ended by the store, not by the masked IPI" \
  "$one_mwait"' and v[1]["wakes"]["mwait-store"] == 1 and v[1]["wakes"]["interrupt"] == 1 and
   v[1]["received_by_vector"].get("0x40") == 1'

check irq_break irq_break.sent irq_break.woken irq_break.if_still_clear irq_break.handler_not_run \
  irq_break.still_pending irq_break.taken_after_sti
said irq_break '^mwait: irq_break: CPU 1 woke after 1 MWAIT$' "one MWAIT, ended by the IPI"
# vCPU 1 wakes by interrupt twice: from the library's idle HLT for the work
# (vector 0xf0), then from MWAIT for the test IPI (vector 0x40).
report irq_break "vCPU 1 woken from MWAIT by the IPI with IF=0, no store wake" \
  "$one_mwait"' and v[1]["wakes"]["interrupt"] == 2 and v[1]["received_by_vector"].get("0x40") == 1 and
   v[1]["wakes"]["mwait-store"] == 0'

check sti_mwait sti_mwait.sent sti_mwait.woken sti_mwait.handler_once sti_mwait.returns_past_mwait \
  sti_mwait.if_set_in_frame
said sti_mwait '^mwait: sti_mwait: CPU 1 woke after 1 MWAIT$' "one MWAIT, ended by the IPI"
report sti_mwait "vCPU 1 woken from MWAIT by the IPI, no store wake" \
  "$one_mwait"' and v[1]["wakes"]["interrupt"] == 2 and v[1]["received_by_vector"].get("0x40") == 1 and
   v[1]["wakes"]["mwait-store"] == 0'

check nmi nmi.sent nmi.woken nmi.handler_once
said nmi '^mwait: nmi: CPU 1 woke after 1 MWAIT$' "one MWAIT, ended by the NMI"
report nmi "vCPU 1 woken from MWAIT by the NMI, no store wake" \
  "$one_mwait"' and v[1]["wakes"]["nmi"] == 1 and v[1]["wakes"]["mwait-store"] == 0'

check "pause=$pauses" pause.executed
said pause "^mwait: pause: $pauses PAUSE instructions on CPU 0, [0-9]+ TSC cycles\$" "$pauses PAUSEs executed"
report pause "$pauses PAUSEs on vCPU 0, none on the vCPU never started" \
  "v[0][\"pauses\"] == $pauses and v[1][\"pauses\"] == 0"

# Without CPUID.1:ECX[3] the guest must refuse, naming the missing feature.
base=${cpu%%,*}
timeout 60 "$topolab" run "$image" -smp 2 -cpu "$base" -append mode=store --report none \
  >"$tmp/absent.out" 2>"$tmp/absent.err"
status=$?
if [ "$status" -ne 0 ] && grep -q '^FAIL: mwait.monitor_present (MONITOR/MWAIT absent: CPUID.1:ECX\[3\]' "$tmp/absent.out"; then
  ok "-cpu $base (no monitor): exit $status, $(grep -m1 '^FAIL' "$tmp/absent.out")"
else
  fail "-cpu $base (no monitor): exit $status, want non-zero with 'MONITOR/MWAIT absent'"
  sed 's/^/    /' "$tmp/absent.out" "$tmp/absent.err" | tail -6
fi

echo "$passed passed, $failures failed ($(basename "$image") -cpu $cpu)"
[ "$failures" -eq 0 ]
