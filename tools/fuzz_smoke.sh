#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer harnesses (fuzz/) in the sanitized build
# (tools/sanitized_build.sh: clang, ASan, UBSan, build-sanitize/), seeds
# each corpus, and runs every harness for SECONDS (default 30) from it,
# nproc harnesses at a time. A finding (a broken invariant, a sanitizer
# report, a crash, a slow input or a leak) fails the script and leaves the
# input in build-sanitize/findings/HARNESS/. The corpora in
# build-sanitize/corpus/ grow from run to run. docs/reliability.md tells how
# to run them for long.
# With no HARNESS named, every harness but sweep_merge: the case files of a
# sweep are its input, but its harness links the experiments, the reports
# and the machine (lab/, report/, emu/), which the sanitized build otherwise
# never compiles (a third of it, docs/reliability.md "The CI budget"). Name
# it to run it, as the long runs do.
# Usage: tools/fuzz_smoke.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: tools/fuzz_smoke.sh [SECONDS] [HARNESS...] (SECONDS: $seconds?)" >&2; exit 2; }
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] ||
  harnesses=(topology local_apic multiboot cost qemu_command linux_boot pvh_boot io_apic pci_config cmos_rtc
             pit8254 pic fw_cfg msr_file acpi numa gdb_packet snapshot_file kvm_pv guest_protocol)

tools/setup.sh
tools/sanitized_build.sh "${harnesses[@]/%/_fuzzer}"

# Seeds: the committed ones, plus what the goldens and the test lists know.
seeds=build-sanitize/seeds
for h in "${harnesses[@]}"; do
  rm -rf "${seeds:?}/$h"
  mkdir -p "$seeds/$h" "build-sanitize/corpus/$h" "build-sanitize/findings/$h"
  if [ -d "fuzz/seeds/$h" ]; then cp fuzz/seeds/"$h"/* "$seeds/$h/"; fi
done
if [ -d "$seeds/topology" ]; then
  # golden.sh's configurations (name|smp|cpu) and the CMake topology list
  # (name|smp|guest arguments|counts), each -smp with every CPU model.
  i=0
  grep -ho '"[A-Za-z0-9-]*|[0-9][^|"]*|[^"]*"' tests/golden.sh tests/CMakeLists.txt | tr -d '"' |
    while IFS='|' read -r _ smp third _; do
      models=(Skylake-Server EPYC qemu64 Skylake-Server,+x2apic)
      case $third in Skylake*|EPYC*|qemu64*) models+=("$third") ;; esac
      for model in "${models[@]}"; do
        printf '%s\n%s' "$smp" "$model" >"$seeds/topology/list$i"
        i=$((i + 1))
      done
    done
fi
if [ -d "$seeds/multiboot" ]; then
  # The testcase images, from the normal build (tools/build.sh).
  for image in build/testcases/*.elf; do [ -f "$image" ] && cp "$image" "$seeds/multiboot/"; done
  [ -n "$(ls "$seeds/multiboot")" ] || { echo "fuzz_smoke: no build/testcases/*.elf: run tools/build.sh" >&2; exit 2; }
fi
if [ -d "$seeds/cost" ]; then
  # The defaults as --cost spells them, and every key alone.
  if [ -x build/topolab ]; then
    spec=$(build/topolab run build/testcases/cpuid_dump.elf --report table 2>&1 >/dev/null | sed -n 's/^cost model: //p')
    printf '%s' "$spec" >"$seeds/cost/defaults"
    tr ',' '\n' <<<"$spec" | while read -r kv; do printf '%s' "$kv" >"$seeds/cost/key-${kv%%=*}"; done
  fi
fi

# The harnesses run side by side, nproc at a time.
fuzz_one() {
  local h=$1
  "build-sanitize/fuzz/${h}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=131072 \
    -print_final_stats=1 -artifact_prefix="build-sanitize/findings/$h/" \
    "build-sanitize/corpus/$h" "$seeds/$h" >"build-sanitize/findings/$h/last.log" 2>&1
  echo $? >"build-sanitize/findings/$h/status"
}
# Each job is waited for by its PID: `wait -n` followed by a bare `wait`
# once left a harness unfinished when its status was read.
pids=()
for h in "${harnesses[@]}"; do
  fuzz_one "$h" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$(nproc)" ]; then
    wait "${pids[0]}" || true
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

status=0
for h in "${harnesses[@]}"; do
  log=build-sanitize/findings/$h/last.log
  harness_status=$(cat "build-sanitize/findings/$h/status" 2>/dev/null || echo "no status")
  if [ "$harness_status" != 0 ]; then
    echo "fuzz_smoke: $h: FINDING (see $log and build-sanitize/findings/$h/):"
    grep -E "invariant failed|ERROR: |runtime error|SUMMARY" "$log" | head -5 | sed 's/^/    /'
    status=1
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "fuzz_smoke: $h: ${seconds} s, $runs executions, cov $cov, ft $ft, corpus $(ls "build-sanitize/corpus/$h" | wc -l) files, no findings"
done
exit $status
