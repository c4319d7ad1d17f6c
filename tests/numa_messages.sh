#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# -numa and -object refusals against QEMU 7.2's own words: for each bad
# configuration, QEMU must refuse it (status 1) and topolab too (status 125,
# one line), and the first line of QEMU's message, less its
# "qemu-system-x86_64: " prefix, must end topolab's (topolab may say which
# option it read, "-numa: ", where QEMU names none; QEMU's hint line follows
# after "; "). Warnings likewise for a
# configuration both accept.
# Usage: numa_messages.sh TOPOLAB IMAGE
set -euo pipefail
topolab=$1 image=$2
R=memory-backend-ram
M2=(-object $R,id=m0,size=512M -object $R,id=m1,size=512M)
N2=(-numa node,nodeid=0,memdev=m0 -numa node,nodeid=1,memdev=m1)
failures=0 checked=0

# Runs QEMU (no guest runs: -S; a refusal exits at once) and topolab's
# run with the same options; prints "<qemu status>|<qemu first line>" then
# "<topolab status>|<topolab lines>".
compare() {
  local want=$1 # refuse | warn
  shift
  local args=() qemu_args=("$@")
  while [ $# -gt 0 ]; do
    case $1 in
      -smp|-numa|-object|-machine) args+=("-$1" "$2") ;;
      *) args+=("$1" "$2") ;;
    esac
    shift 2
  done
  local qerr status=0 terr tstatus=0
  qerr=$(timeout 5 qemu-system-x86_64 -accel tcg -display none -nodefaults -S "${qemu_args[@]}" </dev/null 2>&1 >/dev/null) ||
    status=$?
  terr=$("$topolab" run "$image" "${args[@]}" --report none 2>&1 >/dev/null) || tstatus=$?
  checked=$((checked + 1))
  local label="${qemu_args[*]}"
  if [ "$want" = refuse ]; then
    local first=${qerr%%$'\n'*}
    local body=${first#qemu-system-x86_64: }
    # QEMU's hint goes on a line of its own; topolab's one line adds it after "; ".
    [ "$first" = "$qerr" ] || body="$body; ${qerr#*$'\n'}"
    # QEMU prefixes an option's own error with the option; topolab too.
    if [ "$status" -ne 1 ]; then
      echo "FAIL: $label: QEMU 7.2 exited $status (expected a refusal): $qerr"; failures=$((failures + 1)); return
    fi
    if [ "$tstatus" -ne 125 ] || [ "$(wc -l <<<"$terr")" -ne 1 ]; then
      echo "FAIL: $label: topolab exited $tstatus: $terr"; failures=$((failures + 1)); return
    fi
    if [[ "$terr" != *"$body" ]]; then
      echo "FAIL: $label"; echo "  QEMU 7.2: $body"; echo "  topolab:  $terr"; failures=$((failures + 1)); return
    fi
    echo "ok: $body"
  else
    # An accepted configuration runs until timeout kills it (124).
    local q t
    q=$(grep 'warning: ' <<<"$qerr" | sed 's/^qemu-system-x86_64: warning: //' || true)
    t=$(grep 'warning: ' <<<"$terr" | sed 's/^topolab: warning: -numa: //' || true)
    if [ "$status" -ne 124 ] || [ "$tstatus" -eq 125 ] || [ "$q" != "$t" ] || [ -z "$q" ]; then
      echo "FAIL: $label: QEMU 7.2 ($status): $q"; echo "  topolab ($tstatus): $t"; failures=$((failures + 1)); return
    fi
    echo "ok: warning: ${q%%$'\n'*}"
  fi
}

compare refuse -m 1G -smp 4 -numa node,nodeid=0,mem=512M -numa node,nodeid=1,mem=512M
compare refuse -m 1G -smp 4 -object $R,id=m0,size=512M -numa node,memdev=m0 -numa node,mem=512M
compare refuse -m 1G -smp 4 -numa node,nodeid=0,memdev=nope
compare refuse -m 1G -smp 4 -object $R,id=m0,size=512M -numa node,nodeid=0,memdev=m0
compare refuse -m 1G -smp 4 -numa node,nodeid=0,cpus=0-1 -numa node,nodeid=1,cpus=2-3
compare refuse -m 1G -smp 4 -object $R,id=m0,size=512M -numa node,memdev=m0 -numa node,memdev=m0
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0 -numa node,nodeid=0,memdev=m1
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=1,memdev=m0 -numa node,memdev=m1
compare refuse -m 1G -smp 4 -object $R,id=m0,size=1G -numa node,nodeid=128,memdev=m0
compare refuse -m 1G -smp 4 -object $R,id=m0,size=1G -numa node,nodeid=65536,memdev=m0
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0 -numa node,nodeid=2,memdev=m1
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0-4 -numa node,nodeid=1,memdev=m1
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=3-1 -numa node,nodeid=1,memdev=m1
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0-2 -numa node,nodeid=1,memdev=m1,cpus=2-3
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa node,foo=1
compare refuse -m 1G -smp 4 -numa foo
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=0,dst=1,val=9
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=0,dst=0,val=11
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=0,dst=2,val=20
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=128,dst=1,val=20
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=0,dst=1,val=256
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa dist,src=0,dst=1
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa node,nodeid=2 -numa dist,src=0,dst=1,val=20 -numa dist,src=0,dst=2,val=20
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa node,nodeid=2 -numa dist,src=0,dst=1,val=20 \
  -numa dist,src=1,dst=0,val=30 -numa dist,src=0,dst=2,val=20 -numa dist,src=1,dst=2,val=20
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,socket-id=0
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=2,socket-id=0
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=0,socket-id=5
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=0,die-id=0
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=0,cluster-id=0
compare refuse -m 1G -smp 4,sockets=2,cores=2 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=0,socket-id=0 \
  -numa cpu,node-id=1,socket-id=0,core-id=1
