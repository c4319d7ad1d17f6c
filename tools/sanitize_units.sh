#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The GoogleTest unit-test binaries (not the guest boots) built with ASan and
# UBSan (cmake -DTOPOLAB_SANITIZE=ON) into build-asan/, and run. Any
# sanitizer report, leak included, fails the run.
# Usage: tools/sanitize_units.sh (build type "Sanitize": -O1 -g1, quick to
# compile, with line numbers in reports)
# The whole suite under sanitizers (not in CI, docs/reliability.md):
#   cmake --build build-asan -j2 && (cd build-asan && ctest -j2 --timeout 1200)
set -euo pipefail
cd "$(dirname "$0")/.."
units=(model_tests arch_tests time_tests machine_tests devices_tests firmware_tests report_tests html_report_tests vcpu_tests experiments_tests data_paths_tests workbench_tests cli_tests)
tools/setup.sh
if [ ! -f build-asan/CMakeCache.txt ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS="-O1 -g1" -DTOPOLAB_SANITIZE=ON >/dev/null
fi
cmake --build build-asan -j"$(nproc)" --target "${units[@]}" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${units[@]}"; do
  bin=$(ls -t $(find build-asan -name "$t" -type f -perm -u+x) | head -1)  # the newest: a moved test leaves its old binary
  if "$bin" --gtest_brief=1 >"build-asan/$t.log" 2>&1; then
    echo "sanitize_units: $t: $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "build-asan/$t.log" | head -1), passed, no sanitizer report"
  else
    echo "sanitize_units: $t FAILED (build-asan/$t.log):"
    grep -E "ERROR: |runtime error|FAILED|SUMMARY" "build-asan/$t.log" | head -8 | sed 's/^/    /'
    status=1
  fi
done
exit $status
