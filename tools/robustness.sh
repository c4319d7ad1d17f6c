#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Whole runs on hostile input: N mutated images with random valid and
# invalid flags (NUMA nodes, SLITs and HMATs among them), each run twice.
# The images: bit flips and truncations of build/testcases/*.elf (Multiboot),
# and of the small bzImage and PVH kernels of fuzz/seeds/ with the flips in
# their headers (setup header; ELF, program headers and notes), sometimes
# with a mutated initrd. A fifth of the cases go through the QEMU front
# (build/qemu-system-x86_64) with -device and -machine flags, good and bad. Counts signals (an abort or a sanitizer report included),
# wall-clock hangs, internal errors (exit 70) and reruns that differ (stdout,
# stderr and the JSON report compared byte for byte); exits 1 on any of them.
# The seed fixes every choice, so a failure is reproduced by its seed and
# case number (the failing inputs are kept, see --keep).
#
# Usage: tools/robustness.sh [-n N] [--seed S] [-j JOBS] [--hang SECONDS]
#                            [--topolab BIN] [--images DIR] [--keep DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
n=30 seed=1 jobs=1 hang=60
topolab=build/topolab images=build/testcases keep=""
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --hang) hang=$2; shift 2 ;;
    --topolab) topolab=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "robustness.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
topolab=$(realpath "$topolab")
qemu=$(dirname "$topolab")/qemu-system-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every case as one line: the mutated image's path, then its flags. Python
# makes the mutations and draws the flags from the seed.
python3 - "$seed" "$n" "$images" "$work" >"$work/cases" <<'PY' || exit 2
import glob, os, random, shlex, sys
seed, n, images, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
sources = open(os.path.join(work, "sources"), "w")
images_found = sorted(glob.glob(os.path.join(images, "*.elf")))
if not images_found:
    sys.exit(f"robustness.sh: no images in {images}")
# Valid values, then invalid ones: most cases use valid flags only, so
# that the mutated image runs; a quarter get one invalid flag.
smp = ["1", "2", "4", "4,sockets=2,cores=2", "8,sockets=2,dies=2,cores=2", "3"]
cpu = ["qemu64", "Skylake-Server", "EPYC", "Skylake-Server,+x2apic", "qemu64,+monitor", "qemu64,+tsc-deadline",
       "Skylake-Server,+x2apic,+tsc-deadline", "EPYC,l3-cache=off", "Skylake-Server,kvm=on",
       "Skylake-Server,+x2apic,kvm=on,kvm-pv-ipi=on,kvm-pv-unhalt=on,kvm-poll-control=on,kvm-pv-enforce-cpuid=on"]
cost = ["none", "freq_mhz=500", "freq_mhz=100,cpi=100", "halt_poll_ns=0,ipiv=1", "mwait_passthrough=0"]
appends = ["", "mode=halt", "mode=spin", "iterations=10", "cores=2", "workload=pipe loops=5", "mode=store",
           "cpus=2", "x" * 300, "mode=tsc_deadline_far", "mode=nmi"]
invalid = [["-smp", "0"], ["-smp", "7,sockets=2"], ["-smp", "abc"], ["-smp", "4097"], ["-cpu", "Pentium9"],
           ["-cpu", "qemu64,+avx9"], ["-cpu", "qemu64,kvm-pv-ipi=on"], ["-cpu", "Skylake-Server,kvm=on,kvm-asyncpf=on"],
           ["--cost", "freq_mhz=0"], ["--cost", "bogus=1"], ["--cost", "cpi=0"],
           ["-m", "0"], ["-m", "2"], ["--quantum", "0"], ["--time-limit", "-1"],
           ["--numa", "node,memdev=nothing"], ["--object", "memory-backend-ram,id=a"],
           ["--numa", "dist,src=0,dst=0,val=11"], ["--numa", "node,cpus=9999"], ["--machine", "hmat=maybe"],
           ["--numa", "hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=5"]]
# NUMA (docs/numa.md): -m and two nodes of its memory, sometimes a SLIT or
# an HMAT; the CPUs go to their sockets' nodes.
R = "memory-backend-ram"
numa = [["-m", "128", "--object", f"{R},id=a,size=64M", "--object", f"{R},id=b,size=64M",
         "--numa", "node,memdev=a", "--numa", "node,memdev=b"],
        ["-m", "128", "--object", f"{R},id=a,size=96M", "--object", f"{R},id=b,size=32M",
         "--numa", "node,memdev=a", "--numa", "node,memdev=b", "--numa", "dist,src=0,dst=1,val=31"],
        ["-m", "128", "--machine", "hmat=on", "--object", f"{R},id=a,size=128M", "--numa", "node,memdev=a,cpus=0",
         "--numa", "node", "--numa", "hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=5"]]
