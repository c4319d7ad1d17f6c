#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A hybrid topology as the decoders people use see it: Debian's `cpuid -f`
# must name each CPU's core type from leaf 0x1A, hwloc's lstopo must build
# the cores and the per-module L2s and list two CPU kinds (CPUKind, from leaf
# 0x1A), and topolab's own Linux-style table must show the same core types
# and clusters. The expected counts come from the caller, not from topolab.
# Usage: hybrid_decoders.sh TOPOLAB SMP CPU P_PUS E_PUS CORES L2S CLUSTERS
#   CLUSTERS: the table's "scheduler clusters" groups, e.g. "8 of 2 CPUs (P-cores), 2 of 4 CPUs (E-cores)"
set -euo pipefail
topolab=$1 smp=$2 cpu=$3 p_pus=$4 e_pus=$5 cores=$6 l2s=$7 clusters=$8
pus=$((p_pus + e_pus))
source "$(dirname "$0")/decoders_lib.sh"

decode_with_cpuid "$topolab" "$smp" "$cpu"
cpuid_types=$(grep -E '^ +core type += ' "$tmp/decoded.txt" | sed 's/.*= //')
[ "$(grep -c 'Intel Core' <<<"$cpuid_types")" -eq "$p_pus" ] || fail "cpuid -f finds $(grep -c 'Intel Core' <<<"$cpuid_types") Intel Core CPUs, expected $p_pus"
[ "$(grep -c 'Intel Atom' <<<"$cpuid_types")" -eq "$e_pus" ] || fail "cpuid -f finds $(grep -c 'Intel Atom' <<<"$cpuid_types") Intel Atom CPUs, expected $e_pus"
hybrid_flags=$(grep -cE '^ +hybrid part += true' "$tmp/decoded.txt" || true)
[ "$hybrid_flags" -eq "$pus" ] || fail "cpuid -f finds the hybrid flag on $hybrid_flags CPUs, expected $pus"

lstopo_from "$topolab" "$smp" "$cpu"
[ "$(count PU)" -eq "$pus" ] || fail "lstopo shows $(count PU) PUs, expected $pus"
[ "$(count Core)" -eq "$cores" ] || fail "lstopo shows $(count Core) cores, expected $cores"
[ "$(count L2)" -eq "$l2s" ] || fail "lstopo shows $(count L2) L2 caches, expected $l2s"
lstopo_from "$topolab" "$smp" "$cpu" --cpukinds
mv "$tmp/lstopo.txt" "$tmp/kinds.txt"
# "CPU kind #0 efficiency 0 cpuset 0x00ff0000" then "  CoreType = IntelAtom".
kinds=$(grep -c '^CPU kind' "$tmp/kinds.txt")
want_kinds=$(( (p_pus > 0) + (e_pus > 0) ))
[ "$kinds" -eq "$want_kinds" ] || fail "lstopo --cpukinds lists $kinds CPU kinds, expected $want_kinds: $(tr '\n' ' ' < "$tmp/kinds.txt")"
kind_pus() {  # PUs in the cpuset of the kind whose CoreType is $1
  local set
  set=$(grep -B1 "CoreType = $1" "$tmp/kinds.txt" | awk '/cpuset/ {print $NF}')
  [ -n "$set" ] || { echo 0; return; }
  python3 -c "import sys; print(bin(int(sys.argv[1].replace(',0x', ''), 16)).count('1'))" "$set"
}
[ "$(kind_pus IntelCore)" -eq "$p_pus" ] || fail "lstopo's IntelCore kind has $(kind_pus IntelCore) PUs, expected $p_pus"
[ "$(kind_pus IntelAtom)" -eq "$e_pus" ] || fail "lstopo's IntelAtom kind has $(kind_pus IntelAtom) PUs, expected $e_pus"

"$topolab" cpuid -smp "$smp" -cpu "$cpu" > "$tmp/table.txt"
grep -q "scheduler clusters (Linux CLS: the CPUs sharing an L2): $clusters\$" "$tmp/table.txt" \
  || fail "topolab's table shows '$(grep 'scheduler clusters' "$tmp/table.txt")', expected '$clusters'"
echo "ok: $smp / $cpu: cpuid -f and lstopo see $p_pus P-core and $e_pus E-core PUs, $cores cores, $l2s L2s; clusters $clusters"
