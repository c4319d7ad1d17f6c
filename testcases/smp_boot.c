// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Brings up every CPU the MADT lists (INIT, STARTUP, STARTUP; lib/smp.h) and
 * has each one check its own CPUID topology the way Linux does against its
 * APIC ID and the MADT:
 *   - the local APIC ID register, CPUID.1:EBX[31:24] and the x2APIC ID of
 *     leaf 0xB/0x1F EDX (the same in every subleaf) agree, as Linux's
 *     "[Firmware Bug]: APIC ID mismatch" checks want;
 *   - that ID is the one the MADT gave for this CPU;
 *   - package/die/core/thread decode from it with the leaf's shifts, and with
 *     a topology on the command line (sockets= dies= cores= threads= cpus=,
 *     as topology_check; all optional) they sit where QEMU's layout puts them.
 * Each CPU prints "cpu N: APIC ID 0x.., package p core c thread t" under the
 * print lock; the BSP then reports one PASS/FAIL per CPU and the SUMMARY.
 */
#include "lib/acpi.h"
#include "lib/apic.h"
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"
#include "lib/topology.h"
#include "topology_expect.h"

#define MAX_SUBLEAVES 8

struct result {
	volatile bool checked;
	bool ok;
	const char *why;	/* the first failed check */
	uint32_t got, want;
	uint32_t apic, pkg, die, core, thread;
};

static struct result results[SMP_MAX_CPUS];
static struct expect expect;
static bool have_expect;

static uint32_t mask(unsigned width)
{
	return width >= 32 ? ~0u : (1u << width) - 1;
}

static void fail(struct result *r, const char *why, uint32_t got, uint32_t want)
{
	if (!r->ok)
		return;		/* keep the first */
	r->ok = false;
	r->why = why;
	r->got = got;
	r->want = want;
}

/* EDX of every subleaf up to the terminator must be the same x2APIC ID. */
static void check_edx(struct result *r, uint32_t leaf, uint32_t id)
{
	for (uint32_t sub = 0; sub < MAX_SUBLEAVES; sub++) {
		struct cpuid_regs x = cpuid(leaf, sub);

		if (x.edx != id)
			fail(r, leaf == 0xB ? "leaf 0xb EDX differs between subleaves"
					    : "leaf 0x1f EDX differs between subleaves",
			     x.edx, id);
		if (!bits(x.ecx, 15, 8))
			break;
	}
}

static void check_cpu(unsigned cpu)
{
	struct result *r = &results[cpu];
	struct topology t;
	uint32_t reg = apic_id();
	uint32_t initial = bits(cpuid(1, 0).ebx, 31, 24);

	topology_decode(&t);
	r->ok = true;
	r->apic = t.apic_id;
	if (initial != (reg & 0xFF))
		fail(r, "CPUID.1:EBX[31:24] differs from the APIC ID register",
		     initial, reg);
	if (t.source == TOPO_SRC_LEAF_B || t.source == TOPO_SRC_LEAF_1F) {
		if (t.apic_id != reg)
			fail(r, "the x2APIC ID in leaf 0xb/0x1f EDX differs from "
			     "the APIC ID register", t.apic_id, reg);
		check_edx(r, t.source == TOPO_SRC_LEAF_B ? 0xB : 0x1F, t.apic_id);
	}
	if (t.apic_id != smp_cpus[cpu].apic_id)
		fail(r, "the CPUID APIC ID differs from the MADT's for this CPU",
		     t.apic_id, smp_cpus[cpu].apic_id);

	/* Linux's detect_extended_topology(): thread, core, die, package. */
	r->thread = t.apic_id & mask(t.smt_shift);
	r->core = (t.apic_id >> t.smt_shift) & mask(t.core_shift - t.smt_shift);
	r->die = (t.apic_id >> t.core_shift) & mask(t.pkg_shift - t.core_shift);
	r->pkg = t.pkg_shift >= 32 ? 0 : t.apic_id >> t.pkg_shift;

	if (have_expect) {
		uint32_t i;
		struct cpu_pos p = { 0 };

		for (i = 0; i < expect.cpus; i++) {
			p = expect_cpu(&expect, i);
			if (p.apic_id == t.apic_id)
				break;
		}
		if (i == expect.cpus) {
			fail(r, "the APIC ID is not in the expected layout",
			     t.apic_id, 0);
		} else if (t.source == TOPO_SRC_AMD_LEGACY) {
			/* No SMT or die level is visible to Linux here (AMD
			 * without TOPOEXT): its core ID is every APIC ID bit
			 * below the package, which is all we can expect. */
			uint32_t in_pkg = p.apic_id & mask(expect.pkg_off);

			if (r->pkg != p.pkg)
				fail(r, "package ID", r->pkg, p.pkg);
			if (r->core != in_pkg >> t.smt_shift)
				fail(r, "core ID (AMD legacy: thread and die bits "
				     "included)", r->core, in_pkg >> t.smt_shift);
			if (r->thread != (in_pkg & mask(t.smt_shift)))
				fail(r, "thread ID", r->thread,
				     in_pkg & mask(t.smt_shift));
		} else {
			if (r->pkg != p.pkg)
				fail(r, "package ID", r->pkg, p.pkg);
			if (r->die != p.die)
				fail(r, "die ID", r->die, p.die);
			if (r->core != p.core)
				fail(r, "core ID", r->core, p.core);
			if (r->thread != p.smt)
				fail(r, "thread ID", r->thread, p.smt);
		}
	}
	smp_printf("cpu %u: APIC ID 0x%02x, package %u core %u thread %u\n",
		   cpu, t.apic_id, r->pkg, r->core, r->thread);
	__asm__ volatile("" ::: "memory");
	r->checked = true;
}