# Kernels: the loader harnesses' seeds without their control bytes (5 for
# linux_boot, 6 for pvh_boot): a bzImage with a 4-sector setup and NOPs for
# a kernel, ELF64 vmlinuxes with the PVH note in a segment or a section.
# Where a loader looks: [start, end) of the bytes a flip lands in.
seeds = os.path.join(os.getcwd(), "fuzz", "seeds")  # the script runs from the top of the tree
kernels = []
for name, skip, header in [("linux_boot/plain", 5, (0x1f1, 0x270)), ("linux_boot/initrd", 5, (0x1f1, 0x270)),
                           ("pvh_boot/segment-note", 6, None), ("pvh_boot/section-note", 6, None)]:
    path = os.path.join(seeds, name)
    if os.path.exists(path):
        kernels.append((name, bytes(open(path, "rb").read()[skip:]), header))
def elf_header_ranges(data):
    """The ELF header, the program headers and each PT_NOTE's bytes."""
    ranges = [(0, 64)]
    if len(data) >= 64:
        phoff = int.from_bytes(data[32:40], "little")
        phnum = int.from_bytes(data[56:58], "little")
        ranges.append((phoff, phoff + 56 * phnum))
        for k in range(phnum):
            ph = phoff + 56 * k
            if ph + 56 <= len(data) and int.from_bytes(data[ph:ph + 4], "little") == 4:
                off = int.from_bytes(data[ph + 8:ph + 16], "little")
                ranges.append((off, off + int.from_bytes(data[ph + 32:ph + 40], "little")))
    return [(a, min(b, len(data))) for a, b in ranges if a < min(b, len(data))]
device_good = [["-device", "pc-testdev"], ["-device", "pci-testdev"], ["-device", "isa-debug-exit,iobase=0xf4,iosize=4"],
               ["-machine", "pc"], ["-machine", "q35"], ["-machine", "accel=tcg"], ["-no-reboot"]]
device_bad = [["-device", "e1000"], ["-device", "isa-debug-exit,iobase=0x99999"], ["-device", ""],
              ["-device", "pci-testdev,bus=nowhere"], ["-machine", "virt"], ["-machine", "pc,hmat=perhaps"],
              ["-device", "isa-debug-exit,iosize=0"], ["-global", "nothing"]]
def mutate(data, how_name, header):
    data = bytearray(data)
    if rng.random() < 0.15:
        data = data[: rng.randrange(len(data))]                     # truncated
        return data, f"{how_name} truncated to {len(data)} bytes"
    flips = rng.choice([1, 1, 2, 4, 16, 64])
    for _ in range(flips):                                          # bit flips
        # Half of them where the loader looks: the first 8 KiB of an ELF
        # testcase, a bzImage's setup header, a vmlinux's ELF and program
        # headers and notes.
        if rng.random() < 0.5 and header:
            a, b = rng.choice(header)
            at = rng.randrange(a, b)
        else:
            at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    return data, f"{how_name} with {flips} bit flips"
for i in range(n):
    kind = rng.random()
    initrd = None
    if kernels and kind < 0.3:
        name, base, header = rng.choice(kernels)
        ranges = [header] if header else elf_header_ranges(base)
        data, how = mutate(base, name, ranges)
        if rng.random() < 0.4:                                      # an initrd, maybe mangled
            initrd_data, initrd_how = mutate(rng.choice(kernels)[1] * rng.choice([1, 3]), "initrd", None)
            initrd = os.path.join(work, f"case{i}.initrd")
            open(initrd, "wb").write(initrd_data)
            how += f", {initrd_how}"
    else:
        src = rng.choice(images_found)
        data, how = mutate(open(src, "rb").read(), os.path.basename(src), [(0, 8192)])
    path = os.path.join(work, f"case{i}.elf")
    open(path, "wb").write(data)
    flags = []
    if initrd: flags += ["-initrd", initrd]
    if rng.random() < 0.8: flags += ["-smp", rng.choice(smp)]
    if rng.random() < 0.8: flags += ["-cpu", rng.choice(cpu)]
    if rng.random() < 0.2: flags += rng.choice(numa)
    elif initrd or kind < 0.3 and kernels: flags += ["-m", rng.choice(["64", "128", "256"])]  # room to decompress
    elif rng.random() < 0.3: flags += ["-m", rng.choice(["4", "16", "128"])]
    if rng.random() < 0.3: flags += ["--quantum", rng.choice(["1", "1000", "100000"])]
    if rng.random() < 0.5: flags += ["--cost", rng.choice(cost)]
    if rng.random() < 0.8: flags += ["-append", rng.choice(appends)]
    # Short: code that writes where it runs (mutated images often execute
    # zeros, "add [eax], al") retranslates at every store, ~175 k
    # instructions per host second, so 3 ms at 2 GHz stays well inside --hang.
    flags += ["--time-limit", rng.choice(["0.0005", "0.001", "0.003"])]
    if rng.random() < 0.25:
        bad = rng.choice(invalid)
        # In place of a valid value of the same option, so that the value
        # is what is refused, not the option given twice.
        if bad[0] in flags and bad[0] not in ("--numa", "--object"):
            k = flags.index(bad[0])
            del flags[k:k + 2]
        flags += bad
    front = "run"
    # Through the QEMU front: its spellings, -device and -machine; topolab's
    # own options go in TOPOLAB_OPTS (run_case).
    if rng.random() < 0.2:
        front = "qemu"
        flags += rng.choice(device_good) if rng.random() < 0.7 else rng.choice(device_bad)
    print(i, front, shlex.quote(path), " ".join(shlex.quote(f) for f in flags))
    print(i, how, file=sources)
