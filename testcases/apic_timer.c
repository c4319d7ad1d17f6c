// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The local APIC timer on the boot CPU (SDM Vol. 3A 10.5.4), with divide
 * by 1, in xAPIC mode and again in x2APIC mode when CPUID.1:ECX[21] is set:
 *   calibrate      the timer's rate is not architectural (CPUID 0x15/0x16
 *                  are absent here), so, as Linux's calibrate_APIC_clock,
 *                  count how far the timer (masked, one-shot, initial count
 *                  0xFFFFFFFF) runs down over a fixed TSC interval
 *   oneshot        fires once, not before the programmed time (t0 + count
 *                  converted to TSC cycles) and within a tolerance after it;
 *                  the current count then reads 0 and nothing more comes
 *   periodic       PERIODS interrupts, the k-th at t0 + k * period, no drift
 *   stop           writing initial count 0 stops a periodic timer (and
 *                  cancels an armed one-shot): no further interrupt, current
 *                  count 0
 *   masked         a masked one-shot still counts down to 0 but delivers
 *                  nothing, not even when unmasked afterwards
 *   tsc_deadline   with CPUID.1:ECX[24] (SKIP otherwise: QEMU's TCG has no
 *                  TSC-deadline mode; topolab's -cpu takes +tsc-deadline):
 *                  IA32_TSC_DEADLINE (MSR 0x6E0) fires at the deadline, then
 *                  reads 0 (SDM 10.5.4.1); writing 0 disarms it
 * Each interrupt's handler reads the TSC first thing, then EOIs.
 *
 * Tolerances: topolab's clocks are virtual and exact (TSC and timer both
 * follow retired instructions), so there an interrupt must come within
 * TIGHT_LATE_TSC cycles of its time. That is the timer's own precision, run
 * with `--cost none`: topolab's default cost model adds a KVM-like host
 * wakeup latency (about 1 us) to every timer interrupt that wakes a halted
 * vCPU, which this test would report as late. QEMU's TCG (hypervisor signature
 * "TCGTCGTCGTCG") and anything else run on host time, so there the checks
 * only catch gross errors: early by at most a few percent (calibration
 * noise), late by up to LOOSE_LATE_TSC (host scheduling).
 */
#include "lib/apic.h"
#include "lib/cpuid.h"
#include "lib/div64.h"
#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"

#define TIMER_VECTOR	0x50
#define DCR_DIV1	0xB		/* SDM Figure 10-10: 1011b = divide by 1 */
#define LVT_ONESHOT	(0u << 17)
#define LVT_PERIODIC	(1u << 17)
#define LVT_TSC_DEADLINE (2u << 17)
#define CPUID_1_ECX_TSC_DEADLINE (1u << 24)

/* Intervals, in TSC cycles (topolab: 2 GHz, so 1 ms = 2,000,000). */
#define CAL_TSC		(1u << 22)	/* calibration window */
#define ONESHOT_TSC	400000u
#define SHORT_TSC	20000u
#define PERIOD_TSC	1000000u
#define PERIODS		10
#define DEADLINE_TSC	600000u
#define QUIET_TSC	3000000u	/* how long "nothing must arrive" waits */

/* topolab: exact virtual time; the slack covers the handler's entry
 * (measured: about 40 cycles). */
#define TIGHT_LATE_TSC	500u
#define WAIT_SLACK_TSC	1000000u
/* Host time (QEMU TCG): ~50-100 ms of a busy host. */
#define LOOSE_LATE_TSC	200000000u

static volatile uint32_t fires;
static volatile uint64_t fire_tsc[PERIODS + 4];

static bool exact;			/* topolab: tight checks */
static uint64_t cal_tsc, cal_ticks;	/* the calibrated ratio */
static const char *mode;		/* "xapic" or "x2apic" */

static void timer_handler(struct irq_frame *f)
{
	uint64_t t = rdtsc();
	uint32_t n = fires;

	if (n < sizeof(fire_tsc) / sizeof(fire_tsc[0]))
		fire_tsc[n] = t;
	fires = n + 1;
	apic_eoi();
}

static const char *name(const char *test)
{
	static char buf[64];
	size_t a = strlen(mode), b = strlen(test);

	memcpy(buf, mode, a);
	buf[a] = '.';
	memcpy(buf + a + 1, test, b + 1);
	return buf;
}

