#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of topolab's Linux guest (tools/linux_guest.sh builds the
# initramfs), run by busybox sh as PID 1. It prints the guest's view of its
# topology, runs the `perf bench sched` benchmarks the kernel command line
# asks for, and powers the machine off, whatever happened.
#
# Command line: topolab.bench=SPEC[,SPEC...] with SPEC one of
#   messaging:G:L   perf bench sched messaging -g G -l L
#   pipe:L          perf bench sched pipe -l L
#   ctxsw:L         topolab-ctxsw L: two processes on CPUs 0 and 1 handing
#                   a futex back and forth L times (testcases/linux/)
# (no spaces, so it stays one kernel parameter). Without it, only the
# topology is printed.
#
# Output (all lines are "topolab-..." but what perf and /proc/interrupts print):
#   topolab-topology-begin
#   topolab-kernel release=...
#   topolab-cpus online=0-1 possible=0-1 present=0-1
#   topolab-cpuinfo cpu0 apicid=0 initial_apicid=0 physical_id=0 core_id=0 siblings=2 cpu_cores=2
#   topolab-topology cpu0 core_cpus=... core_cpus_list=0 ... (every file in topology/)
#   topolab-cache cpu0 index0 level=1 type=Data shared_cpu_list=0 ... (every file)
#   topolab-node node0 cpulist=0-1 distance=10 memtotal_kb=N
#   topolab-sched-domain cpu0 domain0 name=MC flags=SD_...|SD_... span_map=3 ...
#     (span_map: a hex CPU mask; "topolab-sched-domains none" if there are none)
#   topolab-topology-end
#   topolab-interrupts-before SPEC / (cat /proc/interrupts) / topolab-interrupts-end
#   topolab-bench-begin SPEC / (perf's output) / topolab-bench-end SPEC status=N
#     (ctxsw: topolab-cpuidle driver=D governor=G states=S1,S2 first, then
#     the topolab-ctxsw line)
#   topolab-interrupts-after SPEC / (cat /proc/interrupts) / topolab-interrupts-end
#   topolab-init: done             (or topolab-init: error: ... lines)
# Nothing in them depends on time or PIDs, so two runs of a deterministic
# machine print the same bytes but for perf's own figures.
PATH=/bin:/usr/bin
export PATH

errors=0
error() {
  echo "topolab-init: error: $*"
  errors=$((errors + 1))
}

# The machine goes off however the script ends: PID 1 exiting would panic.
power_off() {
  poweroff -f
  # Still here: poweroff(2) did not take (no ACPI S5?). Exiting makes the
  # kernel panic, and panic=-1 reboots, which -no-reboot turns into an exit.
  echo "topolab-init: error: poweroff -f returned"
  exit 1
}

# value FILE: the file's contents on one line, whitespace runs as SEP (default ",").
value() {
  v=$(cat "$1" 2>/dev/null) || return 1
  printf '%s\n' "$v" | tr -s ' \t\n' "${2:-,}${2:-,}${2:-,}" | sed "s/[${2:-,}]*\$//"
}

# numbered DIR PREFIX: the N of DIR/PREFIXN entries, in numeric order
# (a glob would put cpu10 before cpu2).
numbered() {
  ls "$1" 2>/dev/null | sed -n "s/^$2\([0-9][0-9]*\)\$/\1/p" | sort -n
}