PY

# One case: two runs, their statuses and whether they agree, as one line
# "i status1 status2 same|differ".
run_case() {
  local i=$1 front=$2 image=$3
  shift 3
  local r
  for r in 1 2; do
    if [ "$front" = qemu ]; then
      # QEMU's spellings; topolab's own options (time limit, quantum, cost
      # model) and the report through TOPOLAB_OPTS, as a suite would.
      local all=("$@") args=() opts=""
      while [ $# -gt 0 ]; do
        case $1 in
          --time-limit|--quantum|--cost) opts+=" $1 $2"; shift 2 ;;
          --numa|--object|--machine) args+=("${1#-}" "$2"); shift 2 ;;
          *) args+=("$1"); shift ;;
        esac
      done
      TOPOLAB_OPTS="$opts --report json --report-file $work/$i.$r.json" \
        timeout -s KILL "$hang" "$qemu" -kernel "$image" "${args[@]}" >"$work/$i.$r.out" 2>"$work/$i.$r.err"
      echo $? >"$work/$i.$r.status"
      set -- "${all[@]}"
    else
      timeout -s KILL "$hang" "$topolab" run "$image" "$@" --report json --report-file "$work/$i.$r.json" \
        >"$work/$i.$r.out" 2>"$work/$i.$r.err"
      echo $? >"$work/$i.$r.status"
    fi
    [ -f "$work/$i.$r.json" ] || : >"$work/$i.$r.json"
  done
  local same=same
  for f in out err json status; do cmp -s "$work/$i.1.$f" "$work/$i.2.$f" || same=differ; done
  echo "$i $(cat "$work/$i.1.status") $(cat "$work/$i.2.status") $same"
}
export -f run_case
export topolab qemu work hang
# One line a case, given whole to bash (xargs -d: no quote processing of its
# own, which would drop an empty argument such as -append '').
xargs -d '\n' -n 1 -P "$jobs" bash -c 'eval "set -- $1"; run_case "$@"' _ <"$work/cases" >"$work/results"

signals=0 hangs=0 internal=0 differ=0 total=0
declare -A by_status
while read -r i s1 s2 same; do
  total=$((total + 1))
  bad=""
  for s in $s1 $s2; do
    if [ "$s" -eq 137 ]; then bad="hang"; elif [ "$s" -ge 128 ]; then bad="signal $((s - 128))";
    elif [ "$s" -eq 70 ]; then bad="internal error"; fi
  done
  by_status[$s1]=$(( ${by_status[$s1]:-0} + 1 ))
  case $bad in
    hang) hangs=$((hangs + 1)) ;;
    signal*) signals=$((signals + 1)) ;;
    "internal error") internal=$((internal + 1)) ;;
  esac
  [ "$same" = differ ] && differ=$((differ + 1)) && bad="${bad:+$bad, }reruns differ"
  if [ -n "$bad" ]; then
    echo "robustness: case $i (seed $seed, $(grep "^$i " "$work/sources" | cut -d' ' -f2-)): $bad:"
    read -r _ front image flags < <(grep "^$i " "$work/cases")
    if [ "$front" = qemu ]; then echo "    qemu-system-x86_64 -kernel $image $flags (topolab's options in TOPOLAB_OPTS)"
    else echo "    topolab run $image $flags"; fi
    sed 's/^/    /' "$work/$i.1.err" | tail -3
    if [ -n "$keep" ]; then
      mkdir -p "$keep" && cp "$work/case$i".* "$work/$i".* "$keep/" 2>/dev/null
      grep "^$i " "$work/cases" >>"$keep/cases"
      grep "^$i " "$work/sources" >>"$keep/sources"
    fi
  fi
done < <(sort -n "$work/results")

statuses=""
for s in $(printf '%s\n' "${!by_status[@]}" | sort -n); do statuses+=" $s:${by_status[$s]}"; done
echo "robustness: $total cases (seed $seed, each run twice): $signals signals, $hangs hangs (> ${hang} s)," \
     "$internal internal errors, $differ reruns differ; exit statuses (first run):$statuses"
[ "$total" -eq "$n" ] && [ $((signals + hangs + internal + differ)) -eq 0 ]
