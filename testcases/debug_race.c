// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest for the debugger's tests (tests/gdb/, docs/debugging.md): small,
 * deterministic, and with symbols worth stopping at.
 *   - race: every CPU stores its own index into race_winner, RACE_TURNS
 *     times, all at once (race_store). The last store wins; which CPU made
 *     it depends on the schedule alone, so topolab gives the same winner in
 *     every run, and a watchpoint plus reverse-continue finds who wrote it
 *     last, and where.
 *   - ipi: the BSP sends one fixed IPI (IPI_VECTOR) to each AP in turn;
 *     ipi_handler counts it in ipi_seen[cpu].
 * It prints "race winner: cpu N" and one "ipi: cpu N saw K" per AP, then
 * exits through isa-debug-exit with the report's verdict.
 */
#include "lib/apic.h"
#include "lib/idt.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

#define RACE_TURNS	1000
#define IPI_VECTOR	0x40
#define WAIT_TICKS	200000000ull

volatile uint32_t race_winner = 0xffffffffu;
volatile uint32_t race_done;
volatile uint32_t ipi_seen[SMP_MAX_CPUS];

/* Out of line, so that a breakpoint on it stops every CPU that races. */
__attribute__((noinline)) void race_store(uint32_t cpu)
{
	for (unsigned turn = 0; turn < RACE_TURNS; turn++)
		race_winner = cpu;
}

static void race(void *arg)
{
	(void)arg;
	race_store((uint32_t)smp_cpu_index());
	__atomic_fetch_add(&race_done, 1, __ATOMIC_SEQ_CST);
}

__attribute__((noinline)) void ipi_handler(struct irq_frame *f)
{
	(void)f;
	int cpu = smp_cpu_index();

	if (cpu >= 0)
		ipi_seen[cpu]++;
	apic_eoi();
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	const char *why = smp_init();

	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	idt_set_handler(IPI_VECTOR, ipi_handler);
	smp_boot_aps(NULL);
	irq_enable();

	bool started = true;

	for (unsigned i = 1; i < smp_ncpus; i++)
		if (smp_cpus[i].online)
			started &= smp_run_on(i, race, NULL);
	race(NULL);
	report("race.all_done", started && wait_until_equal(&race_done, smp_online, tsc_after(WAIT_TICKS)),
	       "%u of %u CPUs finished the race", race_done, smp_online);
	printf("race winner: cpu %u\n", race_winner);

	for (unsigned i = 1; i < smp_ncpus; i++) {
		if (!smp_cpus[i].online)
			continue;
		bool sent = apic_send_ipi(smp_cpus[i].apic_id, ICR_FIXED | ICR_ASSERT | IPI_VECTOR);

		report("ipi.delivered", sent && wait_until_equal(&ipi_seen[i], 1, tsc_after(WAIT_TICKS)),
		       "cpu %u saw %u IPIs", i, ipi_seen[i]);
		printf("ipi: cpu %u saw %u\n", i, ipi_seen[i]);
	}
	return report_summary();
}
