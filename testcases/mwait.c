// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * MONITOR/MWAIT and PAUSE (SDM Vol. 2B MONITOR, MWAIT, PAUSE; Vol. 3A 9.10.4
 * "MONITOR/MWAIT Instruction"). CPU 1 arms MONITOR on a 64-byte line of its
 * own and MWAITs; CPU 0 waits DELAY_TSC cycles (so CPU 1 is parked by then)
 * and wakes it one way per mode:
 *
 * cmdline: mode=store | masked | irq_break | sti_mwait | nmi | pause=N
 *   store      CPU 1, IF=0, MWAIT EAX=0 (C1) ECX=0 until a flag in the
 *              monitored line changes; CPU 0 stores the flag. Then the other
 *              way round: CPU 0 (the BSP) waits, CPU 1 stores
 *   masked     as store, but CPU 0 first sends a fixed IPI: with IF=0 and
 *              ECX[0]=0 it is no break event (SDM Vol. 2B MWAIT), so CPU 1
 *              sleeps on until the store, and the IPI is still pending, its
 *              handler not run, until CPU 1 executes STI
 *   irq_break  CPU 1, IF=0, MWAIT ECX[0]=1 ("treat interrupts as break
 *              events even if masked"); CPU 0 sends a fixed IPI. CPU 1 must
 *              go on after MWAIT with IF still 0 and the IPI still in IRR
 *              (its handler not run), and take it once it executes STI
 *   sti_mwait  CPU 1 does "sti; mwait" (ECX[0]=1): STI's one-instruction
 *              shadow keeps an IPI that raced the check pending until MWAIT,
 *              which it ends; the handler's return address must be the
 *              instruction after MWAIT
 *   nmi        CPU 1, IF=0, MWAIT ECX=0; CPU 0 sends an NMI, whose handler
 *              runs and ends the MWAIT
 *   pause=N    CPU 0 alone (no AP is started, the SMP library is not used,
 *              so nothing else executes PAUSE) runs N PAUSE instructions;
 *              the emulator's per-vCPU PAUSE count must then read N
 *
 * The MWAIT modes need CPUID.1:ECX[3] (topolab and QEMU: -cpu MODEL,+monitor)
 * and a second CPU; without either they FAIL saying so. Every wait loops on
 * its condition, re-arming MONITOR first: the SDM allows MWAIT to end for
 * other reasons (a spurious wakeup), so the number of MWAITs a wake took is
 * printed, not checked.
 *
 * QEMU 7.2's TCG (target/i386/tcg/misc_helper.c, helper_mwait) raises #GP
 * for any ECX != 0 and, with more than one CPU, treats MWAIT as PAUSE (it
 * returns at once): store, masked and nmi pass there by spinning,
 * irq_break and sti_mwait SKIP.
 */
#include "lib/apic.h"
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

#define CPUID_1_ECX_MONITOR	(1u << 3)
#define MWAIT_HINT_C1		0x00	/* EAX[7:4] = 0: C1, no sub-state */
#define MWAIT_ECX_IRQ_BREAK	(1u << 0)	/* SDM Vol. 2B MWAIT, Table 4-10 */
#define EFLAGS_IF		(1u << 9)

#define TEST_VECTOR	0x40
/* How long CPU 0 lets CPU 1 sit in MWAIT before it wakes it (and the other
 * way round): 10 ms at topolab's 2 GHz TSC, far longer than a CPU needs to
 * park. Under QEMU each vCPU is a host thread: at 0.5 ms, a loaded host
 * that held the waiter's thread back let the store come before its first
 * MWAIT ("nothing tested"). */
#define DELAY_TSC	20000000u
#define ARMED_TICKS	1000000000ull	/* bounded wait for CPU 1 to start */

/* The monitored line: 64 bytes, alone in its line, so the other variables
 * below (written by both CPUs) never touch it. */
static struct {
	volatile uint32_t flag;
	uint32_t pad[15];
} line __attribute__((aligned(64)));

static volatile uint32_t armed;		/* CPU 1 is about to MWAIT */
static volatile uint32_t mwaits;	/* MWAITs CPU 1 executed */
static volatile uint32_t hits, nmis;	/* handler runs on CPU 1 */
static volatile uintptr_t hit_ip;	/* where the TEST_VECTOR handler interrupted */
static volatile uint32_t hit_flags;
/* irq_break: what CPU 1 saw right after MWAIT, before STI. */
static volatile uint32_t flags_after, pending_after, hits_before_sti,
	hits_after_sti;
static volatile uint32_t seen;		/* store: the flag CPU 1 read */
static volatile uint64_t waited;	/* TSC cycles CPU 1 spent waiting */

/* Arms the monitor on p's line: DS:rAX, ECX = 0 (no extensions), EDX = 0. */
static inline void monitor(const volatile void *p)
{
	__asm__ volatile("monitor" : : "a"(p), "c"(0), "d"(0) : "memory");
}

static inline void mwait(uint32_t hint, uint32_t ext)
{
	__asm__ volatile("mwait" : : "a"(hint), "c"(ext) : "memory");
}

/* "sti; mwait": the label names the instruction after MWAIT, where an
 * interrupt taken in STI's shadow must return (noinline: one copy). */
extern const char mwait_sti_resume[];
static __attribute__((noinline)) void sti_mwait(uint32_t hint, uint32_t ext)
{
	__asm__ volatile("sti\n\t"
			 "mwait\n"
			 ".globl mwait_sti_resume\n"
			 "mwait_sti_resume:\n\t"
			 "cli"
			 : : "a"(hint), "c"(ext) : "memory");
}

static inline uint32_t read_flags(void)
{
	uintptr_t f;

	__asm__ volatile("pushf; pop %0" : "=r"(f) : : "memory");
	return (uint32_t)f;
}

/* The vector's bit in this CPU's IRR (SDM 10.8.4: 8 registers of 32 bits). */
static bool irr_pending(unsigned vector)
{
	return apic_read(APIC_IRR + 0x10 * (vector / 32)) & (1u << (vector % 32));
}

static void tsc_delay(uint64_t cycles)
{
	uint64_t t0 = rdtsc();

	while (rdtsc() - t0 < cycles)
		__asm__ volatile("pause" ::: "memory");
}

static void test_handler(struct irq_frame *f)
{
	hits++;
	hit_ip = (uintptr_t)f->ip;
	hit_flags = (uint32_t)f->flags;
	apic_eoi();
}

static void nmi_handler(struct irq_frame *f)
{
	nmis++;		/* NMIs are not in ISR: no EOI (SDM 10.8.5) */
}

/* ---- CPU 1's side: each runs through smp_run_on, entered with IF=1 ---- */

static void store_waiter(void *arg)
{
	irq_disable();
	armed = 1;
	uint64_t t0 = rdtsc();

	/* SDM 9.10.4: arm, re-check, then wait, so a store between the check
	 * and MONITOR is not slept through. */
	while (!line.flag) {
		monitor(&line);
		if (line.flag)
			break;
		mwait(MWAIT_HINT_C1, 0);
		mwaits++;
	}
	waited = rdtsc() - t0;
	seen = line.flag;
}

/* CPU 1, for CPU 0's wait: once CPU 0 is about to MWAIT, wait, store. */
static void store_setter(void *arg)
{
	if (!wait_until_changed(&armed, 0, tsc_after(ARMED_TICKS)))
		return;
	tsc_delay(DELAY_TSC);
	line.flag = 2;
}

static void masked_waiter(void *arg)
{
	store_waiter(arg);
	pending_after = irr_pending(TEST_VECTOR);
	hits_before_sti = hits;
	__asm__ volatile("sti; nop; cli" ::: "memory");
	hits_after_sti = hits;
}

static void irq_break_waiter(void *arg)
{
	irq_disable();
	armed = 1;
	/* IF=0 all along: the IPI can only show as its IRR bit. */
	while (!irr_pending(TEST_VECTOR) && !hits) {
		monitor(&line);
		if (irr_pending(TEST_VECTOR))
			break;
		mwait(MWAIT_HINT_C1, MWAIT_ECX_IRQ_BREAK);
		mwaits++;
	}
	flags_after = read_flags();
	pending_after = irr_pending(TEST_VECTOR);
	hits_before_sti = hits;
	/* The interrupt is recognised after the NOP in STI's shadow. */
	__asm__ volatile("sti; nop; cli" ::: "memory");
	hits_after_sti = hits;
}

static void sti_mwait_waiter(void *arg)
{
	irq_disable();
	armed = 1;
	while (!hits) {
		monitor(&line);
		sti_mwait(MWAIT_HINT_C1, MWAIT_ECX_IRQ_BREAK);	/* returns with IF=0 */
		mwaits++;
	}
}

static void nmi_waiter(void *arg)
{
	irq_disable();
	armed = 1;
	/* The NMI is sent DELAY_TSC after armed: CPU 1 is in MWAIT by then,
	 * not between the check and MWAIT (where its handler's store, by this
	 * CPU itself, would not end the MWAIT that follows). */
	while (!nmis) {
		monitor(&line);
		if (nmis)
			break;
		mwait(MWAIT_HINT_C1, 0);
		mwaits++;
	}
}

/* ---- CPU 0's side ---- */

/* Starts fn on CPU 1 and waits until it is about to MWAIT. */
static bool start_waiter(const char *mode, void (*fn)(void *))
{
	armed = 0;
	mwaits = 0;
	return report("mwait.started", smp_run_on(1, fn, NULL) &&
		      wait_until_changed(&armed, 0, tsc_after(ARMED_TICKS)),
		      "%s: CPU 1 did not start its wait", mode);
}

static bool finished(const char *name)
{
	return report(name, smp_wait_done(1),
		      "CPU 1 never came back from MWAIT: %u MWAITs done, "
		      "hits %u, NMIs %u", mwaits, hits, nmis);
}

static void test_store(void)
{
	if (!start_waiter("store", store_waiter))
		return;
	tsc_delay(DELAY_TSC);
	line.flag = 1;
	if (!finished("store.woken"))
		return;
	report("store.saw_flag", seen == 1, "CPU 1 read the flag as %u", seen);
	report("store.parked", mwaits >= 1,
	       "CPU 1 saw the flag before its first MWAIT: nothing tested");
	printf("mwait: store: CPU 1 woke after %u MWAIT%s, %llu TSC cycles\n",
	       mwaits, mwaits == 1 ? "" : "s", (unsigned long long)waited);

	/* The BSP's turn: CPU 1 is idle again, nothing else reads the line. */
	line.flag = 0;
	armed = 0;
	mwaits = 0;
	if (!report("store.bsp.started", smp_run_on(1, store_setter, NULL),
		    "CPU 1 did not take the work"))
		return;
	store_waiter(NULL);	/* IF=0 while it waits */
	irq_enable();
	report("store.bsp.woken", seen == 2 && smp_wait_done(1),
	       "CPU 0 read the flag as %u", seen);
	report("store.bsp.parked", mwaits >= 1,
	       "CPU 0 saw the flag before its first MWAIT: nothing tested");
	printf("mwait: store: CPU 0 woke after %u MWAIT%s, %llu TSC cycles\n",
	       mwaits, mwaits == 1 ? "" : "s", (unsigned long long)waited);
}

static void test_masked(void)
{
	if (!start_waiter("masked", masked_waiter))
		return;
	tsc_delay(DELAY_TSC);
	if (!report("masked.sent", apic_send_ipi(smp_cpus[1].apic_id,
						 ICR_FIXED | ICR_ASSERT |
						 TEST_VECTOR),
		    "ICR delivery status never cleared"))
		return;
	tsc_delay(DELAY_TSC);
	uint32_t mwaits_before_store = mwaits;

	line.flag = 1;
	if (!finished("masked.woken"))
		return;
	report("masked.saw_flag", seen == 1, "CPU 1 read the flag as %u", seen);
	report("masked.handler_not_run", hits_before_sti == 0,
	       "the handler ran %u times while IF was 0", hits_before_sti);
	report("masked.still_pending", pending_after,
	       "IRR bit of vector 0x%x clear after MWAIT", TEST_VECTOR);
	report("masked.taken_after_sti", hits_after_sti == 1,
	       "the handler ran %u times after STI, expected 1",
	       hits_after_sti);
	printf("mwait: masked: CPU 1 did %u MWAIT%s before the store, %u in "
	       "all\n", mwaits_before_store, mwaits_before_store == 1 ? "" : "s",
	       mwaits);
}

static void test_irq_break(void)
{
	if (!start_waiter("irq_break", irq_break_waiter))
		return;
	tsc_delay(DELAY_TSC);
	if (!report("irq_break.sent", apic_send_ipi(smp_cpus[1].apic_id,
						    ICR_FIXED | ICR_ASSERT |
						    TEST_VECTOR),
		    "ICR delivery status never cleared"))
		return;
	if (!finished("irq_break.woken"))
		return;
	report("irq_break.if_still_clear", !(flags_after & EFLAGS_IF),
	       "EFLAGS 0x%x after MWAIT: IF set", flags_after);
	report("irq_break.handler_not_run", hits_before_sti == 0,
	       "the handler ran %u times while IF was 0", hits_before_sti);
	report("irq_break.still_pending", pending_after,
	       "IRR bit of vector 0x%x clear after MWAIT", TEST_VECTOR);
	report("irq_break.taken_after_sti", hits_after_sti == 1,
	       "the handler ran %u times after STI, expected 1",
	       hits_after_sti);
	printf("mwait: irq_break: CPU 1 woke after %u MWAIT%s\n", mwaits,
	       mwaits == 1 ? "" : "s");
}

static void test_sti_mwait(void)
{
	if (!start_waiter("sti_mwait", sti_mwait_waiter))
		return;
	tsc_delay(DELAY_TSC);
	if (!report("sti_mwait.sent", apic_send_ipi(smp_cpus[1].apic_id,
						    ICR_FIXED | ICR_ASSERT |
						    TEST_VECTOR),
		    "ICR delivery status never cleared"))
		return;
	if (!finished("sti_mwait.woken"))
		return;
	report("sti_mwait.handler_once", hits == 1,
	       "the handler ran %u times, expected 1", hits);
	report("sti_mwait.returns_past_mwait",
	       hit_ip == (uintptr_t)mwait_sti_resume,
	       "the interrupt returned to 0x%lx, expected 0x%lx (the "
	       "instruction after MWAIT)", (unsigned long)hit_ip,
	       (unsigned long)(uintptr_t)mwait_sti_resume);
	report("sti_mwait.if_set_in_frame", hit_flags & EFLAGS_IF,
	       "the interrupted EFLAGS 0x%x has IF clear", hit_flags);
	printf("mwait: sti_mwait: CPU 1 woke after %u MWAIT%s\n", mwaits,
	       mwaits == 1 ? "" : "s");
}

static void test_nmi(void)
{
	if (!start_waiter("nmi", nmi_waiter))
		return;
	tsc_delay(DELAY_TSC);
	/* SDM 10.6.1: the vector is ignored for NMI; 0 by convention. */
	if (!report("nmi.sent", apic_send_ipi(smp_cpus[1].apic_id,
					      ICR_NMI | ICR_ASSERT),
		    "ICR delivery status never cleared"))
		return;
	if (!finished("nmi.woken"))
		return;
	report("nmi.handler_once", nmis == 1,
	       "the NMI handler ran %u times, expected 1", nmis);
	printf("mwait: nmi: CPU 1 woke after %u MWAIT%s\n", mwaits,
	       mwaits == 1 ? "" : "s");
}

/* lib/string.h has no strncmp. */
static bool starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}

