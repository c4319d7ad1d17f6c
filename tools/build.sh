#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what the build needs (once) and builds topolab and the guest
# images into build/. Used by demo.sh and test.sh; arguments go to CMake's
# configure step (test.sh: -DTOPOLAB_UNIT_TESTS=DRIVER
# -DTOPOLAB_BENCHMARKS=OFF), and stay in build/'s cache for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# A new build directory is made for Ninja; one made before keeps its generator.
generator=()
[ -f build/CMakeCache.txt ] || generator=(-G Ninja)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
