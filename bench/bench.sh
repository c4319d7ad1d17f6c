#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every benchmark, side by side in one run (never part of the tests): the
# figures in docs/benchmarks.md come from here. Noisy machines: read ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
echo "== compute_loop: raw Unicorn vs topolab vs QEMU 7.2 deterministic mode"
build/bench/bench_compute build/testcases/compute_loop.elf "${1:-20000000}" 2>/dev/null
echo "== Vcpu bookkeeping vs raw Unicorn on synthetic loops"
build/bench/vcpu_bench 2>/dev/null
echo
echo "== topolab cpuid --format raw for 4,096 vCPUs (5 runs, seconds)"
for _ in 1 2 3 4 5; do
  /usr/bin/time -f "%e" build/topolab cpuid -smp 4096,sockets=4,cores=512,threads=2 -cpu Skylake-Server,+x2apic \
    --format raw >/dev/null
done 2>&1 | tr '\n' ' '
echo