/* APIC timer ticks for tsc cycles, and back, at the calibrated ratio. */
static uint32_t ticks_for(uint64_t tsc)
{
	return (uint32_t)udiv64(tsc * cal_ticks, cal_tsc);
}

static uint64_t tsc_for(uint64_t ticks)
{
	return udiv64(ticks * cal_tsc, cal_ticks);
}

static uint64_t late_tol(uint64_t interval)
{
	return exact ? TIGHT_LATE_TSC + udiv64(interval, 1000) : LOOSE_LATE_TSC + interval;
}

/* How far before its computed time an interrupt may come: calibration
 * error only (a few TSC cycles over CAL_TSC under topolab). */
static uint64_t early_tol(uint64_t interval)
{
	return exact ? 16 + udiv64(interval, 100000) : udiv64(interval, 20) + 20000;
}

/* How long a wait for an interrupt goes on past its time before giving up:
 * the tolerance, plus enough to measure (and report) a miss by a few of
 * topolab's default quanta (100,000 instructions = 200,000 TSC cycles). */
static uint64_t wait_slack(uint64_t interval)
{
	return 2 * late_tol(interval) + WAIT_SLACK_TSC;
}

static void spin_until(uint64_t tsc)
{
	while ((int64_t)(rdtsc() - tsc) < 0)
		for (int i = 0; i < 16; i++)
			__asm__ volatile("pause" ::: "memory");
}

/* Waits (IF set) until fires >= n or the TSC passes limit. */
static bool wait_fires(uint32_t n, uint64_t limit)
{
	while (fires < n) {
		if ((int64_t)(rdtsc() - limit) > 0)
			return fires >= n;
		__asm__ volatile("pause" ::: "memory");
	}
	return true;
}

/* Checks that fire k came at want (TSC) within the tolerances. */
static bool check_time(const char *test, uint64_t got, uint64_t want,
		       uint64_t interval)
{
	if (got + early_tol(interval) < want)
		return report(name(test), false, "fired %llu TSC cycles early "
			      "(programmed for %llu cycles)",
			      (unsigned long long)(want - got),
			      (unsigned long long)interval);
	return report(name(test), got <= want + late_tol(interval),
		      "fired %llu TSC cycles late (tolerance %llu)",
		      (unsigned long long)(got - want),
		      (unsigned long long)late_tol(interval));
}

static bool irr_has(unsigned vector)
{
	return apic_read(APIC_IRR + (vector / 32) * 0x10) & (1u << (vector % 32));
}

/* Like Linux's calibrate_APIC_clock, against the TSC instead of the PIT:
 * each sample brackets the current-count read with two TSC reads. */
static bool calibrate(void)
{
	uint64_t a0, b0, a1, b1, t_start;
	uint32_t c0, c1;

	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | LVT_MASKED | TIMER_VECTOR);
	apic_write(APIC_TIMER_DCR, DCR_DIV1);
	apic_write(APIC_TIMER_ICR, 0xFFFFFFFF);
	a0 = rdtsc();
	c0 = apic_read(APIC_TIMER_CCR);
	b0 = rdtsc();
	t_start = a0;
	spin_until(t_start + CAL_TSC);
	a1 = rdtsc();
	c1 = apic_read(APIC_TIMER_CCR);
	b1 = rdtsc();
	apic_write(APIC_TIMER_ICR, 0);
	cal_tsc = ((a1 + b1) >> 1) - ((a0 + b0) >> 1);
	cal_ticks = c0 - c1;
	if (!report(name("calibrate"), c1 != 0 && c1 < c0 && cal_ticks > 1000,
		    "current count went 0x%x -> 0x%x over %llu TSC cycles",
		    c0, c1, (unsigned long long)cal_tsc))
		return false;
	printf("%s: %llu APIC timer ticks per %llu TSC cycles\n", mode,
	       (unsigned long long)cal_ticks, (unsigned long long)cal_tsc);
	return true;
}

static void oneshot(const char *test, uint64_t interval_tsc)
{
	char buf[40];
	size_t n = strlen(test);
	uint32_t count = ticks_for(interval_tsc);
	uint64_t want = tsc_for(count), t0;

	memcpy(buf, test, n);
	fires = 0;
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | TIMER_VECTOR);
	apic_write(APIC_TIMER_DCR, DCR_DIV1);
	t0 = rdtsc();
	apic_write(APIC_TIMER_ICR, count);
	memcpy(buf + n, ".fires", 7);
	if (!report(name(buf), wait_fires(1, t0 + want + wait_slack(want)),
		    "no interrupt within %llu TSC cycles of its time",
		    (unsigned long long)wait_slack(want)))
		return;
	memcpy(buf + n, ".time", 6);
	check_time(buf, fire_tsc[0], t0 + want, want);
	memcpy(buf + n, ".ccr_zero", 10);
	report(name(buf), apic_read(APIC_TIMER_CCR) == 0,
	       "current count 0x%x after the interrupt",
	       apic_read(APIC_TIMER_CCR));
	spin_until(rdtsc() + QUIET_TSC);
	memcpy(buf + n, ".once", 6);
	report(name(buf), fires == 1, "%u interrupts", fires);
}

