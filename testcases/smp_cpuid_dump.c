// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every CPU's CPUID leaves in Debian `cpuid -r` format: the BSP brings up
 * all CPUs the MADT lists (lib/smp.h), then each CPU in index order (MADT
 * order, BSP = 0) prints a "CPU n:" header and its own leaves
 * (lib/cpuid_raw.c, as cpuid_dump does for the boot CPU alone).
 *
 * One CPU prints at a time, by construction rather than by luck: the BSP
 * dumps itself, then for each AP posts the dump with smp_run_on (work flag
 * + SMP_WAKE_VECTOR IPI) and waits for that AP's done flag before it posts
 * the next. The dump lines are followed by one PASS/FAIL line (every CPU
 * dumped) and the SUMMARY, which `cpuid -f` and tools/cpuid_diff.py ignore.
 */
#include <stddef.h>

#include "lib/cpuid_raw.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"

static unsigned idx[SMP_MAX_CPUS];
static volatile uint32_t dumped[SMP_MAX_CPUS];

static void dump_this_cpu(void *arg)
{
	unsigned cpu = *(unsigned *)arg;

	printf("CPU %u:\n", cpu);
	cpuid_raw_dump();
	/* The CPU that ran it, as seen by its APIC ID (should be cpu). */
	dumped[cpu] = (uint32_t)(smp_cpu_index() + 1);
}

int main(const struct multiboot_info *mbi)
{
	const char *why = smp_init();
	unsigned ok = 0, first_bad = 0;
	const char *bad_why = NULL;

	(void)mbi;
	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	smp_boot_aps(NULL);
	for (unsigned i = 0; i < smp_ncpus; i++) {
		const char *err = NULL;

		idx[i] = i;
		if (!smp_cpus[i].online)
			err = "did not come online";
		else if (!smp_run_on(i, dump_this_cpu, &idx[i]) || !smp_wait_done(i))
			err = "did not run its dump in time";
		else if (dumped[i] != i + 1)
			err = "the dump ran on another CPU";
		if (!err)
			ok++;
		else if (!bad_why) {
			bad_why = err;
			first_bad = i;
		}
	}
	report("smp_cpuid_dump.all_cpus", ok == smp_ncpus,
	       "%u of %u CPUs dumped; CPU %u (APIC ID 0x%x) %s", ok, smp_ncpus,
	       first_bad, smp_cpus[first_bad].apic_id, bad_why);
	return report_summary();
}
