// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Garbage into every local APIC register; afterwards the APIC must work.
 *
 * cmdline: rounds=N (default 8), seed=S (default 0x2545F491; xorshift32,
 * so every run writes the same values)
 *
 *   xapic.*    each round writes a pseudo-random value to every xAPIC MMIO
 *              offset 0x000-0x3F0, then reads every offset back. Skipped:
 *              ICR low (0x300: the write would send an IPI) and EOI (0xB0).
 *              LVT values keep their vector >= 32 (a vector 16-31 would be
 *              taken through an exception gate, whose frame differs), and
 *              interrupts stay off while the garbage is in. Nothing may
 *              fault; the version register is read-only.
 *   x2apic.*   with CPUID.1:ECX[21] (SKIP otherwise: QEMU 7.2's TCG has no
 *              x2APIC): the same over MSRs 0x800-0x8FF, RDMSR then WRMSR,
 *              with a #GP handler that records the fault and steps over the
 *              2-byte RDMSR/WRMSR. Skipped: ICR (0x830) and EOI (0x80B).
 *              SELF_IPI (0x83F) gets a random value with a vector >= 32.
 *              Checked against SDM Table 10-6: reserved MSRs #GP on read and
 *              write, read-only ones (ID, version, PPR, LDR, ISR/TMR/IRR,
 *              current count) on write, write-only SELF_IPI on read, ESR on
 *              a non-zero write; the architectural registers read without
 *              fault. Writes of random values to read-write registers may
 *              or may not #GP (reserved bits): not checked.
 *              Under QEMU's TCG, offset 0 is left alone too (QEMU takes a
 *              write there as an MSI), and its ESR is sticky (writes are
 *              ignored), so its illegal-register bit is not held against it.
 *   *.works    recovery: mask every LVT, stop the timer, TPR 0, restore ID,
 *              LDR and DFR (xAPIC), re-enable through SVR, clear ESR; take
 *              whatever the garbage left pending (each stray interrupt is
 *              EOIed if it is in service); then a self IPI (ICR shorthand,
 *              and in x2APIC also the SELF_IPI register) with a legal
 *              vector must arrive exactly once.
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

#define TEST_VECTOR	0x41
#define VEC_GP		13
/* Interrupt latency is not architectural: topolab, for one, delivers an
 * interrupt that became pending mid-slice at the slice's end (up to
 * --quantum instructions later). So waits are generous loop counts. */
/* TSC ticks (0.5 s and 0.4 ms at 2 GHz): only a missing IPI costs the first. */
#define WAIT_TICKS	1000000000ull	/* for what must arrive */
#define SETTLE_TICKS	800000ull	/* for what may still come */
#define DEFAULT_ROUNDS	8
#define DEFAULT_SEED	0x2545F491u
#define X2APIC_FIRST	0x800
#define X2APIC_LAST	0x8FF
#define X2APIC_EOI	0x80B
#define X2APIC_ESR	0x828
#define X2APIC_ICR	0x830
#define X2APIC_SELF_IPI	0x83F

static uint32_t rng;
static bool qemu;		/* QEMU's TCG: see the two workarounds */
static volatile uint32_t gp_count, test_hits, stray_hits;

static uint32_t xorshift32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* #GP: only RDMSR (0F 32) and WRMSR (0F 30) are expected to fault. */
static void gp_handler(struct irq_frame *f)
{
	const uint8_t *p = (const uint8_t *)f->ip;

	if (p[0] != 0x0F || (p[1] != 0x30 && p[1] != 0x32)) {
		printf("FAIL: apic_fuzz (#GP at 0x%lx, error code 0x%lx, not at "
		       "an RDMSR/WRMSR)\n", (unsigned long)f->ip,
		       (unsigned long)f->error);
		debug_exit(EXIT_FAIL);
	}
	gp_count++;
	f->ip += 2;
}

static bool in_service(unsigned v)
{
	return apic_read(APIC_ISR + (v / 32) * 0x10) & (1u << (v % 32));
}

/* Anything the garbage made pending (also a true spurious interrupt: then
 * nothing is in service and no EOI is due, SDM 10.9). */