compare refuse -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=1,memdev=m1,initiator=0 -numa node,nodeid=0,memdev=m0
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=5
# HMAT (-machine hmat=on): initiator=, -numa hmat-lb and -numa hmat-cache.
H=(-m 1G -smp 4 -machine hmat=on "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0-3)
HN=("${H[@]}" -numa node,nodeid=1,memdev=m1,initiator=0)
LB=hmat-lb,hierarchy=memory
LAT=$LB,data-type=access-latency BW=$LB,data-type=access-bandwidth
L1=size=10K,level=1,associativity=direct,policy=write-back,line=8
LBS=(-numa $LAT,initiator=0,target=0,latency=10 -numa $BW,initiator=0,target=0,bandwidth=1G)
compare refuse -m 1G -smp 4 "${M2[@]}" "${N2[@]}" -numa hmat-cache,node-id=0,$L1
compare refuse "${H[@]}" -numa node,nodeid=1,memdev=m1,initiator=2
compare refuse "${H[@]}" -numa node,nodeid=1,memdev=m1,initiator=1
compare refuse -m 1G -smp 4 -machine hmat=on "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0-1,initiator=1 \
  -numa node,nodeid=1,memdev=m1,cpus=2-3
compare refuse -m 1G -smp 4,sockets=2,cores=2 -machine hmat=on "${M2[@]}" -numa node,memdev=m0 \
  -numa node,memdev=m1,initiator=0
compare refuse -m 1G -smp 4 -machine hmat=on "${M2[@]}" -numa node,nodeid=0,memdev=m0,initiator=1 \
  -numa node,nodeid=1,memdev=m1,cpus=1-3 -numa cpu,node-id=0,core-id=0
compare refuse "${HN[@]}" -numa $LAT,initiator=1,target=0,latency=10
compare refuse "${HN[@]}" -numa $LAT,initiator=2,target=0,latency=10
compare refuse "${HN[@]}" -numa $LAT,initiator=3,target=0,latency=10
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=3,latency=10
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=2,latency=10
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0,latency=10,bandwidth=1G
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0,bandwidth=1G,latency=5
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0,bandwidth=1000
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0,latency=10 -numa $LAT,initiator=0,target=0,latency=20
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0,bandwidth=1G -numa $BW,initiator=0,target=0,bandwidth=2G
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0,latency=1 -numa $LAT,initiator=0,target=1,latency=70000
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0,bandwidth=1M -numa $BW,initiator=0,target=1,bandwidth=1T
compare refuse "${HN[@]}" -numa $LB,data-type=fastest,initiator=0,target=0,latency=1
compare refuse "${HN[@]}" -numa hmat-lb,initiator=0,target=0,hierarchy=fourth-level,data-type=read-latency,latency=1
compare refuse "${HN[@]}" -numa $LAT,target=0,latency=1
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0,latency=soon
compare refuse "${HN[@]}" -numa $BW,initiator=0,target=0,bandwidth=lots
compare refuse "${HN[@]}" -numa $LAT,initiator=0,target=0,latency=1,speed=3
compare refuse "${HN[@]}" -numa hmat-cache,node-id=0,$L1
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=2,$L1
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,size=10K,level=0,associativity=direct,policy=write-back,line=8
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,size=10K,level=4,associativity=direct,policy=write-back,line=8
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,$L1 -numa hmat-cache,node-id=0,$L1
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,size=20K,level=2,associativity=none,policy=none,line=8
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,$L1 \
  -numa hmat-cache,node-id=0,size=5K,level=2,associativity=none,policy=none,line=8
compare refuse "${HN[@]}" "${LBS[@]}" -numa hmat-cache,node-id=0,size=10K,level=1,associativity=full,policy=none,line=8
compare refuse -m 1G -smp 4 -machine hmat=maybe
compare refuse -m 1G -smp 4 -object $R,id=m0
compare refuse -m 1G -smp 4 -object $R,id=m0,size=abc
compare refuse -m 1G -smp 4 -object $R,size=1G
compare refuse -m 1G -smp 4 -object $R,id=m0,size=512M -object $R,id=m0,size=512M
compare refuse -m 128M -smp 4 -object $R,id=m0,size=1G -numa node,memdev=m0
compare warn -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0 -numa node,nodeid=1,memdev=m1,cpus=1
compare warn -m 1G -smp 4,maxcpus=8,sockets=2,cores=4 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=1,socket-id=1

echo "numa_messages: $checked configurations, $failures differ from QEMU 7.2"
[ "$failures" -eq 0 ]
