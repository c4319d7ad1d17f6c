#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The GoogleTest unit-test binaries (not the guest boots) built with ASan and
# UBSan in the sanitized build the fuzz harnesses share
# (tools/sanitized_build.sh, build-sanitize/), and run. Any sanitizer
# report, leak included, fails the run. By default those of the layers that
# take untrusted input or model the hardware (the `sanitized_unit_tests`
# target, what CI runs); --all adds the formatting and driver layers'
# (report/, lab/, cli/), which CI runs in the Release build's ctest
# (cmake/unit_tests.cmake).
# Usage: tools/sanitize_units.sh [--all]
# The whole suite under sanitizers (not in CI, docs/reliability.md):
#   cmake --build build-sanitize -j2 && (cd build-sanitize && ctest -j2 --timeout 1200) && tools/sanitize_units.sh --all
set -euo pipefail
cd "$(dirname "$0")/.."
list=sanitized_unit_tests
case "${1:-}" in
  "") ;;
  --all) list=unit_tests ;;
  *) echo "usage: tools/sanitize_units.sh [--all]" >&2; exit 2 ;;
esac
tools/setup.sh
tools/sanitized_build.sh "$list"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# build-sanitize/$list.txt: the GoogleTest binaries, a name and a path a line
# (cmake/unit_tests.cmake). They run nproc at a time, each into its
# log; the verdicts are printed in the list's order.
run_one() {
  if "$2" --gtest_brief=1 </dev/null >"build-sanitize/$1.log" 2>&1; then echo 0; else echo 1; fi >"build-sanitize/$1.status"
}
export -f run_one
rm -f build-sanitize/*.status
xargs -P "$(nproc)" -n 2 bash -c 'run_one "$@"' _ <"build-sanitize/$list.txt"
status=0
while read -r t bin; do
  if [ "$(cat "build-sanitize/$t.status" 2>/dev/null)" = 0 ]; then
    echo "sanitize_units: $t: $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "build-sanitize/$t.log" | head -1), passed, no sanitizer report"
  else
    echo "sanitize_units: $t FAILED (build-sanitize/$t.log):"
    grep -E "ERROR: |runtime error|FAILED|SUMMARY" "build-sanitize/$t.log" | head -8 | sed 's/^/    /'
    status=1
  fi
done <"build-sanitize/$list.txt"
exit $status