static int run_pause(uint32_t n)
{
	volatile uint32_t done = 0;
	uint64_t t0 = rdtsc();

	for (uint32_t i = 0; i < n; i++) {
		__asm__ volatile("pause");
		done++;
	}
	uint64_t t1 = rdtsc();

	printf("mwait: pause: %u PAUSE instructions on CPU 0, %llu TSC cycles\n",
	       done, (unsigned long long)(t1 - t0));
	report("pause.executed", done == n, "%u of %u PAUSEs", done, n);
	return report_summary();
}

int main(const struct multiboot_info *mbi)
{
	char mode[32];
	uint32_t n;

	(void)mbi;
	if (!cmdline_str("mode", mode, sizeof(mode))) {
		report("mwait.cmdline", false, "give mode=store|masked|"
		       "irq_break|sti_mwait|nmi|pause=N");
		return report_summary();
	}
	/* "mode=pause=N": the value after the first '='. */
	if (starts_with(mode, "pause=")) {
		char *p = mode + 6;

		n = 0;
		if (!*p) {
			report("mwait.cmdline", false, "pause=N wants a number");
			return report_summary();
		}
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || n > 400000000u) {
				report("mwait.cmdline", false, "pause=N wants "
				       "a decimal number up to 4000000000");
				return report_summary();
			}
			n = n * 10 + (uint32_t)(*p - '0');
		}
		return run_pause(n);
	}
	bool is_store = !strcmp(mode, "store"), is_masked = !strcmp(mode, "masked"),
	     is_irq = !strcmp(mode, "irq_break"), is_sti = !strcmp(mode, "sti_mwait"),
	     is_nmi = !strcmp(mode, "nmi");

	if (!is_store && !is_masked && !is_irq && !is_sti && !is_nmi) {
		report("mwait.cmdline", false, "unknown mode '%s': give "
		       "mode=store|masked|irq_break|sti_mwait|nmi|pause=N", mode);
		return report_summary();
	}
	printf("mwait: mode=%s\n", mode);
	if (!report("mwait.monitor_present",
		    cpuid(1, 0).ecx & CPUID_1_ECX_MONITOR,
		    "MONITOR/MWAIT absent: CPUID.1:ECX[3] is clear; "
		    "run with -cpu MODEL,+monitor"))
		return report_summary();

	const char *why = smp_init();

	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	idt_set_handler(TEST_VECTOR, test_handler);
	idt_set_handler(VEC_NMI, nmi_handler);
	smp_boot_aps(NULL);
	if (!report("mwait.two_cpus", smp_ncpus >= 2 && smp_cpus[1].online,
		    "needs CPU 1 online (-smp 2 or more); %u of %u CPUs "
		    "online", smp_online, smp_ncpus))
		return report_summary();
	irq_enable();

	if ((is_irq || is_sti) && cpuid_is_qemu_tcg()) {
		report_skip(mode, "QEMU 7.2's TCG raises #GP for MWAIT with "
			    "ECX != 0 (helper_mwait) and, with more than one "
			    "CPU, runs MWAIT as PAUSE");
		return report_summary();
	}
	if (is_store)
		test_store();
	else if (is_masked)
		test_masked();
	else if (is_irq)
		test_irq_break();
	else if (is_sti)
		test_sti_mwait();
	else
		test_nmi();
	return report_summary();
}