static void stray_handler(struct irq_frame *f)
{
	stray_hits++;
	if (in_service((unsigned)f->vector))
		apic_eoi();
}

static void test_handler(struct irq_frame *f)
{
	test_hits++;
	apic_eoi();
}

/* Fault-tolerant MSR access: true if it did not #GP. */
static bool try_rdmsr(uint32_t msr, uint64_t *v)
{
	uint32_t before = gp_count, lo = 0, hi = 0;

	__asm__ volatile("rdmsr" : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
	*v = (uint64_t)hi << 32 | lo;
	return gp_count == before;
}

static bool try_wrmsr(uint32_t msr, uint64_t v)
{
	uint32_t before = gp_count;

	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
			 "d"((uint32_t)(v >> 32)) : "memory");
	return gp_count == before;
}

static bool is_lvt(uint32_t off)
{
	return off == APIC_LVT_CMCI || (off >= APIC_LVT_TIMER && off <= APIC_LVT_ERROR);
}

/* A random value whose low byte, as a vector, is >= 32. */
static uint32_t legal_vector_value(uint32_t v)
{
	return (v & 0xFF) < 0x20 ? v | 0x20 : v;
}

/* --- recovery and the "still works" check --------------------------------- */

static const uint32_t lvts[] = {
	APIC_LVT_CMCI, APIC_LVT_TIMER, APIC_LVT_THERMAL, APIC_LVT_PERF,
	APIC_LVT_LINT0, APIC_LVT_LINT1, APIC_LVT_ERROR,
};

static void recover(bool x2, uint32_t id, uint32_t ldr, uint32_t dfr)
{
	for (unsigned i = 0; i < sizeof(lvts) / sizeof(lvts[0]); i++) {
		if (x2 && lvts[i] == APIC_LVT_CMCI &&
		    !try_wrmsr(X2APIC_FIRST + (APIC_LVT_CMCI >> 4), LVT_MASKED))
			continue;	/* no CMCI LVT on this APIC */
		apic_write(lvts[i], LVT_MASKED);
	}
	apic_write(APIC_TIMER_ICR, 0);
	apic_write(APIC_TPR, 0);
	if (!x2) {
		xapic_write(APIC_ID, id);
		xapic_write(APIC_DFR, dfr);
		xapic_write(APIC_LDR, ldr);
	}
	apic_sw_enable();
	apic_read_esr();
}

/* name = mode "." test (name has room for 40 bytes). */
static void nm(char *name, const char *mode, const char *test)
{
	size_t a = strlen(mode), b = strlen(test);

	memcpy(name, mode, a);
	name[a] = '.';
	memcpy(name + a + 1, test, b + 1);
}

static void check_works(const char *mode, bool x2)
{
	char name[40];
	uint32_t strays;

	/* Take what the garbage left pending. */
	stray_hits = 0;
	irq_enable();
	delay_ticks(SETTLE_TICKS);
	irq_disable();
	strays = stray_hits;
	printf("%s: %u stray interrupt%s taken after recovery\n", mode, strays,
	       strays == 1 ? "" : "s");

	uint32_t isr_left = 0;

	for (unsigned r = 0; r < 8; r++)
		isr_left |= apic_read(APIC_ISR + r * 0x10);
	nm(name, mode, "isr_empty");
	report(name, isr_left == 0, "ISR not empty after taking the strays");

	test_hits = 0;
	irq_enable();
	bool sent = apic_send_ipi(0, ICR_SELF | ICR_FIXED | ICR_ASSERT | TEST_VECTOR);
	wait_until_changed(&test_hits, 0, tsc_after(WAIT_TICKS));
	delay_ticks(SETTLE_TICKS);
	nm(name, mode, "works.self_ipi");
	report(name, sent && test_hits == 1,
	       "self IPI vector 0x%x: received %u times, expected once%s",
	       TEST_VECTOR, test_hits, sent ? "" : " (delivery status stuck)");
	if (x2) {
		test_hits = 0;
		x2apic_write(APIC_SELF_IPI, TEST_VECTOR);
		wait_until_changed(&test_hits, 0, tsc_after(WAIT_TICKS));
		delay_ticks(SETTLE_TICKS);
		nm(name, mode, "works.self_ipi_register");
		report(name, test_hits == 1,
		       "SELF_IPI vector 0x%x: received %u times, expected once",
		       TEST_VECTOR, test_hits);
	}
	irq_disable();
	uint32_t esr = apic_read_esr();

	/* QEMU 7.2 ignores ESR writes, so the illegal-register bit our
	 * garbage at reserved offsets set never clears there. */
	if (qemu && !x2)
		esr &= ~ESR_ILLEGAL_REGISTER;
	nm(name, mode, "works.esr_clear");
	report(name, esr == 0, "ESR 0x%x after a legal self IPI", esr);
}

