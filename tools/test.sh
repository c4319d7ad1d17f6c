#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Set up, build, and run every test (unit, integration and differential),
# then the hardening smoke runs (docs/reliability.md): the unit tests under
# ASan+UBSan, each fuzz harness for 6 s, and 30 mutated-image runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# The unit tests are built once, in the sanitized build, and run there
# (tools/sanitize_units.sh); build/ has the rest, for ctest.
tools/build.sh -DTOPOLAB_UNIT_TESTS=OFF
# The Linux guest (Debian packages, into .deps/linux) for the linux.* tests.
tools/linux_guest.sh >/dev/null
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
tools/sanitize_units.sh
tools/fuzz_smoke.sh 6
tools/robustness.sh -n 30 --seed 1 -j "$(nproc)"
