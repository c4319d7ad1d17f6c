// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A hybrid part as the guest library decodes it on every CPU: the BSP
 * brings up all CPUs (lib/smp.h), each CPU decodes its own leaves with
 * lib/topology.c (Linux's rules) and reads leaf 0x1A, then the BSP checks
 * them against the command line:
 *
 *   pcpus=N ecpus=N  the CPUs of each core type (leaf 0x1A EAX[31:24]:
 *                    0x40 Core, 0x20 Atom)
 *   pl2=N el2=N      the CPUs sharing one L2 for each type, which is
 *                    Linux's cluster domain (cpu_l2c_id: the APIC ID with
 *                    the L2's sharing bits masked off)
 *
 * and that CPUID.07H:EDX[15] says hybrid on every CPU and every CPU of one
 * L2 reports the same core type. Output: one line per CPU, PASS/FAIL lines,
 * the SUMMARY.
 */
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/topology.h"

#define CORE_TYPE_ATOM 0x20
#define CORE_TYPE_CORE 0x40
#define LEAF7_EDX_HYBRID (1u << 15)

struct seen {
	uint32_t apic_id;
	uint32_t core_type;	/* leaf 0x1A EAX[31:24] */
	uint32_t l2_id;		/* 0 sharing bits masked off; ~0 without an L2 */
	uint32_t l2_size_kib;
	bool hybrid_flag;
};

static struct seen seen[SMP_MAX_CPUS];
static unsigned idx[SMP_MAX_CPUS];

static void decode_this_cpu(void *arg)
{
	struct seen *s = &seen[*(unsigned *)arg];
	struct topology t;

	topology_decode(&t);
	s->apic_id = t.apic_id;
	s->core_type = cpuid_max_basic() >= 0x1a ? bits(cpuid(0x1a, 0).eax, 31, 24) : 0;
	s->hybrid_flag = cpuid_max_basic() >= 7 && (cpuid(7, 0).edx & LEAF7_EDX_HYBRID);
	s->l2_id = ~0u;
	for (unsigned i = 0; i < t.ncaches; i++) {
		const struct cache_info *c = &t.caches[i];

		if (c->level == 2 && c->type != CACHE_TYPE_INST) {
			s->l2_id = t.apic_id & ~((1u << c->id_shift) - 1);
			s->l2_size_kib = c->size_kib;
		}
	}
}

/* CPUs whose L2 is cpu's, checking they all have cpu's core type. */
static unsigned l2_sharers(unsigned cpu, bool *mixed)
{
	unsigned n = 0;

	for (unsigned j = 0; j < smp_ncpus; j++) {
		if (seen[j].l2_id != seen[cpu].l2_id)
			continue;
		n++;
		if (seen[j].core_type != seen[cpu].core_type)
			*mixed = true;
	}
	return n;
}

static uint32_t want(const char *key)
{
	uint32_t v = 0;

	if (cmdline_uint(key, &v) != CMDLINE_FOUND)
		report(key, false, "missing from the command line");
	return v;
}

static void check(unsigned ncpus)
{
	uint32_t pcpus = want("pcpus"), ecpus = want("ecpus");
	uint32_t pl2 = want("pl2"), el2 = want("el2");
	unsigned got_p = 0, got_e = 0, bad_l2 = 0, flagless = 0;
	unsigned first_bad = 0;
	bool mixed = false;

	for (unsigned i = 0; i < ncpus; i++) {
		bool p = seen[i].core_type == CORE_TYPE_CORE;
		unsigned sharers = l2_sharers(i, &mixed);

		got_p += p;
		got_e += seen[i].core_type == CORE_TYPE_ATOM;
		flagless += !seen[i].hybrid_flag;
		if (sharers != (p ? pl2 : el2) && !bad_l2++)
			first_bad = i;
		printf("cpu %u: APIC ID 0x%x, core type 0x%x (%s), L2 %u KiB shared by %u CPUs\n", i,
		       seen[i].apic_id, seen[i].core_type, p ? "Core" : "Atom", seen[i].l2_size_kib,
		       sharers);
	}
	report("hybrid.flag", flagless == 0, "%u CPUs without CPUID.07H:EDX[15]", flagless);
	report("hybrid.p_cores", got_p == pcpus, "%u CPUs report core type 0x40, expected %u", got_p,
	       pcpus);
	report("hybrid.e_cores", got_e == ecpus, "%u CPUs report core type 0x20, expected %u", got_e,
	       ecpus);
	report("hybrid.l2_clusters", bad_l2 == 0,
	       "%u CPUs share their L2 with another count than pl2=%u / el2=%u (first: CPU %u)", bad_l2,
	       pl2, el2, first_bad);
	report("hybrid.l2_one_core_type", !mixed, "an L2 is shared by CPUs of both core types");
}

int main(const struct multiboot_info *mbi)
{
	const char *why;
	unsigned ok = 0;

	(void)mbi;	/* start.c has read the command line */
	why = smp_init();
	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	smp_boot_aps(NULL);
	for (unsigned i = 0; i < smp_ncpus; i++) {
		idx[i] = i;
		if (smp_cpus[i].online && smp_run_on(i, decode_this_cpu, &idx[i]) && smp_wait_done(i))
			ok++;
	}
	if (report("hybrid.all_cpus", ok == smp_ncpus, "%u of %u CPUs decoded their leaves", ok,
		   smp_ncpus))
		check(smp_ncpus);
	return report_summary();
}
