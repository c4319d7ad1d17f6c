#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Golden CPUID outputs under version control: any change to what a guest
# sees shows up as a diff here. With --update, rewrite them instead.
# Usage: golden.sh TOPOLAB [--update]
set -euo pipefail
topolab=$1
update=${2:-}
dir=$(dirname "$0")/golden
configs=(
  "l3debate|16,sockets=1,cores=8,threads=2|Skylake-Server,l3-cache=on"
  "sparse-l3off|12,sockets=2,cores=3,threads=2|Skylake-Server,l3-cache=off"
  "epyc-dies|32,sockets=2,dies=2,cores=4,threads=2|EPYC"
  "qemu64|4|qemu64"
  "alderlake-hybrid|sockets=1,p-modules=8,p-threads=2,e-modules=2,e-cores=4|AlderLake"
)
status=0
for entry in "${configs[@]}"; do
  IFS='|' read -r name smp cpu <<<"$entry"
  for format in table raw; do
    file="$dir/$name.$format.txt"
    actual=$("$topolab" cpuid -smp "$smp" -cpu "$cpu" --format "$format")
    if [ "$update" = "--update" ]; then
      printf '%s\n' "$actual" >"$file"
      echo "updated $file"
    elif ! diff -u "$file" <(printf '%s\n' "$actual"); then
      echo "FAIL: $name ($format) differs from $file; if intended, run: tests/golden.sh build/topolab --update"
      status=1
    fi
  done
done
[ "$status" -eq 0 ] && [ "$update" != "--update" ] && echo "ok: ${#configs[@]} configurations match their golden CPUID outputs"
exit "$status"
