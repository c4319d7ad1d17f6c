# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the decoder tests: a scratch directory, fail(), and the two
# outside decoders run on a topolab dump.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# decode_with_cpuid TOPOLAB SMP CPU: $tmp/raw.txt and Debian cpuid's
# decoding of it in $tmp/decoded.txt, which must not complain.
decode_with_cpuid() {
  "$1" cpuid -smp "$2" -cpu "$3" --format raw --output "$tmp/raw.txt"
  cpuid -f "$tmp/raw.txt" > "$tmp/decoded.txt" 2> "$tmp/cpuid.err" || fail "cpuid -f exited $?: $(head -3 "$tmp/cpuid.err")"
  [ ! -s "$tmp/cpuid.err" ] || fail "cpuid -f complained: $(head -3 "$tmp/cpuid.err")"
}

# lstopo_from TOPOLAB SMP CPU [LSTOPO ARGS]: hwloc's view of the dump in
# $tmp/lstopo.txt (console format unless other arguments are given).
lstopo_from() {
  local topolab=$1 smp=$2 cpu=$3
  shift 3
  [ $# -gt 0 ] || set -- --of console
  [ -d "$tmp/hwloc" ] || "$topolab" cpuid -smp "$smp" -cpu "$cpu" --format hwloc --output "$tmp/hwloc" >/dev/null
  HWLOC_CPUID_PATH="$tmp/hwloc" HWLOC_COMPONENTS=x86,stop lstopo-no-graphics "$@" > "$tmp/lstopo.txt" \
    2> "$tmp/lstopo.err" || fail "lstopo exited $?: $(head -3 "$tmp/lstopo.err")"
}

# count OBJECT: how many of them $tmp/lstopo.txt shows.
count() { grep -oE "(^|[ +])$1 L#[0-9]+" "$tmp/lstopo.txt" | wc -l; }
