// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Inter-processor interrupts through the local APIC ICR (SDM Vol. 3A 10.6),
 * in xAPIC mode and, when CPUID.1:ECX[21] says the CPUs have one, again in
 * x2APIC mode (SDM 10.12.9-10; SKIP otherwise: QEMU 7.2's TCG has none):
 *   unicast     a fixed IPI to each CPU by physical APIC ID (the BSP too)
 *   others      shorthand "all excluding self"
 *   all         shorthand "all including self"
 *   self        shorthand "self" (and the x2APIC SELF IPI register)
 *   flat        logical destination, flat model: LDR = 1 << cpu (xAPIC)
 *   lowest      lowest-priority delivery to a flat set: exactly one gets it
 *   cluster     logical destination, cluster model (xAPIC: LDR set by us;
 *               x2APIC: the read-only LDR the ID implies, SDM 10.12.10.2)
 *   nmi         delivery mode NMI to each AP (vector 2 handler counts)
 *   illegal     a fixed IPI with vector 3 (< 16) must set ESR "send illegal
 *               vector" and reach nobody (SDM 10.5.3)
 * Each handler counts per CPU; the BSP sends, waits (bounded) for the
 * expected counts, then a little longer to catch extra deliveries.
 * Tests that need a second CPU SKIP with -smp 1 (an IPI to nobody is itself
 * an error a strict emulator reports).
 */
#include "lib/apic.h"
#include "lib/cpuid.h"
#include "lib/idt.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

#define TEST_VECTOR	0x40
#define ILLEGAL_VECTOR	3		/* 0-15 are illegal (SDM 10.5.2) */
/* TSC ticks (0.5 s and 1 ms at 2 GHz): only a missing IPI costs the first. */
#define WAIT_TICKS	1000000000ull	/* for what must arrive */
#define SETTLE_TICKS	2000000ull	/* for what must not */
#define FLAT_CPUS	8		/* flat LDR has 8 bits */
#define CLUSTER_CPUS	60		/* 15 clusters of 4 */

/* Per CPU, and in the last slot (ALL) every CPU's together. */
#define ALL		SMP_MAX_CPUS
static volatile uint32_t hits[SMP_MAX_CPUS + 1], nmis[SMP_MAX_CPUS + 1],
	illegal_hits[SMP_MAX_CPUS + 1];
static uint32_t want[SMP_MAX_CPUS];
static uint32_t ldr[SMP_MAX_CPUS];	/* each CPU's LDR as it read it */
static const char *mode;		/* "xapic" or "x2apic" */

static void count(volatile uint32_t *c)
{
	int cpu = smp_cpu_index();

	if (cpu >= 0)
		__atomic_fetch_add(&c[cpu], 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&c[ALL], 1, __ATOMIC_SEQ_CST);
}

static void test_handler(struct irq_frame *f)
{
	count(hits);
	apic_eoi();
}

static void nmi_handler(struct irq_frame *f)
{
	count(nmis);	/* NMIs are not in ISR: no EOI (SDM 10.8.5) */
}

static void illegal_handler(struct irq_frame *f)
{
	count(illegal_hits);
	apic_eoi();
}

static const char *name(const char *test)
{
	static char buf[48];
	size_t a = strlen(mode), b = strlen(test);

	memcpy(buf, mode, a);
	buf[a] = '.';
	memcpy(buf + a + 1, test, b + 1);
	return buf;
}

static unsigned online_cpus(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < smp_ncpus; i++)
		n += smp_cpus[i].online;
	return n;
}

/* Sets want to the current counts. */
static void expect_none(volatile uint32_t *c)
{
	for (unsigned i = 0; i < smp_ncpus; i++)
		want[i] = c[i];
}

/* Waits for c == want on every CPU, then SETTLE_TICKS more; the first CPU
 * that differs, or -1. */
static int settle(volatile uint32_t *c)
{
	uint64_t deadline = tsc_after(WAIT_TICKS);

	for (unsigned i = 0; i < smp_ncpus; i++)
		if (!wait_until_equal(&c[i], want[i], deadline))
			break;
	delay_ticks(SETTLE_TICKS);
	for (unsigned i = 0; i < smp_ncpus; i++)
		if (c[i] != want[i])
			return (int)i;
	return -1;
}

static void check(const char *test, volatile uint32_t *c, bool sent)
{
	int bad = settle(c);

	if (!sent) {
		report(name(test), false, "ICR delivery status never cleared");
		return;
	}
	report(name(test), bad < 0,
	       "CPU %d (APIC ID 0x%x) counted %u, expected %u", bad,
	       bad < 0 ? 0 : smp_cpus[bad].apic_id, bad < 0 ? 0 : c[bad],
	       bad < 0 ? 0 : want[bad]);
}

