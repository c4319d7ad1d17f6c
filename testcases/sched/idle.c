// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The idle task's loop (Linux do_idle) with the four idle= choices. It runs
 * with interrupts off except while it waits.
 *
 * Each round clears need_resched, moves the wake list onto the runqueue (a
 * polling or MWAITing CPU is woken by its flag, without the IPI whose
 * handler would do that) and runs schedule() if anything is queued; only
 * otherwise does it wait:
 * - halt: "sti; hlt" after the check with interrupts off: STI's shadow
 *   keeps an IPI that raced the check pending until HLT, which it ends
 *   (Linux default_idle / safe_halt).
 * - poll: set FLAG_POLLING and spin with PAUSE, interrupts on, until there
 *   is work (Linux poll_idle, idle=poll).
 * - mwait: FLAG_POLLING, MONITOR the flags line, re-check, MWAIT with
 *   EAX = 0 (C1) and ECX = 1 with interrupts off, so an interrupt ends it
 *   without being taken, then "sti; nop; cli" takes it (intel_idle's way).
 *   QEMU 7.2's TCG raises #GP for ECX != 0, so there it is Linux's older
 *   mwait_idle: "sti; mwait" with ECX = 0. MWAIT may end for no reason: the
 *   loop re-checks.
 * - haltpoll=NS: poll as above for up to NS of TSC time (from tsc_khz),
 *   then clear FLAG_POLLING, test once more and halt (the guest halt-poll
 *   of the cpuidle-haltpoll driver with a fixed window, no grow/shrink).
 * Clearing FLAG_POLLING is a locked RMW before the final test, and wakers
 * set need_resched with a compare-exchange on the same word, so either the
 * waker sees the CPU polling and the CPU then sees the flag, or the waker
 * sends an IPI (Linux current_clr_polling_and_test).
 */
#include "lib/cpuid.h"
#include "lib/msr.h"

#include "sched/sched.h"

#define CPUID_1_ECX_MONITOR (1u << 3)

bool idle_mode_usable(const char **why)
{
	if (cfg.idle != IDLE_MWAIT)
		return true;
	if (!(cpuid(1, 0).ecx & CPUID_1_ECX_MONITOR)) {
		*why = "idle=mwait needs MONITOR/MWAIT but CPUID.01H:ECX[3] (MONITOR) is clear: "
		       "add +monitor to -cpu";
		return false;
	}
	return true;
}

static bool work_pending(unsigned cpu)
{
	struct rq *rq = cpu_rq(cpu);

	return (cpu_flags[cpu].flags & FLAG_NEED_RESCHED) || rq->nr_queued ||
	       rq->wake_list != NULL;
}

static void set_polling(unsigned cpu)
{
	__atomic_fetch_or(&cpu_flags[cpu].flags, FLAG_POLLING, __ATOMIC_SEQ_CST);
}

static bool clear_polling_and_test(unsigned cpu)
{
	__atomic_fetch_and(&cpu_flags[cpu].flags, ~FLAG_POLLING, __ATOMIC_SEQ_CST);
	return work_pending(cpu);
}

static void idle_halt(unsigned cpu, struct sched_stats *st)
{
	if (work_pending(cpu))
		return;
	st->halts++;
	__asm__ volatile("sti; hlt; cli" ::: "memory");
}

static void idle_poll(unsigned cpu)
{
	set_polling(cpu);
	__asm__ volatile("sti" ::: "memory");
	while (!work_pending(cpu))
		cpu_relax();
	__asm__ volatile("cli" ::: "memory");
	clear_polling_and_test(cpu);
}

static void idle_mwait(unsigned cpu, struct sched_stats *st)
{
	set_polling(cpu);
	while (!work_pending(cpu)) {
		__asm__ volatile("monitor" : : "a"(&cpu_flags[cpu].flags), "c"(0), "d"(0)
				 : "memory");
		if (work_pending(cpu))
			break;
		st->mwaits++;
		if (cfg.mwait_sti) {
			__asm__ volatile("sti; mwait; cli" : : "a"(0), "c"(0) : "memory");
		} else {
			__asm__ volatile("mwait" : : "a"(0), "c"(1) : "memory");
			__asm__ volatile("sti; nop; cli" ::: "memory");
		}
	}
	clear_polling_and_test(cpu);
}

static void idle_haltpoll(unsigned cpu, struct sched_stats *st)
{
	uint64_t window = (uint64_t)cfg.haltpoll_ns * cfg.tsc_khz / 1000000;
	uint64_t start = rdtsc();

	set_polling(cpu);
	__asm__ volatile("sti" ::: "memory");
	while (!work_pending(cpu) && rdtsc() - start < window)
		cpu_relax();
	__asm__ volatile("cli" ::: "memory");
	if (clear_polling_and_test(cpu))
		return;
	st->poll_timeouts++;
	idle_halt(cpu, st);
}

void idle_loop(void)
{
	unsigned cpu = this_cpu();
	struct rq *rq = cpu_rq(cpu);

	rq->started = true;
	for (;;) {
		clear_need_resched(cpu);
		sched_ttwu_pending(rq);
		if (rq->nr_queued) {
			schedule();
			continue;
		}
		rq->stats.idle_entries++;
		switch (cfg.idle) {
		case IDLE_HALT:
			idle_halt(cpu, &rq->stats);
			break;
		case IDLE_POLL:
			idle_poll(cpu);
			break;
		case IDLE_MWAIT:
			idle_mwait(cpu, &rq->stats);
			break;
		case IDLE_HALTPOLL:
			idle_haltpoll(cpu, &rq->stats);
			break;
		}
	}
}
