#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The cost model moves virtual time by exactly what it says and counts what
# it models, and nothing the guest computes changes: an IPI ping-pong of N
# round trips (2N wakeups of a halted vCPU) under several --cost settings.
# Usage: cost_model.sh TOPOLAB IMAGES_DIR
set -uo pipefail
topolab=$1 images=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=1000
for spec in none none,halt_wake_ns=10000 none,halt_wake_ns=10000,halt_poll_ns=1000000,poll_wake_ns=100 \
            none,halt_wake_ns=10000,halt_poll_ns=1000,poll_wake_ns=2000 none,icr_exit_ns=1000,ipiv=1 none,ipi_running_ns=500000 \
            default; do
  args=(--cost "$spec")
  [ "$spec" = default ] && args=()
  if ! "$topolab" run "$images/ipi_pingpong.elf" -smp 2 -cpu Skylake-Server -append "iterations=$n" "${args[@]}" \
       --report json --report-file "$tmp/$spec.json" >"$tmp/$spec.out" 2>"$tmp/$spec.err"; then
    echo "FAIL: --cost $spec: $(tail -1 "$tmp/$spec.err")"; exit 1
  fi
done
python3 - "$tmp" "$n" <<'PY'
import json, os, sys
tmp, n = sys.argv[1], int(sys.argv[2])
def load(spec): return json.load(open(os.path.join(tmp, spec + ".json")))
def total(j, key): return sum(v[key] for v in j["vcpus"])
def exits(j, kind): return sum(v["exits"][kind] for v in j["vcpus"])
failures = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok: failures.append(what)

none = load("none")
check(total(none, "exit_ns") == 0 and total(none, "halt_poll_hits") == 0, "--cost none charges nothing")
check(exits(none, "icr") >= 2 * n and exits(none, "hlt") >= 2 * n, "exits are counted even when they cost nothing")

# The first ping may reach CPU 1 before it halts: where the set-up's wait
# (a TSC wait the machine skips, to within a quantum) leaves CPU 0's clock
# against CPU 1's decides it. Every later wakeup is of a halted vCPU.
wake = load("none,halt_wake_ns=10000")
extra = wake["virtual_ns"] - none["virtual_ns"]
check((2 * n - 1) * 10000 <= extra <= 2 * n * 10000 * 1.1,
      f"halt_wake_ns=10000 adds 10 us per wakeup of a halted vCPU: {extra} ns for {2 * n} wakeups")

poll = load("none,halt_wake_ns=10000,halt_poll_ns=1000000,poll_wake_ns=100")
hits = total(poll, "halt_poll_hits")
check(hits >= 2 * n and total(poll, "halt_poll_misses") == 0, f"a 1 ms host poll window catches every wakeup ({hits} hits)")
extra = poll["virtual_ns"] - none["virtual_ns"]
check(2 * n * 100 <= extra <= 2 * n * 100 * 1.5, f"a poll hit costs poll_wake_ns, not halt_wake_ns: {extra} ns")
check(total(poll, "host_poll_ns") > 0, "host polling is host CPU time")

# A 1 us window, and a woken vCPU that takes 2 us to answer even after a
# poll hit: the partner, which halted as it sent, has stopped polling by
# then, so after the first wakeup (which the start decides, as above) every
# one misses. With a hit costing nothing, a first hit would instead make
# every later answer come within the window: both ways are stable.
miss = load("none,halt_wake_ns=10000,halt_poll_ns=1000,poll_wake_ns=2000")
# Polled: 1 us per miss, under 1 us for the hit, and a full window for each
# of the few halts no wakeup ended within the run (the start, the end).
misses, polled = total(miss, "halt_poll_misses"), total(miss, "host_poll_ns")
hits = total(miss, "halt_poll_hits")
check(misses >= 2 * n - 1 and misses * 1000 <= polled <= (misses + hits + 3) * 1000,
      f"a 1 us window misses every wakeup and polls 1 us each time ({misses} misses, {polled} ns polled)")

posted = load("none,ipi_running_ns=500000")
check(posted["virtual_ns"] == none["virtual_ns"],
      "an IPI to a halted vCPU takes the host's wake path, not the posted-interrupt latency, "
      f"whichever vCPU the host ran first ({posted['virtual_ns']} ns against {none['virtual_ns']})")

ipiv = load("none,icr_exit_ns=1000,ipiv=1")
check(exits(ipiv, "icr") == 0 and total(ipiv, "exit_ns") == 0, "with ipiv=1 ICR writes do not exit")

default = load("default")
check(default["virtual_ns"] > none["virtual_ns"] and default["cost"]["halt_poll_ns"] == "200000",
      "the default model is recorded in the report and costs time")
def output(spec):  # the guest's lines, less the one with its TSC measurement
    return [l for l in open(os.path.join(tmp, spec + ".out")).read().splitlines() if "TSC cycles" not in l]
check(all(output(s) == output("none") for s in ("none,halt_wake_ns=10000", "default")),
      "the guest prints the same (apart from its TSC measurement) whatever the costs")
sys.exit(1 if failures else 0)
PY
