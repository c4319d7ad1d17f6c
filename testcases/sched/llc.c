// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which CPUs share a last-level cache, decided per CPU from its own CPUID as
 * Linux does (REFERENCE §3; arch/x86/kernel/cpu/cacheinfo.c), so that
 * cpus_share_cache(a, b) is "same llc_id":
 * - Intel (and anything not AMD/Hygon): the leaf 4 caches (lib/topology.c);
 *   the LLC is the L3 if there is one, else the L2; llc_id = APIC ID >>
 *   ceil_log2(1 + EAX[25:14]). No cache leaf: no CPU shares one.
 * - AMD (cacheinfo_amd_init_llc_id): amd_detect_cmp first sets the package
 *   (APIC ID >> ApicIdCoreIdSize); then, only if CPUID 0x80000006 EDX
 *   reports an L3:
 *   - family < 0x17: the node (0x8000001E ECX[7:0] with TOPOEXT, which
 *     without TOPOEXT stays the package);
 *   - family 0x17, model <= 0x1F (Zen 1): the core complex, APIC ID >> 3;
 *   - later: the last 0x8000001D subleaf, APIC ID >> ceil_log2(1 +
 *     EAX[25:14]), if that subleaf reports any sharing.
 *   So on qemu64 (AuthenticAMD family 15) the package is the LLC with
 *   l3-cache=on and off alike. Hygon family 0x18 (APIC ID >> 3 in Linux)
 *   takes the "later" rule here.
 */
#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/topology.h"

#include "sched/sched.h"

uint32_t llc_id[SCHED_MAX_CPUS];
unsigned sd_llc_size[SCHED_MAX_CPUS];

static void family_model(uint32_t *family, uint32_t *model)
{
	uint32_t eax = cpuid(1, 0).eax;

	*family = bits(eax, 11, 8);
	*model = bits(eax, 7, 4);
	if (*family == 0xf) {
		*family += bits(eax, 27, 20);
		*model |= bits(eax, 19, 16) << 4;
	}
}

/* Linux find_num_cache_leaves() on AMD, minus one: the LLC's subleaf. */
static uint32_t amd_8000001d_llc_sharing(void)
{
	unsigned sub = 0;

	if (!cpuid_has_topoext() || cpuid_max_ext() < 0x8000001D)
		return 0;
	while (sub < 16 && bits(cpuid(0x8000001D, sub).eax, 4, 0) != 0)
		sub++;
	if (sub == 0)
		return 0;
	uint32_t eax = cpuid(0x8000001D, sub - 1).eax;

	return eax ? bits(eax, 25, 14) + 1 : 0;
}

/* With print set (CPU 0, from llc_print) it also says which rule decided. */
static uint32_t amd_llc_id(const struct topology *t, bool print)
{
	uint32_t family, model, apic = t->apic_id;
	uint32_t l3 = cpuid_max_ext() >= 0x80000006 ? cpuid(0x80000006, 0).edx : 0;
	uint32_t pkg = apic >> t->pkg_shift;

	family_model(&family, &model);
	if (!l3) {
		if (print)
			printf("AMD family 0x%x, no L3 in CPUID 0x80000006 EDX: the package "
			       "(APIC ID >> %u)\n", family, t->pkg_shift);
		return pkg;
	}
	if (family < 0x17) {
		if (t->nodes_per_pkg) {
			if (print)
				printf("AMD family 0x%x < 0x17: the node (0x8000001E ECX[7:0])\n",
				       family);
			return t->node_id;
		}
		if (print)
			printf("AMD family 0x%x < 0x17: the node, which without TOPOEXT is the "
			       "package (APIC ID >> %u)\n", family, t->pkg_shift);
		return pkg;
	}
	if (family == 0x17 && model <= 0x1f) {
		if (print)
			printf("AMD Zen 1 (family 0x17 model 0x%x): the core complex, "
			       "APIC ID >> 3\n", model);
		return apic >> 3;
	}
	uint32_t n = amd_8000001d_llc_sharing();

	if (!n) {
		if (print)
			printf("AMD family 0x%x, no sharing in 0x8000001D: the package "
			       "(APIC ID >> %u)\n", family, t->pkg_shift);
		return pkg;
	}
	if (print)
		printf("AMD family 0x%x, 0x8000001D: the LLC is shared by %u APIC IDs "
		       "(APIC ID >> %u)\n", family, n, ceil_log2(n));
	return apic >> ceil_log2(n);
}

static uint32_t intel_llc_id(const struct topology *t, bool print)
{
	if (t->llc < 0) {
		if (print)
			printf("no cache leaf: no two CPUs share an LLC\n");
		return t->apic_id;
	}
	const struct cache_info *c = &t->caches[t->llc];

	if (print)
		printf("leaf 4: the LLC is the L%u, shared by %u APIC ID%s (APIC ID >> %u)\n",
		       c->level, c->sharing, c->sharing == 1 ? "" : "s", c->id_shift);
	return t->apic_id >> c->id_shift;
}

static uint32_t decide(bool print)
{
	struct topology t;

	topology_decode(&t);
	return t.vendor == VENDOR_AMD ? amd_llc_id(&t, print) : intel_llc_id(&t, print);
}

void llc_detect_this_cpu(unsigned cpu)
{
	if (cpu < SCHED_MAX_CPUS)
		llc_id[cpu] = decide(false);
}

unsigned llc_size(unsigned cpu)
{
	unsigned n = 0;

	for (unsigned i = 0; i < cfg.ncpus; i++)
		n += cpus_share_cache(i, cpu);
	return n;
}

/* Linux's per-CPU sd_llc_size (update_top_cache_domain): the CPUs in use
 * that share this CPU's LLC, itself included; 1 without a shared LLC. */
void llc_sizes_init(void)
{
	for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
		sd_llc_size[cpu] = llc_size(cpu);
}

/* "sched: LLC groups (CPU indices): 0-7 | 8-15" */
void llc_print(void)
{
	static bool printed[SCHED_MAX_CPUS];

	printf("sched: LLC rule (CPU 0): ");
	decide(true);
	printf("sched: LLC groups (CPU indices):");
	for (unsigned i = 0; i < cfg.ncpus; i++) {
		if (printed[i])
			continue;
		if (i)
			printf(" |");
		for (unsigned j = i; j < cfg.ncpus;) {
			if (!cpus_share_cache(i, j)) {
				j++;
				continue;
			}
			unsigned k = j;

			while (k + 1 < cfg.ncpus && cpus_share_cache(i, k + 1))
				k++;
			for (unsigned m = j; m <= k; m++)
				printed[m] = true;
			if (k == j)
				printf(" %u", j);
			else
				printf(" %u-%u", j, k);
			j = k + 1;
		}
	}
	printf("\n");
}
