#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# --html in a real browser: the cpuid, run and experiment pages render in
# headless Chromium (Debian's `chromium`, installed by tools/setup.sh), their
# DOM has the elements docs/html.md names, the script ran to its end, and
# nothing is fetched from the network. Also: the same inputs give the same
# bytes, --html leaves the other outputs unchanged, and a path that cannot
# be written is one line and status 125. The pages and screenshots stay in
# ARTEFACTS for a person to look at.
# Usage: html_page.sh TOPOLAB IMAGES_DIR ARTEFACTS_DIR
set -uo pipefail
topolab=$1 images=$2 out=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "FAIL: chromium is not installed; run tools/setup.sh (it installs Debian's chromium for this test)"
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)  # file:// wants an absolute path
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

smp=16,sockets=1,cores=8,threads=2
"$topolab" cpuid -smp $smp -cpu Skylake-Server --html "$out/cpuid.html" >"$tmp/table1" || fail "cpuid --html: status $?"
"$topolab" cpuid -smp $smp -cpu Skylake-Server --html "$tmp/cpuid2.html" >"$tmp/table2" || fail "cpuid --html (again)"
"$topolab" cpuid -smp $smp -cpu Skylake-Server >"$tmp/table0"
cmp -s "$tmp/table0" "$tmp/table1" || fail "cpuid: --html changed the table on stdout"
cmp -s "$out/cpuid.html" "$tmp/cpuid2.html" || fail "cpuid: two pages of the same machine differ"
"$topolab" run "$images/ipi.elf" -smp 4 -cpu Skylake-Server --report json --report-file "$tmp/run1.json" \
  --html "$out/run.html" >/dev/null 2>&1 || fail "run --html: status $?"
"$topolab" run "$images/ipi.elf" -smp 4 -cpu Skylake-Server --report json --report-file "$tmp/run0.json" \
  >/dev/null 2>&1
cmp -s "$tmp/run0.json" "$tmp/run1.json" || fail "run: --html changed the JSON report"
# The same command line (--html aside): the same page.
"$topolab" run "$images/ipi.elf" -smp 4 -cpu Skylake-Server --report json --report-file "$tmp/run1.json" \
  --html "$tmp/run2.html" >/dev/null 2>&1
cmp -s "$out/run.html" "$tmp/run2.html" || fail "run: two pages of the same run differ"
timeout 120 "$topolab" experiment halt-poll --scale 1 --repeats 1 --html "$out/experiment.html" >/dev/null 2>&1 ||
  fail "experiment --html: status $?"

# A run that fails still gets its page, and keeps its exit status.
"$topolab" run "$images/ipi.elf" -smp 4 --time-limit 0.0001 --html "$tmp/short.html" >/dev/null 2>&1
status=$?
[ $status -eq 124 ] || fail "run out of time with --html: status $status, expected 124"
grep -q 'id="run-outcome">budget-exhausted' "$tmp/short.html" || fail "run out of time: its page does not say so"

# Bad paths: one line, status 125, no crash, and no empty page left behind.
"$topolab" cpuid --html /nonexistent/dir/page.html >"$tmp/bad.out" 2>"$tmp/bad.err"
status=$?
[ $status -eq 125 ] || fail "cpuid --html to a missing directory: status $status, expected 125"
[ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && grep -q -- "--html /nonexistent/dir/page.html: cannot write it" "$tmp/bad.err" ||
  fail "cpuid --html to a missing directory: expected one line naming the path, got: $(cat "$tmp/bad.err")"
"$topolab" run /nonexistent.elf --html "$tmp/never.html" >/dev/null 2>&1
[ $? -eq 125 ] || fail "run of a missing image with --html: expected status 125"
[ -e "$tmp/never.html" ] && fail "run of a missing image left an empty page behind"

# The browser: DOM after the script ran, and a screenshot.
render() {  # PAGE -> PAGE.dom, PAGE.png
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
    --dump-dom "file://$1" >"$1.dom" 2>"$tmp/browser.err" || fail "$(basename "$1"): chromium --dump-dom failed"
  timeout 90 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" --hide-scrollbars \
    --window-size=1280,2400 --screenshot="${1%.html}.png" "file://$1" >/dev/null 2>>"$tmp/browser.err" ||
    fail "$(basename "$1"): chromium --screenshot failed"
  [ -s "${1%.html}.png" ] || fail "$(basename "$1"): no screenshot"
}
expect_ids() {  # PAGE ID...
  local page=$1
  shift
  grep -q 'data-script="ready"' "$page.dom" || fail "$(basename "$page"): the page's script did not run to its end"
  for id in "$@"; do
    grep -q "id=\"$id\"" "$page.dom" || fail "$(basename "$page"): no element with id $id in the DOM"
  done
  # Nothing from the network (or the disk): no http(s) source or link.
  if grep -Eqi '(src|href)=["'"'"']?(https?:|//|file:)' "$page"; then
    fail "$(basename "$page"): refers to something outside the page"
  fi
}
for page in cpuid run experiment; do render "$out/$page.html"; done
common=(topology summary apic-layout tree caches cache-map cache-why leaves leaves-table field-panel)
expect_ids "$out/cpuid.html" "${common[@]}" leaf-cpu
expect_ids "$out/run.html" "${common[@]}" run run-outcome run-report run-timeline timeline timeline-table run-wakes \
  wakes run-heatmap heatmap
expect_ids "$out/experiment.html" experiment-charts chart-halt-poll experiment-tables experiment-table-text \
  experiment-machines machine-0 m0-cache-map m0-cache-why m0-leaves-table

# What the page is for: the answer to "why do CPUs 0 and 1 share an L2?".
grep -q 'CPUID leaf 0x4, subleaf 2: <code>EAX\[25:14\] = 1</code>' "$out/cpuid.html.dom" ||
  fail "cpuid page: the L2's sharing field is not explained"
grep -q 'differ only in bit 0, below bit 1: both are in L2 #0' "$out/cpuid.html.dom" ||
  fail "cpuid page: CPUs 0 and 1 sharing the L2 is not explained"
[ "$(grep -o '<span class="cpu" data-cpu=' "$out/cpuid.html.dom" | wc -l)" -eq 16 ] ||
  fail "cpuid page: the tree does not show 16 CPUs"
# The script at work: page.html#cpu=3 shows CPU 3's leaves and outlines what
# it shares (its core, L1d, L1i and L2 with CPU 2; the package, L3 and LLC).
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
  --dump-dom "file://$out/cpuid.html#cpu=3" >"$tmp/cpu3.dom" 2>>"$tmp/browser.err"
grep -q '<tr data-cpu="3">' "$tmp/cpu3.dom" && grep -q '<tr data-cpu="0" hidden' "$tmp/cpu3.dom" ||
  fail "cpuid page: #cpu=3 did not switch the leaves to CPU 3"
[ "$(grep -o 'class="cache-group hl" data-cpus="2 3"' "$tmp/cpu3.dom" | wc -l)" -eq 4 ] ||
  fail "cpuid page: #cpu=3 did not outline CPU 3's core, L1d, L1i and L2"
[ "$(grep -o '<rect class="span act-' "$out/run.html.dom" | wc -l)" -ge 4 ] ||
  fail "run page: the timeline has fewer than one box per vCPU"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s); the pages are in $out"
  exit 1
fi
echo "ok: cpuid, run and experiment pages render in $("$browser" --version 2>/dev/null | head -1); screenshots in $out"
