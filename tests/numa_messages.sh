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
      -smp|-numa|-object) args+=("-$1" "$2") ;;
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
compare refuse -m 1G -smp 4 -object $R,id=m0
compare refuse -m 1G -smp 4 -object $R,id=m0,size=abc
compare refuse -m 1G -smp 4 -object $R,size=1G
compare refuse -m 1G -smp 4 -object $R,id=m0,size=512M -object $R,id=m0,size=512M
compare refuse -m 128M -smp 4 -object $R,id=m0,size=1G -numa node,memdev=m0
compare warn -m 1G -smp 4 "${M2[@]}" -numa node,nodeid=0,memdev=m0,cpus=0 -numa node,nodeid=1,memdev=m1,cpus=1
compare warn -m 1G -smp 4,maxcpus=8,sockets=2,cores=4 "${M2[@]}" "${N2[@]}" -numa cpu,node-id=1,socket-id=1

echo "numa_messages: $checked configurations, $failures differ from QEMU 7.2"
[ "$failures" -eq 0 ]
