#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The run options a user reaches for first: --trace, -serial file:, the
# QEMU exit-status mapping and the -m size the guest is told.
set -euo pipefail
topolab=$1 images=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$topolab" run "$images/topology_check64.elf" --trace >"$tmp/out" 2>"$tmp/trace"
grep -qE '^cpu0 [0-9a-f]{16}: (0f 30)  wrmsr$' "$tmp/trace" || fail "--trace shows no wrmsr (the long-mode switch)"
executed=$(grep -c '^cpu0 ' "$tmp/trace")
counted=$(sed -n 's/.*after \([0-9]*\) instructions.*/\1/p' "$tmp/trace")
[ "$executed" -ge "$counted" ] || fail "--trace printed $executed instructions, fewer than the $counted executed"
"$topolab" run "$images/topology_check64.elf" >/dev/null 2>"$tmp/quiet"
! grep -q '^cpu0 ' "$tmp/quiet" || fail "instructions traced without --trace"

"$topolab" run "$images/cpuid_dump.elf" -serial "file:$tmp/serial.txt" >"$tmp/stdout" 2>/dev/null
[ ! -s "$tmp/stdout" ] || fail "-serial file: still wrote to stdout"
grep -q '^CPU 0:$' "$tmp/serial.txt" || fail "-serial file: did not receive the guest's output"

status=0
"$topolab" run "$images/cpuid_dump.elf" --exit-status qemu >/dev/null 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "--exit-status qemu gave $status for guest 0, QEMU gives 1"

echo "ok: --trace ($executed lines for $counted instructions), -serial file:, --exit-status qemu"

# The JSON report parses and carries its schema, the config and every vCPU.
"$topolab" run "$images/cpuid_dump.elf" -smp 4 -cpu Skylake-Server --report json --report-file "$tmp/r.json" >/dev/null 2>&1
python3 - "$tmp/r.json" <<'PY' || fail "the JSON report is not what docs/report.md says"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "topolab.run/1", r["schema"]
assert r["outcome"] == "guest-exit" and r["guest_exit_value"] == 0
assert r["config"]["smp"] == "4,sockets=1,dies=1,cores=4,threads=1"
assert [v["apic_id"] for v in r["vcpus"]] == [0, 1, 2, 3]
assert r["instructions"] == sum(v["instructions"] for v in r["vcpus"]) > 0
for v in r["vcpus"]:
    assert set(v["ipis_sent"]) == {"fixed", "lowest-priority", "smi", "nmi", "init", "startup", "extint"}
    assert set(v["wakes"]) == {"interrupt", "timer", "nmi", "init", "sipi", "mwait-store", "pv-kick"}
    assert v["hypercalls"] == {} and v["kvm_msr_writes"] == {}
    assert list(v["kvm"]) == ["exits", "halt_exits", "halt_attempted_poll", "halt_successful_poll",
                              "halt_poll_invalid", "halt_wakeup", "halt_poll_success_ns", "halt_poll_fail_ns",
                              "halt_wait_ns", "hypercalls"]
    assert v["kvm"]["exits"] == sum(v["exits"].values()) and v["kvm"]["halt_exits"] == v["exits"]["hlt"]
PY
"$topolab" run "$images/cpuid_dump.elf" --info-lapic >/dev/null 2>"$tmp/lapic"
grep -q 'SPURIOUS_VECTOR\|SVR' "$tmp/lapic" || fail "--info-lapic printed no APIC registers"
echo "ok: --report json matches its schema, --info-lapic dumps the APIC"