static bool any_topology_key(void)
{
	static const char *const keys[] = { "sockets", "dies", "cores",
					    "threads", "cpus" };
	uint32_t v;

	for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (cmdline_uint(keys[i], &v) != CMDLINE_ABSENT)
			return true;
	return false;
}

static void check_madt(void)
{
	uint32_t fw = fwcfg_cpu_count();

	printf("MADT: %u enabled CPU%s:", smp_madt_count,
	       smp_madt_count == 1 ? "" : "s");
	for (unsigned i = 0; i < smp_ncpus; i++)
		printf(" 0x%x", smp_cpus[i].apic_id);
	printf("\n");

	bool unique = true;

	for (unsigned i = 0; i < smp_ncpus; i++)
		for (unsigned j = i + 1; j < smp_ncpus; j++)
			if (smp_cpus[i].apic_id == smp_cpus[j].apic_id)
				unique = false;
	report("madt.unique_apic_ids", unique, "an APIC ID is listed twice");
	if (fw)
		report("madt.count_matches_fw_cfg", smp_madt_count == fw,
		       "MADT %u, fw_cfg CPU count %u", smp_madt_count, fw);
	else
		report_skip("madt.count_matches_fw_cfg", "no fw_cfg");
	if (!have_expect)
		return;
	report("madt.count", smp_madt_count == expect.cpus,
	       "MADT lists %u, expected %u", smp_madt_count, expect.cpus);
	bool same = smp_ncpus == expect.cpus;
	uint32_t bad = 0;

	for (unsigned i = 0; same && i < expect.cpus; i++) {
		uint32_t id = expect_cpu(&expect, i).apic_id;
		bool found = false;

		for (unsigned j = 0; j < smp_ncpus; j++)
			found |= smp_cpus[j].apic_id == id;
		if (!found) {
			same = false;
			bad = id;
		}
	}
	report("madt.apic_ids", same,
	       smp_ncpus == expect.cpus ? "expected APIC ID 0x%x is missing"
					: "%u CPUs listed", smp_ncpus == expect.cpus ?
					  bad : smp_ncpus);
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	if (any_topology_key()) {
		if (!expect_parse(&expect))
			return report_summary();
		have_expect = true;
		expect_print(&expect);
	} else {
		printf("no sockets=/dies=/cores=/threads=/cpus= on the command "
		       "line: checking consistency only\n");
	}

	const char *why = smp_init();

	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	check_madt();

	struct topology t;

	topology_decode(&t);
	printf("CPU topology from %s\n", topo_source_name(t.source));
	if (t.source == TOPO_SRC_AMD_LEGACY && have_expect &&
	    (expect.threads > 1 || expect.dies > 1))
		printf("note: AMD without TOPOEXT: Linux sees no SMT or die "
		       "level, so its core IDs include those APIC ID bits\n");
	check_cpu(0);
	smp_boot_aps(check_cpu);

	char missing[SMP_MAX_CPUS * 11 + 1];	/* " 0x" + 8 digits each */
	unsigned nmissing = 0, len = 0;

	for (unsigned i = 1; i < smp_ncpus; i++) {
		if (smp_cpus[i].online)
			continue;
		static const char hex[] = "0123456789abcdef";
		uint32_t id = smp_cpus[i].apic_id;

		missing[len++] = ' ';
		missing[len++] = '0';
		missing[len++] = 'x';
		int top = 28;

		while (top > 0 && !(id >> top))
			top -= 4;
		for (; top >= 0; top -= 4)
			missing[len++] = hex[(id >> top) & 0xF];
		nmissing++;
	}
	missing[len] = '\0';
	report("smp.all_online", nmissing == 0 && smp_online == smp_ncpus,
	       "%u of %u CPUs checked in; missing APIC IDs:%s",
	       smp_online, smp_ncpus, missing);

	for (unsigned i = 0; i < smp_ncpus; i++) {
		struct result *r = &results[i];
		char name[24] = "cpu";
		unsigned n = 3, v = i, d = 1;

		while (d * 10 <= v)
			d *= 10;
		for (; d; d /= 10)
			name[n++] = (char)('0' + v / d % 10);
		memcpy(name + n, ".topology", 10);
		if (!r->checked) {
			report(name, false, "APIC ID 0x%x never ran its check",
			       smp_cpus[i].apic_id);
			continue;
		}
		report(name, r->ok, "%s: got 0x%x, expected 0x%x", r->why,
		       r->got, r->want);
	}
	return report_summary();
}
