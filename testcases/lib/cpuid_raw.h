// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Prints this CPU's CPUID leaves in Debian `cpuid -r` format (the lines
 * under a "CPU n:" header, which the caller prints), so that `cpuid -f FILE`
 * decodes a serial log and dumps from QEMU, topolab and real machines can be
 * diffed line by line:
 *    0x%08x 0x%02x: eax=0x%08x ebx=0x%08x ecx=0x%08x edx=0x%08x
 * Basic leaves 0..max, then 0x80000000..max extended, with the subleaves
 * cpuid -r walks (4, 7, 0xB, 0xD, 0x12, 0x14, 0x17, 0x18, 0x1F, 0x8000001D).
 * Uses plain printf: with several CPUs, the caller makes sure only one
 * prints at a time.
 */
#ifndef LIB_CPUID_RAW_H
#define LIB_CPUID_RAW_H

void cpuid_raw_dump(void);

#endif
