#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The reference peer: an image must boot under qemu-system-x86_64 -accel tcg
# with the same -smp/-cpu/-append and reach its SUMMARY line. Whether its
# checks pass there is QEMU 7.2's business (docs/deviations.md says where
# QEMU 7.2 breaks the SDM); that the image runs there at all is ours.
# Usage: qemu_boots.sh IMAGE SMP CPU APPEND [pass]   (QEMU_BOOTS_MEM: -m, 128 by default)
# With "pass", the guest must also exit 0 there (for images whose checks
# QEMU 7.2 is known to get right, or SKIPs where it is known not to).
set -euo pipefail
image=$1 smp=$2 cpu=$3 append=$4 must=${5:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# QEMU runs an SMP guest's vCPUs as host threads with the host's timing, so
# a check that needs one vCPU to get somewhere before another's delay ends
# (mwait's "parked" ones) can lose the race on a loaded host. With "pass",
# such a guest that fails is run once more, and the log says so; a
# deterministic failure fails both times.
attempts=1
[ "$must" = pass ] && [ "${smp%%,*}" != 1 ] && attempts=2
for attempt in $(seq "$attempts"); do
  status=0
  # -nic none: no network card, so no option ROM (package ipxe-qemu) is needed.
  timeout 120 qemu-system-x86_64 -accel tcg -kernel "$image" -display none -no-reboot -nic none -m "${QEMU_BOOTS_MEM:-128}" \
    -serial "file:$out" -device isa-debug-exit,iobase=0xf4,iosize=4 \
    -smp "$smp" -cpu "$cpu" -append "$append" 2>/dev/null || status=$?
  summary=$(grep -a '^SUMMARY:' "$out" || true)
  echo "qemu exit $status: ${summary:-no SUMMARY line}"
  grep -a '^FAIL:' "$out" || true
  [ "$status" -eq 3 ] && [ "$attempt" -lt "$attempts" ] && { echo "qemu: the guest failed; once more (host timing)"; continue; }
  break
done
# isa-debug-exit: guest 0 -> 1, guest 1 -> 3; anything else means it never got there.
if [ "$must" = pass ]; then
  [ -n "$summary" ] && [ "$status" -eq 1 ]
else
  [ -n "$summary" ] && { [ "$status" -eq 1 ] || [ "$status" -eq 3 ]; }
fi