static void test_oneshot(void)
{
	oneshot("oneshot", ONESHOT_TSC);
	/* Shorter than topolab's default quantum (100,000 instructions). */
	oneshot("oneshot_short", SHORT_TSC);
}

static void test_periodic(void)
{
	uint32_t count = ticks_for(PERIOD_TSC);
	uint64_t period = tsc_for(count), t0;
	uint32_t n;
	bool ok = true;

	fires = 0;
	apic_write(APIC_LVT_TIMER, LVT_PERIODIC | TIMER_VECTOR);
	apic_write(APIC_TIMER_DCR, DCR_DIV1);
	t0 = rdtsc();
	apic_write(APIC_TIMER_ICR, count);
	bool all = wait_fires(PERIODS, t0 + PERIODS * period + wait_slack(period));

	/* Initial count 0 stops it (SDM 10.5.4). */
	apic_write(APIC_TIMER_ICR, 0);
	n = fires;
	if (!report(name("periodic.fires"), all, "%u of %u interrupts", n, PERIODS))
		return;
	for (uint32_t k = 0; k < PERIODS && ok; k++) {
		uint64_t want = t0 + (k + 1) * period, got = fire_tsc[k];

		if (got + early_tol((k + 1) * period) < want ||
		    got > want + late_tol(period))
			ok = report(name("periodic.times"), false,
				    "interrupt %u at t0+%llu, programmed for "
				    "t0+%llu (period %llu)", k + 1,
				    (unsigned long long)(got - t0),
				    (unsigned long long)(want - t0),
				    (unsigned long long)period);
	}
	if (ok)
		report(name("periodic.times"), true, NULL);
	spin_until(rdtsc() + 3 * period);
	report(name("stop.periodic"), fires == n && apic_read(APIC_TIMER_CCR) == 0,
	       "%u interrupts after initial count 0 (current count 0x%x)",
	       fires - n, apic_read(APIC_TIMER_CCR));
}

static void test_stop_oneshot(void)
{
	uint32_t count = ticks_for(ONESHOT_TSC);

	fires = 0;
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | TIMER_VECTOR);
	apic_write(APIC_TIMER_ICR, count);
	apic_write(APIC_TIMER_ICR, 0);
	spin_until(rdtsc() + tsc_for(count) + QUIET_TSC);
	report(name("stop.oneshot"), fires == 0 && apic_read(APIC_TIMER_CCR) == 0,
	       "%u interrupts from a cancelled one-shot (current count 0x%x)",
	       fires, apic_read(APIC_TIMER_CCR));
}

static void test_masked(void)
{
	uint32_t count = ticks_for(ONESHOT_TSC);

	fires = 0;
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | LVT_MASKED | TIMER_VECTOR);
	apic_write(APIC_TIMER_ICR, count);
	spin_until(rdtsc() + tsc_for(count) + QUIET_TSC);
	report(name("masked.no_interrupt"), fires == 0 && !irr_has(TIMER_VECTOR),
	       "%u interrupts, IRR bit %s", fires,
	       irr_has(TIMER_VECTOR) ? "set" : "clear");
	report(name("masked.counted_down"), apic_read(APIC_TIMER_CCR) == 0,
	       "current count 0x%x past expiry", apic_read(APIC_TIMER_CCR));
	/* Unmasking in the same mode keeps the (expired) count: nothing was
	 * left pending, so nothing comes. */
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | TIMER_VECTOR);
	spin_until(rdtsc() + QUIET_TSC);
	report(name("masked.unmask_nothing_pending"), fires == 0,
	       "%u interrupts after unmasking an expired one-shot", fires);
}

