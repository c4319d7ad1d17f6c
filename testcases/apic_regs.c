// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Local APIC registers in xAPIC mode (SDM Vol. 3A 10.4-10.9):
 *   reset.*     what INIT leaves (SDM 10.4.7.3: as power-up, but the ID): read
 *               on AP 1 before anything touches its APIC (lib/smp.h runs
 *               ap_main first). LVTs masked (0x00010000), SVR 0xFF, TPR 0,
 *               LDR 0, DFR all 1s, timer ICR/DCR 0. SKIP with one CPU: the
 *               BIOS has already programmed the BSP's APIC.
 *   version.*   version 0x10-0x15 (integrated APIC, SDM 10.4.8), max LVT
 *               entry >= 3, the same on every CPU
 *   tpr.*       bits 7:0 read back, reserved 31:8 read 0; PPR follows TPR
 *               with nothing in service (SDM 10.8.3.1)
 *   esr.*       write-then-read (SDM 10.5.3): reads show what the last write
 *               latched, a write latches new errors and clears them
 *   ldr/dfr.*   LDR keeps bits 31:24, DFR bits 31:28 with 27:0 reading 1s
 *   svr.*       enable bit; software-disabled, every LVT reads masked and
 *               cannot be unmasked (SDM 10.4.7.2)
 *   x2apic.*    with CPUID.1:ECX[21]: the ID and the read-only LDR the ID
 *               implies (SDM 10.12.10.2); SKIP otherwise
 */
#include "lib/apic.h"
#include "lib/cpuid.h"
#include "lib/idt.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

#define LVT_RESET	0x00010000u
#define ILLEGAL_REG	0x040		/* reserved in the xAPIC page */

struct lvt {
	uint32_t reg;
	const char *name;
	unsigned min_max_lvt;	/* present when version[23:16] >= this */
};

/* SDM 10.5.1: max LVT 3 = timer, LINT0/1, error; 4 adds the performance
 * counter LVT, 5 thermal, 6 CMCI. */
static const struct lvt lvts[] = {
	{ APIC_LVT_TIMER, "timer", 0 },
	{ APIC_LVT_LINT0, "lint0", 0 },
	{ APIC_LVT_LINT1, "lint1", 0 },
	{ APIC_LVT_ERROR, "error", 0 },
	{ APIC_LVT_PERF, "perf", 4 },
	{ APIC_LVT_THERMAL, "thermal", 5 },
	{ APIC_LVT_CMCI, "cmci", 6 },
};
#define NLVTS (sizeof(lvts) / sizeof(lvts[0]))

static struct {
	volatile bool taken;
	uint32_t id, version, svr, tpr, ldr, dfr, timer_icr, timer_dcr;
	uint32_t lvt[NLVTS];
} ap_reset;

static unsigned max_lvt(uint32_t version)
{
	return bits(version, 23, 16);
}

/* Runs on each AP before lib/smp.c enables its APIC; only AP 1 records. */
static void snapshot(unsigned cpu)
{
	if (cpu != 1)
		return;
	ap_reset.id = apic_read(APIC_ID);
	ap_reset.version = apic_read(APIC_VERSION);
	ap_reset.svr = apic_read(APIC_SVR);
	ap_reset.tpr = apic_read(APIC_TPR);
	ap_reset.ldr = apic_read(APIC_LDR);
	ap_reset.dfr = apic_read(APIC_DFR);
	ap_reset.timer_icr = apic_read(APIC_TIMER_ICR);
	ap_reset.timer_dcr = apic_read(APIC_TIMER_DCR);
	for (unsigned i = 0; i < NLVTS; i++)
		if (max_lvt(ap_reset.version) >= lvts[i].min_max_lvt)
			ap_reset.lvt[i] = apic_read(lvts[i].reg);
	__asm__ volatile("" ::: "memory");
	ap_reset.taken = true;
}

