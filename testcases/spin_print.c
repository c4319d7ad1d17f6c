// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * N CPUs print K lines each in turn under one lock, or meet at a barrier.
 *
 * cmdline: lock=tas|ticket|barrier (default tas), lines=K (default 20),
 * work=W (default 50: a short register-only compute outside the lock
 * between two lines / rounds).
 *
 * Every online CPU takes part, the BSP included: the BSP posts the worker to
 * each AP (smp_run_on), opens a start gate and runs the worker itself.
 *
 *   tas     the library's test-and-test-and-set spinlock (lib/spinlock.h);
 *           each CPU loops K times: lock; print "cpu C line I"; unlock.
 *   ticket  a ticket lock: LOCK XADD takes a ticket, the holder's release
 *           is now_serving++. FIFO: every waiter gets its turn.
 *   barrier a sense-reversing barrier, R = K rounds: in round r each CPU
 *           adds r * (C + 1) to a shared total with LOCK XADD, then waits at
 *           the barrier; after it the total must include every CPU's round-r
 *           share. The BSP checks the final total.
 *
 * Under the lock (tas, ticket) each line also bumps a shared counter with a
 * plain load and a later plain store, so a lock that let two CPUs in would
 * lose counts; the final count must be N * K.
 *
 * At the end every CPU counts itself finished (LOCK XADD) and the BSP waits
 * for all, then prints
 *   spin_print: lock=L cpus=N lines=K total=T ok|FAIL
 * and reports PASS/FAIL (exit 0 / 1 through isa-debug-exit, lib/report.h).
 *
 * THE WAIT-LOOP RULE (every spin in this file, and lib/spinlock.h's TAS
 * wait): the instructions between two PAUSEs execute only loads, compares
 * and the conditional branch - no store, no I/O, no call, no CPUID/RDMSR -
 * and leave every register exactly as the previous iteration left it. So
 * an emulator can prove the loop is at a fixed point (nothing changes until
 * another CPU stores to the watched line) and skip it instead of running
 * it. For the same reason no wait here is bounded by an iteration count
 * (a counter would change a register every iteration): a CPU that never
 * arrives hangs the guest, and the test's timeout catches that.
 */
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/spinlock.h"
#include "lib/start.h"
#include "lib/string.h"

#define DEFAULT_LINES	20u
#define DEFAULT_WORK	50u

enum mode { MODE_TAS, MODE_TICKET, MODE_BARRIER };
static const char *const mode_names[] = { "tas", "ticket", "barrier" };

static enum mode mode = MODE_TAS;
static uint32_t lines = DEFAULT_LINES, work = DEFAULT_WORK;
static unsigned ncpus;			/* CPUs taking part */

/* Each shared word on its own 64-byte line. */
#define LINE __attribute__((aligned(64)))

static spinlock_t tas_lock LINE = SPINLOCK_INIT;
static struct {
	volatile uint32_t next_ticket LINE;
	volatile uint32_t now_serving LINE;
} ticket_lock;
static struct {
	volatile uint32_t count LINE;	/* arrivals in this episode */
	volatile uint32_t sense LINE;	/* flips when the last one arrives */
} barrier;

static volatile uint32_t go LINE;		/* start gate, opened by the BSP */
static volatile uint32_t finished LINE;	/* CPUs done with their K lines */
static volatile uint32_t printed LINE;	/* lines, counted under the lock */
static volatile uint32_t total LINE;	/* barrier sum (LOCK XADD) */
static volatile uint32_t late LINE;	/* barrier rounds that saw a short total */
static volatile uint32_t mine[SMP_MAX_CPUS];	/* lines per CPU */

/*
 * Waits until *p == v. The whole loop is
 *	1: pause
 *	2: cmp %reg, (mem)
 *	   jne 1b
 * one load and compare per PAUSE; %reg, the address and the flags it sets
 * are the same every iteration (the wait-loop rule above).
 */
static inline void spin_until_eq(const volatile uint32_t *p, uint32_t v)
{
	__asm__ volatile("jmp 2f\n"
			 "1:\tpause\n"
			 "2:\tcmpl %1, %0\n\t"
			 "jne 1b"
			 : : "m"(*p), "r"(v) : "memory", "cc");
}

static inline uint32_t fetch_add(volatile uint32_t *p, uint32_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);	/* LOCK XADD */
}

static void ticket_lock_acquire(void)
{
	uint32_t my = fetch_add(&ticket_lock.next_ticket, 1);

	spin_until_eq(&ticket_lock.now_serving, my);
}

/* Only the holder writes now_serving, and x86 does not reorder a store with
 * earlier loads or stores (SDM Vol. 3A 9.2.2): a plain increment releases. */
