#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The hybrid, QEMU 9/10 spellings on the command line: what they are
# accepted as, and one clear line with a bad-input exit for each bad one.
# Usage: hybrid_options.sh TOPOLAB
set -euo pipefail
topolab=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

accepts() {  # accepts WHAT-THE-TABLE-SAYS ARGS...
  local want=$1 out
  shift
  out=$("$topolab" cpuid "$@" 2>&1) || fail "topolab cpuid $* exited $?: $out"
  grep -qF -- "$want" <<<"$out" || fail "topolab cpuid $*: no '$want' in: $(head -3 <<<"$out")"
}
refuses() {  # refuses MESSAGE-FRAGMENT ARGS...
  local want=$1 out status=0
  shift
  out=$("$topolab" cpuid "$@" 2>&1) || status=$?
  [ "$status" -ne 0 ] || fail "topolab cpuid $* was accepted"
  [ "$status" -lt 128 ] || fail "topolab cpuid $* crashed (exit $status)"
  [ "$(wc -l <<<"$out")" -eq 1 ] || fail "topolab cpuid $*: more than one line: $out"
  grep -qF -- "$want" <<<"$out" || fail "topolab cpuid $*: '$out' does not say '$want'"
}

accepts "E-cores: leaf 0x1A EAX 0x20000001" -smp sockets=1,p-modules=8,p-threads=2,e-modules=2,e-cores=4 -cpu AlderLake
accepts "(-smp 8,sockets=1,dies=1,cores=4,threads=2)" -smp 8,clusters=1,cores=4,threads=2 -cpu Skylake-Server
accepts "L2    4 MiB 16-way, 2 instances of 8 CPUs" -smp 16,modules=2,cores=4,threads=2 -cpu Skylake-Server \
  -machine pc,smp-cache.0.cache=l2,smp-cache.0.topology=module
accepts "leaf 0x1F reports the dies/modules" -smp 8,cores=4,threads=2 -cpu Skylake-Server,x-force-cpuid-0x1f=on

refuses "hybrid CPU model" -smp p-modules=2,e-modules=1,e-cores=4 -cpu Skylake-Server
refuses "cannot be combined" -smp p-modules=2,cores=2 -cpu AlderLake
refuses "e-cores needs e-modules" -smp p-modules=2,e-cores=4 -cpu AlderLake
refuses "clusters not supported" -smp 8,clusters=2,cores=4 -cpu Skylake-Server
refuses "thread level cache not supported" -smp 4 -cpu Skylake-Server -machine smp-cache.0.cache=l1d,smp-cache.0.topology=thread
refuses "invalid topology level: cluster" -smp 4 -cpu Skylake-Server -machine smp-cache.0.cache=l2,smp-cache.0.topology=cluster
refuses "L3 cache topology level shouldn't be lower than L2" -smp 4 -cpu Skylake-Server \
  -machine smp-cache.0.cache=l2,smp-cache.0.topology=socket
refuses "duplicated" -smp 4 -cpu Skylake-Server \
  -machine smp-cache.0.cache=l2,smp-cache.0.topology=core,smp-cache.1.cache=l2,smp-cache.1.topology=die
refuses "x-force-cpuid-0x1f must be on or off" -smp 4 -cpu Skylake-Server,x-force-cpuid-0x1f=sometimes
echo "ok: hybrid, clusters=, smp-cache and x-force-cpuid-0x1f spellings accepted and refused as documented"