# sysfs_lines LABEL_AWK SKIP FILE...: one line per directory of the FILEs
# ("LABEL name=value name=value ..." in the order given), all read by one
# awk, since a fork per file costs the guest more than the whole benchmark on
# 16 vCPUs. Each value is its contents on one line, whitespace runs as ","
# ("|" for a domain's flags); a file that cannot be read is "name=?".
# LABEL_AWK turns the directory into the line's label; SKIP lists names to
# leave out (space-separated).
sysfs_lines() {
  label=$1 skip=$2
  shift 2
  awk -v skip=" $skip " '
    function '"$label"'
    BEGIN {
      for (i = 1; i < ARGC; i++) {
        f = ARGV[i]; n = split(f, part, "/"); name = part[n]
        dir = substr(f, 1, length(f) - length(name) - 1)
        if (index(skip, " " name " ")) continue
        sep = name == "flags" ? "|" : ","
        v = ""; ok = 0
        while ((r = (getline l < f)) > 0) { ok = 1; v = v (v == "" ? "" : sep) l }
        close(f)
        if (r < 0 && !ok) v = "?"
        gsub(/[ \t]+/, sep, v); gsub("[" sep "]+$", "", v)
        if (!(dir in line)) { dirs[++ndirs] = dir; line[dir] = "" }
        line[dir] = line[dir] " " name "=" v
      }
      for (d = 1; d <= ndirs; d++) print label(dirs[d]) line[dirs[d]]
      exit
    }' "$@"
}

mount_filesystems() {
  mount -t proc proc /proc || error "mount proc failed"
  mount -t sysfs sysfs /sys || error "mount sysfs failed"
  # The kernel may have mounted devtmpfs already (CONFIG_DEVTMPFS_MOUNT).
  mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
  mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
}