static void check_reset(void)
{
	char name[32];

	if (smp_ncpus < 2 || !smp_cpus[1].online || !ap_reset.taken) {
		report_skip("reset", smp_ncpus < 2 ?
			    "one CPU: only an AP's APIC is seen just after INIT" :
			    "AP 1 did not come up");
		return;
	}
	report("reset.id", ap_reset.id >> 24 == smp_cpus[1].apic_id,
	       "ID register 0x%08x, MADT says APIC ID 0x%x", ap_reset.id,
	       smp_cpus[1].apic_id);
	report("reset.svr", ap_reset.svr == 0xFF, "SVR 0x%x, expected 0xff",
	       ap_reset.svr);
	report("reset.tpr", ap_reset.tpr == 0, "TPR 0x%x", ap_reset.tpr);
	report("reset.ldr", ap_reset.ldr == 0, "LDR 0x%08x", ap_reset.ldr);
	report("reset.dfr", ap_reset.dfr == 0xFFFFFFFF, "DFR 0x%08x",
	       ap_reset.dfr);
	report("reset.timer", ap_reset.timer_icr == 0 && ap_reset.timer_dcr == 0,
	       "initial count 0x%x, divide config 0x%x", ap_reset.timer_icr,
	       ap_reset.timer_dcr);
	for (unsigned i = 0; i < NLVTS; i++) {
		if (max_lvt(ap_reset.version) < lvts[i].min_max_lvt)
			continue;
		memcpy(name, "reset.lvt_", 10);
		memcpy(name + 10, lvts[i].name, strlen(lvts[i].name) + 1);
		report(name, ap_reset.lvt[i] == LVT_RESET,
		       "0x%08x, expected 0x%08x (masked)", ap_reset.lvt[i],
		       LVT_RESET);
	}
}

static void check_version(void)
{
	uint32_t v = apic_read(APIC_VERSION);

	printf("APIC version register 0x%08x: version 0x%x, max LVT entry %u\n",
	       v, bits(v, 7, 0), max_lvt(v));
	report("version.integrated", bits(v, 7, 0) >= 0x10 && bits(v, 7, 0) <= 0x15,
	       "version 0x%x, expected 0x10-0x15", bits(v, 7, 0));
	report("version.max_lvt", max_lvt(v) >= 3 && max_lvt(v) <= 6,
	       "max LVT entry %u, expected 3-6", max_lvt(v));
	if (ap_reset.taken)
		report("version.same_on_ap", ap_reset.version == v,
		       "AP 1 has 0x%08x, the BSP 0x%08x", ap_reset.version, v);
}

static void check_tpr(void)
{
	apic_write(APIC_TPR, 0x20);
	uint32_t t = apic_read(APIC_TPR), p = apic_read(APIC_PPR);

	report("tpr.write_read", t == 0x20, "wrote 0x20, read 0x%x", t);
	report("tpr.ppr_follows", p == 0x20, "TPR 0x20, nothing in service, "
	       "PPR 0x%x", p);
	apic_write(APIC_TPR, 0xFFFFFFFF);
	t = apic_read(APIC_TPR);
	report("tpr.reserved_bits", t == 0xFF, "wrote 0xffffffff, read 0x%x", t);
	apic_write(APIC_TPR, 0);
	t = apic_read(APIC_TPR);
	report("tpr.clear", t == 0, "wrote 0, read 0x%x", t);
}

static void check_esr(void)
{
	uint32_t clean = apic_read_esr();

	report("esr.clean", clean == 0, "ESR 0x%x after a write, no errors made",
	       clean);
	if (cpuid_is_qemu_tcg()) {
		/* Seen under 7.2: bit 7 shows at once, and writes to ESR
		 * do not clear it. */
		report_skip("esr.latch", "QEMU's TCG APIC has no write-then-read "
			    "ESR: errors read back before the latching write "
			    "and writes do not clear them");
		return;
	}
	/* SDM 10.5.3 bit 7: an access to a reserved xAPIC register. */
	(void)xapic_read(ILLEGAL_REG);
	uint32_t before = apic_read(APIC_ESR);

	report("esr.not_before_write", before == 0,
	       "ESR 0x%x before the latching write: it must still show the "
	       "last write's value", before);
	apic_write(APIC_ESR, 0);
	uint32_t latched = apic_read(APIC_ESR);

	report("esr.latch", latched == ESR_ILLEGAL_REGISTER,
	       "ESR 0x%x after the write, expected 0x%x (illegal register "
	       "address)", latched, ESR_ILLEGAL_REGISTER);
	apic_write(APIC_ESR, 0);
	uint32_t cleared = apic_read(APIC_ESR);

	report("esr.cleared", cleared == 0, "ESR 0x%x after a second write",
	       cleared);
}

static void check_ldr_dfr(void)
{
	uint32_t ldr0 = apic_read(APIC_LDR), dfr0 = apic_read(APIC_DFR), v;

	apic_write(APIC_LDR, 0xFFFFFFFF);
	v = apic_read(APIC_LDR);
	report("ldr.mask", v == 0xFF000000, "wrote 0xffffffff, read 0x%08x", v);
	apic_write(APIC_LDR, 0x5A000000);
	v = apic_read(APIC_LDR);
	report("ldr.write_read", v == 0x5A000000, "wrote 0x5a000000, read 0x%08x",
	       v);
	apic_write(APIC_DFR, 0);
	v = apic_read(APIC_DFR);
	report("dfr.cluster", v == 0x0FFFFFFF, "wrote 0, read 0x%08x", v);
	apic_write(APIC_DFR, 0xFFFFFFFF);
	v = apic_read(APIC_DFR);
	report("dfr.flat", v == 0xFFFFFFFF, "wrote 0xffffffff, read 0x%08x", v);
	apic_write(APIC_LDR, ldr0);
	apic_write(APIC_DFR, dfr0);
}