static void test_tsc_deadline(void)
{
	uint64_t t0, deadline;

	if (!(cpuid(1, 0).ecx & CPUID_1_ECX_TSC_DEADLINE)) {
		report_skip(name("tsc_deadline"), "CPUID.1:ECX[24] clear (QEMU's "
			    "TCG has none; topolab: -cpu ...,+tsc-deadline)");
		return;
	}
	fires = 0;
	apic_write(APIC_LVT_TIMER, LVT_TSC_DEADLINE | TIMER_VECTOR);
	/* SDM 10.5.4.1: order the LVT write before the MSR write. */
	__asm__ volatile("mfence" ::: "memory");
	t0 = rdtsc();
	deadline = t0 + DEADLINE_TSC;
	wrmsr(MSR_IA32_TSC_DEADLINE, deadline);
	if (report(name("tsc_deadline.fires"),
		   wait_fires(1, deadline + wait_slack(DEADLINE_TSC)),
		   "no interrupt within %llu TSC cycles of the deadline",
		   (unsigned long long)wait_slack(DEADLINE_TSC))) {
		/* The deadline is in TSC cycles: no calibration error. */
		report(name("tsc_deadline.not_early"), fire_tsc[0] >= deadline,
		       "fired %llu TSC cycles before the deadline",
		       (unsigned long long)(deadline - fire_tsc[0]));
		report(name("tsc_deadline.time"),
		       fire_tsc[0] <= deadline + late_tol(DEADLINE_TSC),
		       "fired %llu TSC cycles late (tolerance %llu)",
		       (unsigned long long)(fire_tsc[0] - deadline),
		       (unsigned long long)late_tol(DEADLINE_TSC));
		uint64_t msr = rdmsr(MSR_IA32_TSC_DEADLINE);

		report(name("tsc_deadline.msr_cleared"), msr == 0,
		       "IA32_TSC_DEADLINE reads 0x%llx after firing",
		       (unsigned long long)msr);
		spin_until(rdtsc() + QUIET_TSC);
		report(name("tsc_deadline.once"), fires == 1, "%u interrupts", fires);
	}

	/* Writing 0 disarms (SDM 10.5.4.1). */
	fires = 0;
	deadline = rdtsc() + DEADLINE_TSC;
	wrmsr(MSR_IA32_TSC_DEADLINE, deadline);
	wrmsr(MSR_IA32_TSC_DEADLINE, 0);
	spin_until(deadline + QUIET_TSC);
	report(name("tsc_deadline.disarm"), fires == 0,
	       "%u interrupts after writing 0 to IA32_TSC_DEADLINE", fires);

	/* A deadline already past fires at once. */
	fires = 0;
	t0 = rdtsc();
	wrmsr(MSR_IA32_TSC_DEADLINE, t0 - 1000);
	wait_fires(1, t0 + wait_slack(0));
	report(name("tsc_deadline.past"), fires == 1 && fire_tsc[0] <= t0 + late_tol(0),
	       "a deadline in the past: %u interrupts, the first %llu TSC cycles "
	       "after arming (tolerance %llu)", fires,
	       (unsigned long long)(fires ? fire_tsc[0] - t0 : 0),
	       (unsigned long long)late_tol(0));
	/* Back to one-shot mode: the switch disarms the TSC-deadline timer. */
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | LVT_MASKED | TIMER_VECTOR);
}

static void run_all(bool x2)
{
	mode = x2 ? "x2apic" : "xapic";
	if (!calibrate())
		return;
	test_oneshot();
	test_periodic();
	test_stop_oneshot();
	test_masked();
	test_tsc_deadline();
	apic_write(APIC_LVT_TIMER, LVT_ONESHOT | LVT_MASKED | TIMER_VECTOR);
	apic_write(APIC_TIMER_ICR, 0);
}

int main(const struct multiboot_info *mbi)
{
	char hv[13];

	(void)mbi;
	cpuid_hypervisor_string(hv);
	exact = cpuid_is_topolab();
	printf("apic_timer: hypervisor \"%s\": %s tolerances\n", hv,
	       exact ? "exact virtual time (run with --cost none)," : "host time, loose");
	idt_init();
	idt_set_handler(TIMER_VECTOR, timer_handler);
	apic_sw_enable();
	irq_enable();

	run_all(false);
	if (!x2apic_supported()) {
		report_skip("x2apic", "CPUID.1:ECX[21] clear: no x2APIC "
			    "(QEMU 7.2's TCG has none)");
		return report_summary();
	}
	x2apic_enable();
	if (report("x2apic.enable", apic_x2apic_mode(), "EXTD did not stick"))
		run_all(true);
	return report_summary();
}