/* --- xAPIC ------------------------------------------------------------------ */

static void fuzz_xapic(uint32_t rounds)
{
	uint32_t id = xapic_read(APIC_ID), ldr = xapic_read(APIC_LDR);
	uint32_t dfr = xapic_read(APIC_DFR), version = xapic_read(APIC_VERSION);
	uint32_t gp_before = gp_count, sum = 0;

	for (uint32_t round = 0; round < rounds; round++) {
		for (uint32_t off = 0; off <= 0x3F0; off += 0x10) {
			uint32_t v = xorshift32();

			if (off == APIC_ICR_LO || off == APIC_EOI)
				continue;
			/* QEMU 7.2 (hw/intc/apic.c) takes a write to offset 0
			 * as an MSI: random delivery mode to APIC ID 0, which
			 * can INIT this CPU. */
			if (off == 0 && qemu)
				continue;
			xapic_write(off, is_lvt(off) ? legal_vector_value(v) : v);
		}
		for (uint32_t off = 0; off <= 0x3F0; off += 0x10)
			sum += xapic_read(off);
	}
	(void)sum;
	report("xapic.no_fault", gp_count == gp_before,
	       "%u faults from MMIO accesses", gp_count - gp_before);
	report("xapic.version_read_only", xapic_read(APIC_VERSION) == version,
	       "version 0x%x after the garbage, was 0x%x",
	       xapic_read(APIC_VERSION), version);
	recover(false, id, ldr, dfr);
	report("xapic.id_restored", xapic_read(APIC_ID) == id,
	       "ID 0x%x, wrote back 0x%x", xapic_read(APIC_ID), id);
	check_works("xapic", false);
}

/* --- x2APIC (SDM Table 10-6) ------------------------------------------------ */

enum x2_access { X2_NONE = 0, X2_R = 1, X2_W = 2, X2_RW = 3 };

static enum x2_access x2_access(uint32_t msr)
{
	switch (msr) {
	case 0x802: case 0x803: case 0x80A: case 0x80D: case 0x839:
		return X2_R;
	case 0x808: case 0x80F: case 0x828: case 0x82F: case 0x830:
	case 0x832: case 0x833: case 0x834: case 0x835: case 0x836:
	case 0x837: case 0x838: case 0x83E:
		return X2_RW;
	case X2APIC_EOI: case X2APIC_SELF_IPI:
		return X2_W;
	}
	if (msr >= 0x810 && msr <= 0x827)	/* ISR, TMR, IRR */
		return X2_R;
	return X2_NONE;
}

struct mismatch {
	unsigned count;
	uint32_t first_msr;
	uint64_t first_value;
};

static void note(struct mismatch *m, uint32_t msr, uint64_t v)
{
	if (!m->count++) {
		m->first_msr = msr;
		m->first_value = v;
	}
}

