// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every CPU runs the same integer loop at once: the benchmark of how guest
 * speed holds up as vCPUs are added (tools/bench_smp.sh compares 16 busy
 * vCPUs with 1). The loop keeps its state in registers and loads only, so
 * it measures the emulator's scheduling, not a store path.
 *
 * cmdline: iterations=N per CPU (default 2,000,000).
 */
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"

#define DEFAULT_ITERATIONS 2000000u

static const uint32_t table[16] = {
	0x9e3779b9, 0x7f4a7c15, 0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f, 0x165667b1, 0xd3a2646c, 0xfd7046c5,
	0xb55a4f09, 0x2e5b9b6d, 0x4cf5ad43, 0x7a3b5c2d, 0x1b873593, 0xcc9e2d51, 0xe6546b64, 0x5bd1e995,
};
static uint32_t iterations = DEFAULT_ITERATIONS;
static volatile uint32_t checksums[SMP_MAX_CPUS];

static uint32_t mix(uint32_t seed)
{
	uint32_t h = seed;

	for (uint32_t i = 0; i < iterations; i++)
		h = (h ^ table[(h ^ i) & 15]) * 0x01000193u + (h >> 13);
	return h;
}

static void compute(void *arg)
{
	unsigned cpu = *(unsigned *)arg;

	checksums[cpu] = mix(cpu + 1);
}

int main(const struct multiboot_info *mbi)
{
	static unsigned index[SMP_MAX_CPUS];
	const char *why;

	(void)mbi;
	if (cmdline_uint("iterations", &iterations) == CMDLINE_INVALID) {
		report("cmdline", false, "iterations= is not a number");
		return report_summary();
	}
	why = smp_init();
	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	smp_boot_aps(NULL);
	/* Start every AP, then work on the BSP too, then wait for all. */
	for (unsigned i = 1; i < smp_ncpus; i++) {
		index[i] = i;
		if (smp_cpus[i].online)
			smp_run_on(i, compute, &index[i]);
	}
	index[0] = 0;
	compute(&index[0]);
	bool ok = true;

	for (unsigned i = 1; i < smp_ncpus; i++)
		if (smp_cpus[i].online)
			ok &= smp_wait_done(i);
	uint32_t all = 0;

	for (unsigned i = 0; i < smp_ncpus; i++)
		all ^= checksums[i];
	printf("smp_compute: %u CPUs x %u iterations, checksum 0x%08x\n", smp_ncpus, iterations, all);
	report("compute.all_done", ok, "a CPU did not finish");
	return report_summary();
}