static void check_svr(void)
{
	uint32_t svr0 = apic_read(APIC_SVR), timer0 = apic_read(APIC_LVT_TIMER);
	uint32_t v;

	apic_write(APIC_SVR, SVR_ENABLE | APIC_SPURIOUS_VECTOR);
	v = apic_read(APIC_SVR);
	report("svr.enable", (v & 0x1FF) == 0x1FF, "wrote 0x1ff, read 0x%x", v);

	apic_write(APIC_SVR, APIC_SPURIOUS_VECTOR);
	v = apic_read(APIC_SVR);
	report("svr.disable", (v & 0x1FF) == 0xFF, "wrote 0xff, read 0x%x", v);
	bool all_masked = true;
	uint32_t bad = 0, version = apic_read(APIC_VERSION);

	for (unsigned i = 0; i < NLVTS; i++) {
		if (max_lvt(version) < lvts[i].min_max_lvt)
			continue;
		v = apic_read(lvts[i].reg);
		if (!(v & LVT_MASKED)) {
			all_masked = false;
			bad = lvts[i].reg;
		}
	}
	if (cpuid_is_qemu_tcg()) {
		report_skip("svr.disabled_masks_lvts", "QEMU's TCG APIC neither "
			    "sets nor keeps LVT mask bits while software-disabled");
		goto enable;
	}
	report("svr.disabled_masks_lvts", all_masked,
	       "LVT at 0x%x reads unmasked while the APIC is software-disabled",
	       bad);
	apic_write(APIC_LVT_TIMER, 0x40);	/* unmasked, vector 0x40 */
	v = apic_read(APIC_LVT_TIMER);
	report("svr.disabled_keeps_mask", v & LVT_MASKED,
	       "wrote LVT timer 0x40 while disabled, read 0x%08x", v);

enable:
	apic_write(APIC_SVR, SVR_ENABLE | APIC_SPURIOUS_VECTOR);
	apic_write(APIC_LVT_TIMER, LVT_MASKED | 0x40);
	apic_write(APIC_LVT_TIMER, 0x40);
	v = apic_read(APIC_LVT_TIMER);
	report("svr.enabled_unmasks", !(v & LVT_MASKED) && (v & 0xFF) == 0x40,
	       "wrote LVT timer 0x40 while enabled, read 0x%08x", v);
	/* The timer is stopped (initial count 0), but mask it again. */
	apic_write(APIC_LVT_TIMER, timer0 | LVT_MASKED);
	apic_write(APIC_SVR, svr0 | SVR_ENABLE);
}

static void check_x2apic(void)
{
	if (!x2apic_supported()) {
		report_skip("x2apic", "CPUID.1:ECX[21] clear: no x2APIC "
			    "(QEMU 7.2's TCG has none)");
		return;
	}
	uint32_t xid = apic_id();

	x2apic_enable();
	report("x2apic.mode", apic_x2apic_mode(), "IA32_APIC_BASE.EXTD clear");
	uint32_t id = (uint32_t)x2apic_read(APIC_ID);
	uint32_t ldr = (uint32_t)x2apic_read(APIC_LDR);
	uint32_t want = (id >> 4) << 16 | 1u << (id & 0xF);

	report("x2apic.id", id == xid, "x2APIC ID 0x%x, xAPIC ID was 0x%x", id,
	       xid);
	report("x2apic.ldr", ldr == want, "LDR 0x%08x, expected 0x%08x", ldr,
	       want);
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	const char *why = smp_init();

	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	/* Past APIC ID 254 the firmware hands over x2APIC mode: the xAPIC
	 * register checks (and the APs' reset snapshots) do not apply. */
	bool handed_x2apic = apic_x2apic_mode();

	smp_boot_aps(handed_x2apic ? NULL : snapshot);
	report("smp.all_online", smp_online == smp_ncpus,
	       "%u of %u CPUs checked in", smp_online, smp_ncpus);
	if (handed_x2apic) {
		report_skip("xapic", "the firmware handed over x2APIC mode");
		check_x2apic();
		return report_summary();
	}
	check_reset();
	check_version();
	check_tpr();
	check_esr();
	check_ldr_dfr();
	check_svr();
	check_x2apic();
	return report_summary();
}