print_topology() {
  cpu=/sys/devices/system/cpu
  echo "topolab-topology-begin"
  echo "topolab-kernel release=$(uname -r)"
  echo "topolab-cpus online=$(value $cpu/online) possible=$(value $cpu/possible) present=$(value $cpu/present)"
  # What the kernel made of CPUID and the APIC IDs, per logical CPU.
  awk -F': *' '
    function out() { if (n != "") print "topolab-cpuinfo cpu" n " apicid=" a " initial_apicid=" ia \
                       " physical_id=" p " core_id=" c " siblings=" s " cpu_cores=" cc; n = "" }
    /^processor/ { out(); n = $2; a = ia = p = c = s = cc = "?" }
    /^apicid/ { a = $2 } /^initial apicid/ { ia = $2 } /^physical id/ { p = $2 }
    /^core id/ { c = $2 } /^siblings/ { s = $2 } /^cpu cores/ { cc = $2 }
    END { out() }' /proc/cpuinfo || error "cannot read /proc/cpuinfo"
  # Every CPU's topology files, then its caches, in CPU order (a glob alone
  # would put cpu10 before cpu2).
  for n in $(numbered $cpu cpu); do
    if [ -d $cpu/cpu$n/topology ]; then
      sysfs_lines 'label(d) { return "topolab-topology cpu'$n'" }' "" $cpu/cpu$n/topology/*
    else
      echo "topolab-topology cpu$n offline"
    fi
    caches=""
    for i in $(numbered $cpu/cpu$n/cache index); do caches="$caches $cpu/cpu$n/cache/index$i/*"; done
    # shellcheck disable=SC2086 # the globs expand here
    [ -z "$caches" ] || sysfs_lines 'label(d) { sub(/.*\//, "", d); return "topolab-cache cpu'$n' " d }' uevent $caches
  done
  for n in $(numbered /sys/devices/system/node node); do
    node=/sys/devices/system/node/node$n
    echo "topolab-node node$n cpulist=$(value $node/cpulist) distance=$(value $node/distance)" \
      "memtotal_kb=$(awk '/MemTotal/ { print $4 }' $node/meminfo)"
  done
  print_sched_domains
  echo "topolab-topology-end"
}

# Linux 5.13 moved the domains from /proc/sys/kernel/sched_domain to debugfs.
print_sched_domains() {
  domains=""
  for d in /sys/kernel/debug/sched/domains /proc/sys/kernel/sched_domain; do
    if [ -d "$d/cpu0" ]; then domains=$d; break; fi
  done
  if [ -z "$domains" ]; then
    echo "topolab-sched-domains none"
    return
  fi
  # Each domain's span is only in /proc/schedstat ("domainN MASK stats...").
  spans=$(awk '/^cpu[0-9]/ { c = $1 } /^domain[0-9]/ { print c, $1, $2 }' /proc/schedstat 2>/dev/null)
  count=0
  for n in $(numbered $domains cpu); do
    for m in $(numbered $domains/cpu$n domain); do
      count=$((count + 1))
      d=$domains/cpu$n/domain$m
      span=$(echo "$spans" | awk -v c=cpu$n -v d=domain$m '$1 == c && $2 == d { print $3 }')
      # name and flags first, then the span and the rest; max_newidle_lb_cost
      # is a running average: it would differ run to run.
      sysfs_lines 'label(d) { return "topolab-sched-domain cpu'$n' domain'$m'" }' "" $d/name $d/flags |
        tr -d '\n'
      echo " span_map=${span:-?}$(sysfs_lines 'label(d) { return "" }' "name flags max_newidle_lb_cost" $d/*)"
    done
  done
  # One CPU has none: there is nothing to balance.
  [ "$count" != 0 ] || echo "topolab-sched-domains none"
}

# print_interrupts before|after SPEC: /proc/interrupts, read by
# topolab-window, which also opens (before) or closes (after) topolab's
# measuring window right beside the read, so topolab's counts of the window
# and these deltas cover the same stretch. The last benchmark's window is the
# one topolab reports.
print_interrupts() {
  echo "topolab-interrupts-$1 $2"
  case $1 in before) mark=begin ;; *) mark=end ;; esac
  topolab-window $mark || error "cannot read /proc/interrupts"
  echo "topolab-interrupts-end"
}

# run_bench SPEC: one benchmark between its interrupt counts.
run_bench() {
  spec=$1
  case $spec in
    messaging:*:*)
      rest=${spec#messaging:}
      groups=${rest%%:*}
      loops=${rest#*:}
      set -- messaging -g "$groups" -l "$loops"
      ;;
    pipe:*)
      loops=${spec#pipe:}
      groups=1
      set -- pipe -l "$loops"
      ;;
    ctxsw:*)
      loops=${spec#ctxsw:}
      groups=1
      ;;
    *)
      error "unknown benchmark '$spec' (want messaging:G:L, pipe:L or ctxsw:L)"
      return
      ;;
  esac
  case "$groups$loops" in
    "" | *[!0-9]*)
      error "benchmark '$spec' wants whole numbers"
      return
      ;;
  esac
  print_interrupts before "$spec"
  echo "topolab-bench-begin $spec"
  case $spec in
    ctxsw:*)
      print_cpuidle
      topolab-ctxsw "$loops" 2>&1
      ;;
    *) perf bench sched "$@" 2>&1 ;;
  esac
  status=$?
  echo "topolab-bench-end $spec status=$status"
  print_interrupts after "$spec"
  [ "$status" = 0 ] || error "benchmark $spec exited with $status"
}

# print_cpuidle: how the guest idles (the halt-polling experiment's rows
# differ in it): the cpuidle driver and governor and CPU 0's states.
print_cpuidle() {
  c=/sys/devices/system/cpu/cpuidle
  states=$(cat /sys/devices/system/cpu/cpu0/cpuidle/state*/name 2>/dev/null | tr '\n' ',')
  echo "topolab-cpuidle driver=$(cat $c/current_driver 2>/dev/null || echo none)" \
    "governor=$(cat $c/current_governor_ro 2>/dev/null || echo none) states=${states%,}"
}

main() {
  mount_filesystems
  print_topology
  benches=""
  for word in $(cat /proc/cmdline 2>/dev/null); do
    case $word in topolab.bench=*) benches=${word#topolab.bench=} ;; esac
  done
  if [ -n "$benches" ]; then
    command -v perf >/dev/null || error "perf is not in the initramfs"
    old_ifs=$IFS
    IFS=,
    set -- $benches
    IFS=$old_ifs
    for spec in "$@"; do run_bench "$spec"; done
  fi
  if [ "$errors" = 0 ]; then echo "topolab-init: done"; else echo "topolab-init: $errors errors"; fi
}

main
power_off
