#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The hand-made `cpuid -r` dumps of tests/check.sh: topolab's own
leaves for a machine, perturbed the way another VMM got them wrong, one
known-bad pattern per file. Rewrites the fixtures beside this script.

Usage: make_fixtures.py TOPOLAB
"""
import os
import re
import subprocess
import sys

LINE = re.compile(r"^   0x([0-9a-f]{8}) 0x([0-9a-f]{2}): eax=0x([0-9a-f]{8}) ebx=0x([0-9a-f]{8}) "
                  r"ecx=0x([0-9a-f]{8}) edx=0x([0-9a-f]{8})$")


def dump(topolab, smp, cpu):
    text = subprocess.run([topolab, "cpuid", "-smp", smp, "-cpu", cpu, "--format", "raw"], check=True,
                          capture_output=True, text=True).stdout
    cpus, current = [], None
    for line in text.splitlines():
        if line.startswith("CPU "):
            current = {}
            cpus.append(current)
            continue
        m = LINE.match(line)
        current[(int(m.group(1), 16), int(m.group(2), 16))] = [int(g, 16) for g in m.groups()[2:]]
    return cpus


def write(name, comment, cpus):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad", name), "w") as f:
        f.write(f"# {comment}\n# made by tests/check/make_fixtures.py\n")
        for i, leaves in enumerate(cpus):
            f.write(f"CPU {i}:\n")
            for (leaf, sub), r in sorted(leaves.items()):
                f.write(f"   0x{leaf:08x} 0x{sub:02x}: eax=0x{r[0]:08x} ebx=0x{r[1]:08x} ecx=0x{r[2]:08x} edx=0x{r[3]:08x}\n")


def field(value, hi, lo, new):
    mask = ((1 << (hi - lo + 1)) - 1) << lo
    return (value & ~mask) | ((new << lo) & mask)


def main():
    topolab = sys.argv[1]
    cpus = dump(topolab, "8,sockets=2,cores=4", "Skylake-Server")
    for c in cpus:
        c[(4, 3)][0] = field(c[(4, 3)][0], 25, 14, 15)  # L3 shared by 16 APIC IDs: both sockets
    write("l3-across-packages.txt", "2 sockets x 4 cores, the L3 said to be shared by 16 APIC IDs", cpus)

    cpus = dump(topolab, "4,cores=4", "Skylake-Server")
    for c in cpus:
        for sub in range(3):
            c[(0xB, sub)][3] = 0  # EDX left 0 (propolis #939)
    write("x2apic-edx-zero.txt", "4 cores, leaf 0xB EDX left 0 on every CPU", cpus)

    cpus = dump(topolab, "4,cores=2,threads=2", "Skylake-Server")
    for c in cpus:
        c[(4, 2)][0] = field(c[(4, 2)][0], 25, 14, 0)  # the L2 private to each thread
    write("smt-private-l2.txt", "2 cores x 2 threads, the L2 private to each thread", cpus)

    cpus = dump(topolab, "4,cores=4", "Skylake-Server")
    for c in cpus:
        c[(0xB, 2)] = [4, 0, 0x202, c[(0xB, 2)][3]]  # a zero count, but a core type
    write("stop-rules.txt", "4 cores, leaf 0xB subleaf 2 with a zero count but level type 2", cpus)

    cpus = dump(topolab, "6,sockets=2,cores=3", "Skylake-Server")
    for i, c in enumerate(cpus):
        for sub in range(3):
            c[(0xB, sub)][3] = i  # dense APIC IDs 0-5, no gap after socket 0
        c[(1, 0)][1] = field(c[(1, 0)][1], 31, 24, i)
    write("dense-apic-ids.txt", "2 sockets x 3 cores numbered 0-5 without the gap the 2-bit core field needs", cpus)

    cpus = dump(topolab, "4,cores=2,threads=2", "EPYC")
    for c in cpus:
        c[(0x8000001E, 0)] = [0, 0, 0, 0]
    write("amd-zero-8000001e.txt", "EPYC, 2 cores x 2 threads, TOPOEXT set but 0x8000001E all zero", cpus)

    cpus = dump(topolab, "4", "Skylake-Server")
    for c in cpus:
        c[(7, 0)][3] |= 1 << 15  # hybrid, with no leaf 0x1A
    write("hybrid-no-1a.txt", "4 CPUs claiming to be hybrid (CPUID.07H:EDX[15]) with a maximum leaf of 0xD", cpus)


if __name__ == "__main__":
    main()
