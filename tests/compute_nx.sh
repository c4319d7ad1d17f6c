#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# compute_loop64 with its data pages execute-disable (nx=on) does the same
# work as with nx=off and as the 32-bit compute_loop: all three must exit 0
# and print the same checksum line, under topolab or under QEMU 7.2.
# Usage: compute_nx.sh topolab TOPOLAB IMAGES | compute_nx.sh qemu IMAGES
set -euo pipefail
peer=$1
if [ "$peer" = topolab ]; then topolab=$2 images=$3; else images=$2; fi
iterations=1000000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs IMAGE with APPEND; the guest's serial output goes to OUT. Fails unless
# the guest exited 0.
boot() {
  local image=$1 append=$2 out=$3 status=0
  if [ "$peer" = topolab ]; then
    "$topolab" run "$images/$image" -append "$append" --report none >"$out" 2>/dev/null || status=$?
    [ "$status" -eq 0 ] || { echo "FAIL: $image $append: topolab exit $status"; cat "$out"; return 1; }
  else
    # isa-debug-exit: guest 0 -> 1.
    timeout 120 qemu-system-x86_64 -accel tcg -kernel "$images/$image" -append "$append" -display none -no-reboot \
      -nic none -m 128 -serial "file:$out" -device isa-debug-exit,iobase=0xf4,iosize=4 2>/dev/null || status=$?
    [ "$status" -eq 1 ] || { echo "FAIL: $image $append: qemu exit $status (guest 0 gives 1)"; cat "$out"; return 1; }
  fi
}

boot compute_loop64.elf "iterations=$iterations nx=on" "$tmp/on"
boot compute_loop64.elf "iterations=$iterations nx=off" "$tmp/off"
boot compute_loop.elf "iterations=$iterations" "$tmp/32"
grep -aq '^nx: 4 KiB pages .* execute-disable' "$tmp/on" || { echo "FAIL: nx=on did not map the data pages:"; cat "$tmp/on"; exit 1; }
on=$(grep -a '^checksum:' "$tmp/on" || true)
off=$(grep -a '^checksum:' "$tmp/off" || true)
bits32=$(grep -a '^checksum:' "$tmp/32" || true)
echo "nx=on: ${on:-no checksum}; nx=off: ${off:-no checksum}; 32-bit: ${bits32:-no checksum}"
[ -n "$on" ] && [ "$on" = "$off" ] && [ "$on" = "$bits32" ]
