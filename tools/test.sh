#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Set up, build, and run every test (unit, integration and differential),
# then the hardening smoke runs (docs/reliability.md): the unit tests of the
# input and hardware layers under ASan+UBSan, each fuzz harness but
# sweep_merge for 4 s, and 30 mutated-image runs.
# docs/reliability.md, "The CI budget", has what each step costs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# The Linux guest for the linux.* tests (Debian packages, into .deps/linux)
# is fetched while build/ compiles: it needs the packages, not the build.
tools/linux_guest.sh >/dev/null &
guest=$!
# Each unit test is built once (cmake/unit_tests.cmake): those of the
# formatting and driver layers (report/, lab/, cli/) in build/, for ctest;
# the others in the sanitized build, and run there (tools/sanitize_units.sh).
# The measuring programs of bench/ are no test: not built here.
tools/build.sh -DTOPOLAB_UNIT_TESTS=DRIVER -DTOPOLAB_BENCHMARKS=OFF
wait "$guest"
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
tools/sanitize_units.sh
tools/fuzz_smoke.sh 4
tools/robustness.sh -n 30 --seed 1 -j "$(nproc)"