static void fuzz_x2apic(uint32_t rounds, bool have_cmci)
{
	/* read_ok: no #GP where one was due / #GP where none was due. */
	struct mismatch read_no_gp = {0}, read_gp = {0}, write_no_gp = {0};
	uint32_t version = (uint32_t)x2apic_read(APIC_VERSION);
	uint32_t id = (uint32_t)x2apic_read(APIC_ID);

	for (uint32_t round = 0; round < rounds; round++) {
		for (uint32_t msr = X2APIC_FIRST; msr <= X2APIC_LAST; msr++) {
			enum x2_access a = x2_access(msr);
			uint64_t v = (uint64_t)xorshift32() << 32 | xorshift32();
			uint64_t got;
			bool cmci = msr == 0x82F;

			/* Read first: the value is what the last round left. */
			bool rd = try_rdmsr(msr, &got);

			if (!(cmci && !have_cmci)) {
				if ((a & X2_R) && !rd)
					note(&read_gp, msr, 0);
				if (!(a & X2_R) && rd)
					note(&read_no_gp, msr, got);
			}
			if (msr == X2APIC_ICR || msr == X2APIC_EOI)
				continue;
			if (msr == X2APIC_SELF_IPI || (msr >= 0x832 && msr <= 0x837) || cmci)
				v = legal_vector_value((uint32_t)v);
			if (msr == X2APIC_ESR)
				v |= 1;		/* only 0 may be written */
			bool wr = try_wrmsr(msr, v);

			if ((!(a & X2_W) || msr == X2APIC_ESR) && wr &&
			    !(cmci && !have_cmci))
				note(&write_no_gp, msr, v);
		}
	}
	report("x2apic.readable_no_gp", read_gp.count == 0,
	       "%u RDMSRs of architectural registers faulted, the first MSR 0x%x",
	       read_gp.count, read_gp.first_msr);
	report("x2apic.unreadable_gp", read_no_gp.count == 0,
	       "%u RDMSRs of reserved/write-only MSRs did not fault, the first "
	       "MSR 0x%x (read 0x%llx)", read_no_gp.count, read_no_gp.first_msr,
	       (unsigned long long)read_no_gp.first_value);
	report("x2apic.unwritable_gp", write_no_gp.count == 0,
	       "%u WRMSRs of reserved/read-only MSRs (or non-zero to ESR) did "
	       "not fault, the first MSR 0x%x (wrote 0x%llx)", write_no_gp.count,
	       write_no_gp.first_msr, (unsigned long long)write_no_gp.first_value);
	report("x2apic.read_only_kept",
	       (uint32_t)x2apic_read(APIC_VERSION) == version &&
	       (uint32_t)x2apic_read(APIC_ID) == id,
	       "ID 0x%x version 0x%x after the garbage, were 0x%x 0x%x",
	       (uint32_t)x2apic_read(APIC_ID), (uint32_t)x2apic_read(APIC_VERSION),
	       id, version);
	printf("x2apic: %u #GPs taken in %u rounds\n", gp_count, rounds);
	recover(true, 0, 0, 0);
	check_works("x2apic", true);
}

int main(const struct multiboot_info *mbi)
{
	uint32_t rounds = DEFAULT_ROUNDS, seed = DEFAULT_SEED;

	(void)mbi;
	if (cmdline_uint("rounds", &rounds) == CMDLINE_INVALID ||
	    cmdline_uint("seed", &seed) == CMDLINE_INVALID || seed == 0) {
		report("fuzz.cmdline", false, "rounds= and seed= (non-zero) want numbers");
		return report_summary();
	}
	rng = seed;
	qemu = cpuid_is_qemu_tcg();
	printf("apic_fuzz: %u rounds, seed 0x%x\n", rounds, seed);
	idt_init();
	for (unsigned v = VEC_FIRST_IRQ; v < IDT_VECTORS; v++)
		idt_set_handler(v, stray_handler);
	idt_set_handler(TEST_VECTOR, test_handler);
	idt_set_handler(VEC_GP, gp_handler);
	irq_disable();
	apic_sw_enable();

	/* Past APIC ID 254 the firmware hands over x2APIC mode, where the
	 * xAPIC page is gone (SDM 10.12.2). */
	if (apic_x2apic_mode())
		report_skip("xapic", "the firmware handed over x2APIC mode");
	else
		fuzz_xapic(rounds);

	if (!x2apic_supported()) {
		report_skip("x2apic", "CPUID.1:ECX[21] clear: no x2APIC "
			    "(QEMU 7.2's TCG has none)");
		return report_summary();
	}
	bool have_cmci = bits(apic_read(APIC_VERSION), 23, 16) >= 6;

	x2apic_enable();
	if (report("x2apic.enable", apic_x2apic_mode(), "EXTD did not stick"))
		fuzz_x2apic(rounds, have_cmci);
	return report_summary();
}