static void test_unicast(void)
{
	bool sent = true;

	expect_none(hits);
	for (unsigned i = 0; i < smp_ncpus; i++) {
		if (!smp_cpus[i].online)
			continue;
		want[i]++;
		sent &= apic_send_ipi(smp_cpus[i].apic_id,
				      ICR_FIXED | ICR_ASSERT | TEST_VECTOR);
	}
	check("unicast", hits, sent);
}

static void test_shorthand(const char *test, uint32_t shorthand)
{
	expect_none(hits);
	for (unsigned i = 0; i < smp_ncpus; i++)
		if (smp_cpus[i].online &&
		    (shorthand != ICR_OTHERS || i != 0) &&
		    (shorthand != ICR_SELF || i == 0))
			want[i]++;
	check(test, hits, apic_send_ipi(0, shorthand | ICR_FIXED | ICR_ASSERT |
					   TEST_VECTOR));
}

static void x2apic_self_ipi(void)
{
	expect_none(hits);
	want[0]++;
	/* SDM 10.12.11: the SELF IPI register takes only the vector. */
	x2apic_write(APIC_SELF_IPI, TEST_VECTOR);
	check("self_ipi_register", hits, true);
}

/* Runs fn(&cpu index) on every online CPU and waits for each. */
static bool on_each(void (*fn)(void *))
{
	static unsigned idx[SMP_MAX_CPUS];
	bool ok = true;

	for (unsigned i = 0; i < smp_ncpus; i++) {
		if (!smp_cpus[i].online)
			continue;
		idx[i] = i;
		ok &= smp_run_on(i, fn, &idx[i]) && smp_wait_done(i);
	}
	return ok;
}

/* SDM 10.6.2.2: DFR model 1111b is flat, 0000b cluster; the LDR's logical
 * ID is bits 31:24. */
static void set_flat(void *arg)
{
	unsigned cpu = *(unsigned *)arg;

	apic_write(APIC_DFR, 0xFFFFFFFF);
	apic_write(APIC_LDR, cpu < FLAT_CPUS ? (1u << cpu) << 24 : 0);
}

static void set_cluster(void *arg)
{
	unsigned cpu = *(unsigned *)arg;
	uint32_t id = cpu < CLUSTER_CPUS ? (cpu / 4) << 4 | 1u << (cpu % 4) : 0;

	apic_write(APIC_DFR, 0x0FFFFFFF);
	apic_write(APIC_LDR, id << 24);
}

static void read_ldr(void *arg)
{
	ldr[*(unsigned *)arg] = apic_read(APIC_LDR);
}

static void send_logical(const char *test, uint32_t dest, uint32_t dm,
			 bool (*match)(unsigned cpu, uint32_t dest))
{
	expect_none(hits);
	for (unsigned i = 0; i < smp_ncpus; i++)
		if (smp_cpus[i].online && match(i, dest))
			want[i]++;
	check(test, hits, apic_send_ipi(dest, dm | ICR_LOGICAL | ICR_ASSERT |
					   TEST_VECTOR));
}

static bool flat_match(unsigned cpu, uint32_t dest)
{
	return cpu < FLAT_CPUS && (dest & 1u << cpu);
}

/* xAPIC cluster: cluster = bits 7:4, member bitmap 3:0 (SDM 10.6.2.2);
 * x2APIC: cluster = bits 31:16, bitmap 15:0 (SDM 10.12.10.2). */
static bool cluster_match(unsigned cpu, uint32_t dest)
{
	uint32_t l = ldr[cpu];

	if (!strcmp(mode, "x2apic"))
		return l >> 16 == dest >> 16 && (l & dest & 0xFFFF);
	l >>= 24;
	return (l >> 4) == (dest >> 4 & 0xF) && (l & dest & 0xF);
}

static void test_flat(void)
{
	unsigned n = smp_ncpus < FLAT_CPUS ? smp_ncpus : FLAT_CPUS;

	if (!report(name("flat.setup"), on_each(set_flat),
		    "an AP did not run the LDR/DFR set-up"))
		return;
	send_logical("flat.all", (1u << n) - 1, ICR_FIXED, flat_match);
	send_logical("flat.one", 1u << (n - 1), ICR_FIXED, flat_match);

	/* SDM 10.6.2.4: exactly one CPU of the set gets a lowest-priority IPI
	 * (which one is model-specific). All TPRs are 0. */
	uint32_t before = hits[ALL];
	bool sent = apic_send_ipi((1u << n) - 1, ICR_LOWEST | ICR_LOGICAL |
				  ICR_ASSERT | TEST_VECTOR);

	wait_until_changed(&hits[ALL], before, tsc_after(WAIT_TICKS));
	delay_ticks(SETTLE_TICKS);
	uint32_t after = hits[ALL];

	report(name("lowest_priority"), sent && after - before == 1,
	       "%u CPUs took it, expected exactly 1", after - before);
}