static void ticket_lock_release(void)
{
	__asm__ volatile("" ::: "memory");
	ticket_lock.now_serving = ticket_lock.now_serving + 1;
}

/* Sense-reversing barrier: local_sense is this CPU's own copy. */
static void barrier_wait(uint32_t *local_sense)
{
	uint32_t s = *local_sense ^ 1;

	*local_sense = s;
	if (fetch_add(&barrier.count, 1) == ncpus - 1) {
		barrier.count = 0;	/* before the flip: nobody arrives yet */
		__asm__ volatile("" ::: "memory");
		barrier.sense = s;
	} else {
		spin_until_eq(&barrier.sense, s);
	}
}

/* A few register-only steps, kept by the compiler through the asm barrier. */
static void compute(uint32_t n, uint32_t seed)
{
	uint32_t h = seed;

	for (uint32_t i = 0; i < n; i++) {
		h = h * 0x01000193u + i;
		__asm__ volatile("" : "+r"(h));
	}
}

static void one_line(unsigned cpu, uint32_t i)
{
	uint32_t v = printed;

	/* printf, not smp_printf: we already hold the lock that orders lines,
	 * and nothing else prints while the workers run. */
	printf("cpu %u line %u\n", cpu, i);
	printed = v + 1;
	mine[cpu]++;
}

static void worker(unsigned cpu)
{
	uint32_t sense = 0;

	spin_until_eq(&go, 1);
	for (uint32_t i = 0; i < lines; i++) {
		switch (mode) {
		case MODE_TAS:
			spin_lock(&tas_lock);
			one_line(cpu, i);
			spin_unlock(&tas_lock);
			break;
		case MODE_TICKET:
			ticket_lock_acquire();
			one_line(cpu, i);
			ticket_lock_release();
			break;
		case MODE_BARRIER: {
			uint32_t r = i + 1;

			fetch_add(&total, r * (cpu + 1));
			barrier_wait(&sense);
			/* Every share of rounds 1..r is in (later rounds may be
			 * adding already): total >= sum(1..r) * sum(1..N). */
			if (total < r * (r + 1) / 2 * (ncpus * (ncpus + 1) / 2))
				fetch_add(&late, 1);
			mine[cpu]++;
			break;
		}
		}
		compute(work, cpu + i);
	}
	fetch_add(&finished, 1);
}

static void ap_worker(void *arg)
{
	worker(*(unsigned *)arg);
}

int main(const struct multiboot_info *mbi)
{
	static unsigned index[SMP_MAX_CPUS];
	char name[16] = "tas";
	const char *why;

	(void)mbi;
	if (cmdline_uint("lines", &lines) == CMDLINE_INVALID || lines == 0 ||
	    cmdline_uint("work", &work) == CMDLINE_INVALID) {
		report("spin_print.cmdline", false, "lines= wants a number > 0, work= a number");
		return report_summary();
	}
	cmdline_str("lock", name, sizeof(name));
	if (!strcmp(name, "tas"))
		mode = MODE_TAS;
	else if (!strcmp(name, "ticket"))
		mode = MODE_TICKET;
	else if (!strcmp(name, "barrier"))
		mode = MODE_BARRIER;
	else {
		report("spin_print.cmdline", false, "lock=%s: want tas, ticket or barrier", name);
		return report_summary();
	}
	why = smp_init();
	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	smp_boot_aps(NULL);
	ncpus = 1;
	for (unsigned i = 1; i < smp_ncpus; i++)
		if (smp_cpus[i].online)
			ncpus++;
	/* Post the worker to every AP; they wait at the gate. */
	for (unsigned i = 1; i < smp_ncpus; i++) {
		index[i] = i;
		if (smp_cpus[i].online && !smp_run_on(i, ap_worker, &index[i])) {
			report("spin_print.start", false, "CPU %u did not take its work", i);
			return report_summary();
		}
	}
	__asm__ volatile("" ::: "memory");
	go = 1;
	worker(0);
	spin_until_eq(&finished, ncpus);

	bool ok = true;
	uint32_t want, got;

	for (unsigned i = 0; i < smp_ncpus; i++)
		if (smp_cpus[i].online && mine[i] != lines)
			ok = false;
	if (mode == MODE_BARRIER) {
		got = total;
		want = lines * (lines + 1) / 2 * (ncpus * (ncpus + 1) / 2);
		ok = ok && late == 0;
	} else {
		got = printed;
		want = ncpus * lines;
	}
	ok = ok && got == want;
	printf("spin_print: lock=%s cpus=%u lines=%u total=%u %s\n",
	       mode_names[mode], ncpus, lines, got, ok ? "ok" : "FAIL");
	report("spin_print.total", ok,
	       "total %u, expected %u; %u barrier rounds saw a short total",
	       got, want, late);
	return report_summary();
}
