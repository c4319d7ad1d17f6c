// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Dumps the boot CPU's CPUID leaves in Debian `cpuid -r` format, so that
 * `cpuid -f FILE` decodes the serial log and dumps from QEMU, topolab and
 * real machines can be diffed line by line. The enumeration is in
 * lib/cpuid_raw.c (smp_cpuid_dump uses it for every CPU).
 */
#include "lib/cpuid_raw.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

int main(const struct multiboot_info *mbi)
{
	printf("CPU 0:\n");
	cpuid_raw_dump();
	return EXIT_PASS;
}