static void test_cluster(bool x2)
{
	if (!x2 && !report(name("cluster.setup"), on_each(set_cluster),
			   "an AP did not run the LDR/DFR set-up"))
		return;
	if (!report(name("cluster.read_ldr"), on_each(read_ldr),
		    "an AP did not report its LDR"))
		return;
	unsigned last = smp_ncpus - 1;
	uint32_t c0 = x2 ? 0x0000FFFF : 0x0F;

	if (!x2 && last >= CLUSTER_CPUS)
		last = CLUSTER_CPUS - 1;
	/* Cluster 0, every member; then just the last CPU's own ID. */
	send_logical("cluster.first", x2 ? (ldr[0] & 0xFFFF0000) | 0xFFFF : c0,
		     ICR_FIXED, cluster_match);
	send_logical("cluster.one", x2 ? ldr[last] : ldr[last] >> 24, ICR_FIXED,
		     cluster_match);
}

static void test_nmi(void)
{
	bool sent = true;

	expect_none(nmis);
	for (unsigned i = 1; i < smp_ncpus; i++) {
		if (!smp_cpus[i].online)
			continue;
		want[i]++;
		/* SDM 10.6.1: the vector is ignored for NMI; 0 by convention. */
		sent &= apic_send_ipi(smp_cpus[i].apic_id, ICR_NMI | ICR_ASSERT);
	}
	check("nmi", nmis, sent);
}

static void test_illegal(void)
{
	if (cpuid_is_qemu_tcg()) {
		/* hw/intc/apic.c (7.2) queues any vector and has no ESR
		 * send/receive-illegal-vector logic. */
		report_skip(name("illegal_vector"), "QEMU's TCG APIC delivers "
			    "vectors < 16 and never sets ESR bit 5");
		return;
	}
	unsigned target = online_cpus() > 1 && smp_cpus[1].online ? 1 : 0;

	apic_read_esr();	/* clear what earlier tests left */
	expect_none(illegal_hits);
	bool sent = apic_send_ipi(smp_cpus[target].apic_id,
				  ICR_FIXED | ICR_ASSERT | ILLEGAL_VECTOR);
	check("illegal_vector.not_delivered", illegal_hits, sent);
	uint32_t esr = apic_read_esr();

	report(name("illegal_vector.esr"), esr & ESR_SEND_ILLEGAL_VECTOR,
	       "ESR 0x%x after sending vector %u: bit 5 (send illegal vector) "
	       "clear", esr, ILLEGAL_VECTOR);
	apic_read_esr();
}

static void run_all(bool x2)
{
	bool smp = online_cpus() > 1;

	mode = x2 ? "x2apic" : "xapic";
	test_unicast();
	if (smp)
		test_shorthand("others", ICR_OTHERS);
	else
		report_skip(name("others"), "one CPU: all-but-self reaches nobody");
	test_shorthand("all", ICR_ALL);
	test_shorthand("self", ICR_SELF);
	if (x2) {
		x2apic_self_ipi();
		report_skip(name("flat"), "x2APIC has no flat model (SDM 10.12.10)");
		report_skip(name("lowest_priority"),
			    "tested in xAPIC mode only (model-specific for IPIs)");
	} else {
		test_flat();
	}
	test_cluster(x2);
	if (smp)
		test_nmi();
	else
		report_skip(name("nmi"), "one CPU: no AP to send it to");
	test_illegal();
}

static void enable_x2apic(void *arg)
{
	x2apic_enable();
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	const char *why = smp_init();

	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	idt_set_handler(TEST_VECTOR, test_handler);
	idt_set_handler(VEC_NMI, nmi_handler);
	idt_set_handler(ILLEGAL_VECTOR, illegal_handler);
	smp_boot_aps(NULL);
	report("smp.all_online", smp_online == smp_ncpus,
	       "%u of %u CPUs checked in", smp_online, smp_ncpus);
	printf("%u CPU%s online\n", smp_online, smp_online == 1 ? "" : "s");
	irq_enable();

	if (apic_x2apic_mode()) {
		/* Past APIC ID 254 the firmware hands over x2APIC mode, and
		 * x2APIC cannot go back to xAPIC without a disable (SDM 10.12.5). */
		report_skip("xapic", "the firmware handed over x2APIC mode");
		run_all(true);
		return report_summary();
	}
	run_all(false);

	if (!x2apic_supported()) {
		report_skip("x2apic", "CPUID.1:ECX[21] clear: no x2APIC "
			    "(QEMU 7.2's TCG has none)");
		return report_summary();
	}
	/* The APs first: smp_run_on wakes them with the BSP's xAPIC ICR. */
	bool ok = true;

	for (unsigned i = 1; i < smp_ncpus; i++)
		if (smp_cpus[i].online)
			ok &= smp_run_on(i, enable_x2apic, NULL) && smp_wait_done(i);
	x2apic_enable();
	if (report("x2apic.enable", ok && apic_x2apic_mode(),
		   "an AP did not switch to x2APIC mode"))
		run_all(true);
	return report_summary();
}
