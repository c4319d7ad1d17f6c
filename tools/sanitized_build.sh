#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The one sanitized build: clang with ASan, UBSan and libFuzzer's coverage
# (cmake -DTOPOLAB_FUZZ=ON), asserts on, -O0 -g1: line numbers in reports,
# and about twice as quick to compile as -O1 (12.8 s against 7.1 s for
# emu/vcpu_run.cc, 17.1 s against 6.3 s for devices/local_apic_test.cc),
# which is most of what CI spends here. A harness runs slower at -O0: a long
# fuzzing run wants its own -O1 build (docs/reliability.md). The unit tests under sanitizers
# (tools/sanitize_units.sh) and the fuzz harnesses (tools/fuzz_smoke.sh)
# share it, so that CI compiles the sources twice (this and the Release
# build), not three times: a unit-test binary carries the coverage
# counters unused, which the sanitizer runtime's default hooks absorb.
# Configures build-sanitize/ once, then builds the targets named. The unit
# tests are out of its ctest (-DTOPOLAB_UNIT_TESTS=OFF): tools/sanitize_units.sh
# runs their binaries itself, so gtest_discover_tests would only run each one
# once more after its link.
# Usage: tools/sanitized_build.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-sanitize
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_FLAGS="-O0 -g1" \
    -DCMAKE_CXX_FLAGS="-O0 -g1" -DTOPOLAB_FUZZ=ON -DTOPOLAB_UNIT_TESTS=OFF >/dev/null
fi
cmake --build "$dir" -j"$(nproc)" --target "$@" >/dev/null
