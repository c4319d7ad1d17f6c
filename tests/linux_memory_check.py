#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a Linux boot's console against the RAM topolab gave it.

    linux_memory_check.py CONSOLE RAM_MIB

- the e820 map Linux prints ("BIOS-e820: [mem A-B] usable") is the pc
  machine's for -m RAM_MIB (docs/machine.md, "Memory map"): RAM to the EBDA,
  RAM from 1 MiB to the end of the RAM below 4 GiB, and from 3.5 GiB up the
  rest from 4 GiB;
- Linux counts exactly those pages as present: the total of its
  "Memory: A/BK available" line is the usable entries' whole pages, less
  page 0, which Linux keeps for itself (trim_bios_range);
- /proc/meminfo's MemTotal (the "topolab-meminfo MemTotal: N kB" line the
  test's wrapper init prints) lies between what Linux had left after its
  boot-time reservations ("... NK reserved") and that total.
Exit 0 with one "ok:" line, or 1 with "FAIL:" lines.
"""
import re
import sys

PAGE = 4096


def expected_usable(ram_mib):
    ram = ram_mib << 20
    low, high = (0xC0000000, ram - 0xC0000000) if ram >= 0xE0000000 else (ram, 0)
    usable = [(0, 0x9FC00), (0x100000, low)]
    if high:
        usable.append((1 << 32, (1 << 32) + high))
    return usable


def main():
    console, ram_mib = sys.argv[1], int(sys.argv[2])
    text = open(console, errors="replace").read()
    failures = []
    usable = [(int(a, 16), int(b, 16) + 1)
              for a, b in re.findall(r"BIOS-e820: \[mem (0x[0-9a-f]+)-(0x[0-9a-f]+)\] usable", text)]
    if usable != expected_usable(ram_mib):
        failures.append("the e820 map's RAM is %s, expected %s" % (
            [(hex(a), hex(b)) for a, b in usable], [(hex(a), hex(b)) for a, b in expected_usable(ram_mib)]))
    pages = sum(b // PAGE - (a + PAGE - 1) // PAGE for a, b in usable)
    memory = re.search(r"Memory: (\d+)K/(\d+)K available .*?(\d+)K reserved", text)
    meminfo = re.search(r"topolab-meminfo MemTotal: +(\d+) kB", text)
    if not memory:
        failures.append('no "Memory: A/BK available (... NK reserved ...)" line')
    elif int(memory.group(2)) != (pages - 1) * PAGE // 1024:
        failures.append("Linux counts %sK present; the e820 map's usable pages less page 0 are %dK" % (
            memory.group(2), (pages - 1) * PAGE // 1024))
    if not meminfo:
        failures.append('no "topolab-meminfo MemTotal:" line')
    elif memory:
        total, present, reserved = int(meminfo.group(1)), int(memory.group(2)), int(memory.group(3))
        if not present - reserved <= total <= present:
            failures.append("MemTotal %d kB is outside [%d, %d] kB (present less boot-time reservations, present)" % (
                total, present - reserved, present))
    if failures:
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("ok: e820 RAM %s; Linux counts %sK present, MemTotal %s kB" % (
        ", ".join("%#x-%#x" % (a, b - 1) for a, b in usable), memory.group(2), meminfo.group(1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
