// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/topology.h"
#include "lib/string.h"

#define LEVEL_TYPE_INVALID 0
#define LEVEL_TYPE_SMT 1
#define LEVEL_TYPE_CORE 2
#define LEVEL_TYPE_DIE 5

/* Enough for any real level list; bounds the walk if the terminator is missing. */
#define MAX_TOPO_SUBLEAVES 16

unsigned ceil_log2(uint32_t n)
{
	unsigned w = 0;

	while (w < 32 && (1ull << w) < n)
		w++;
	return w;
}

/* Linux's check_extended_topology_leaf(): subleaf 0 must be SMT, count != 0. */
static bool ext_leaf_usable(uint32_t leaf)
{
	if (cpuid_max_basic() < leaf)
		return false;
	struct cpuid_regs r = cpuid(leaf, 0);

	return bits(r.ebx, 15, 0) != 0 && bits(r.ecx, 15, 8) == LEVEL_TYPE_SMT;
}

/* Linux's detect_extended_topology(): levels it does not know (module, tile)
 * are folded into the next level it knows. */
static void decode_ext_leaf(struct topology *t, uint32_t leaf)
{
	struct cpuid_regs r = cpuid(leaf, 0);

	t->apic_id = r.edx;
	t->smt_shift = t->core_shift = t->pkg_shift = bits(r.eax, 4, 0);
	t->threads_per_core = t->logical_per_die = t->logical_per_pkg =
		bits(r.ebx, 15, 0);
	for (uint32_t sub = 1; sub < MAX_TOPO_SUBLEAVES; sub++) {
		r = cpuid(leaf, sub);
		unsigned type = bits(r.ecx, 15, 8);

		if (type == LEVEL_TYPE_CORE) {
			t->core_shift = t->pkg_shift = bits(r.eax, 4, 0);
			t->logical_per_die = t->logical_per_pkg = bits(r.ebx, 15, 0);
		} else if (type == LEVEL_TYPE_DIE) {
			t->pkg_shift = bits(r.eax, 4, 0);
			t->logical_per_pkg = bits(r.ebx, 15, 0);
		} else if (type == LEVEL_TYPE_INVALID) {
			break;
		}
	}
}

/* Linux's detect_ht() with intel_num_cpu_cores(), for CPUs without leaf 0xB. */
static void decode_intel_legacy(struct topology *t)
{
	struct cpuid_regs l1 = cpuid(1, 0);
	uint32_t logical = 1, cores = 1;

	if (l1.edx & CPUID_1_EDX_HTT)
		logical = bits(l1.ebx, 23, 16);
	if (cpuid_max_basic() >= 4)
		cores = bits(cpuid(4, 0).eax, 31, 26) + 1;
	if (logical < cores)
		logical = cores;
	t->threads_per_core = logical / cores;
	t->logical_per_die = t->logical_per_pkg = logical;
	t->smt_shift = ceil_log2(t->threads_per_core);
	t->core_shift = t->pkg_shift = ceil_log2(logical);
}

/* Linux's early_init_amd_mc() and amd_detect_cmp(): the package shift is
 * ApicIdCoreIdSize, or derived from the thread count when that is 0. */
static void decode_amd_legacy(struct topology *t)
{
	uint32_t logical = 1, id_bits = 0;

	if (cpuid_max_ext() >= 0x80000008) {
		uint32_t ecx = cpuid(0x80000008, 0).ecx;

		logical = bits(ecx, 7, 0) + 1;
		id_bits = bits(ecx, 15, 12);
		if (!id_bits)
			id_bits = ceil_log2(logical);
	}
	t->threads_per_core = 1;	/* no SMT information without TOPOEXT */
	if (cpuid_has_topoext() && cpuid_max_ext() >= 0x8000001E)
		t->threads_per_core = bits(cpuid(0x8000001E, 0).ebx, 15, 8) + 1;
	t->logical_per_die = t->logical_per_pkg = logical;
	t->smt_shift = ceil_log2(t->threads_per_core);
	t->core_shift = t->pkg_shift = id_bits;
}

static void add_cache(struct topology *t, unsigned level, enum cache_type type,
		      uint32_t size_kib, uint32_t sharing, unsigned id_shift,
		      uint32_t eax)
{
	if (t->ncaches == TOPO_MAX_CACHES)
		return;
	struct cache_info *c = &t->caches[t->ncaches++];

	c->level = level;
	c->type = type;
	c->size_kib = size_kib;
	c->sharing = sharing;
	c->id_shift = id_shift;
	c->id = t->apic_id >> id_shift;
	c->eax = eax;
}

static void find_llc(struct topology *t)
{
	t->llc = -1;
	for (unsigned want = 3; want >= 2 && t->llc < 0; want--)
		for (unsigned i = 0; i < t->ncaches; i++)
			if (t->caches[i].level == want &&
			    t->caches[i].type != CACHE_TYPE_INST)
				t->llc = (int)i;
}

/* Leaf 4 and 0x8000001D share one layout. */
void topology_read_cache_leaf(struct topology *t, uint32_t leaf)
{
	unsigned sub;

	t->cache_source = leaf == 4 ? CACHE_SRC_LEAF_4 : CACHE_SRC_8000001D;
	t->ncaches = 0;
	for (sub = 0; sub < TOPO_MAX_CACHES; sub++) {
		struct cpuid_regs r = cpuid(leaf, sub);
		enum cache_type type = (enum cache_type)bits(r.eax, 4, 0);

		if (type == CACHE_TYPE_NULL)
			break;
		uint64_t bytes = (uint64_t)(bits(r.ebx, 31, 22) + 1) *
				 (bits(r.ebx, 21, 12) + 1) *
				 (bits(r.ebx, 11, 0) + 1) * ((uint64_t)r.ecx + 1);
		uint32_t n = bits(r.eax, 25, 14) + 1;

		add_cache(t, bits(r.eax, 7, 5), type, (uint32_t)(bytes >> 10), n,
			  ceil_log2(n), r.eax);
	}
	t->cache_leaf_unterminated = sub == TOPO_MAX_CACHES;
	find_llc(t);
}

/* Linux's amd_cpuid4() emulation: nothing is shared below the L3, and the L3
 * (the LLC) is shared by the package (cacheinfo_amd_init_llc_id). */
static void decode_amd_legacy_caches(struct topology *t)
{
	uint32_t max = cpuid_max_ext();

	if (max >= 0x80000005) {
		struct cpuid_regs r = cpuid(0x80000005, 0);

		if (bits(r.ecx, 31, 24))
			add_cache(t, 1, CACHE_TYPE_DATA, bits(r.ecx, 31, 24), 1, 0, 0);
		if (bits(r.edx, 31, 24))
			add_cache(t, 1, CACHE_TYPE_INST, bits(r.edx, 31, 24), 1, 0, 0);
	}
	if (max >= 0x80000006) {
		struct cpuid_regs r = cpuid(0x80000006, 0);

		if (bits(r.ecx, 31, 16))
			add_cache(t, 2, CACHE_TYPE_UNIFIED, bits(r.ecx, 31, 16), 1, 0, 0);
		if (bits(r.edx, 31, 18))
			add_cache(t, 3, CACHE_TYPE_UNIFIED, bits(r.edx, 31, 18) * 512,
				  t->logical_per_pkg, t->pkg_shift, 0);
	}
}

void topology_decode(struct topology *t)
{
	bool amd;

	memset(t, 0, sizeof(*t));
	t->vendor = cpuid_vendor();
	amd = t->vendor == VENDOR_AMD;
	t->apic_id = bits(cpuid(1, 0).ebx, 31, 24);

	if ((!amd || cpuid_has_topoext()) && ext_leaf_usable(0x1F)) {
		t->source = TOPO_SRC_LEAF_1F;
		decode_ext_leaf(t, 0x1F);
	} else if ((!amd || cpuid_has_topoext()) && ext_leaf_usable(0xB)) {
		t->source = TOPO_SRC_LEAF_B;
		decode_ext_leaf(t, 0xB);
	} else if (amd) {
		t->source = TOPO_SRC_AMD_LEGACY;
		decode_amd_legacy(t);
	} else {
		t->source = TOPO_SRC_INTEL_LEGACY;
		decode_intel_legacy(t);
	}
	if (amd && cpuid_has_topoext() && cpuid_max_ext() >= 0x8000001E) {
		uint32_t ecx = cpuid(0x8000001E, 0).ecx;

		t->nodes_per_pkg = bits(ecx, 10, 8) + 1;
		t->node_id = bits(ecx, 7, 0);
	}

	if (amd && cpuid_has_topoext() && cpuid_max_ext() >= 0x8000001D) {
		topology_read_cache_leaf(t, 0x8000001D);
	} else if (amd) {
		t->cache_source = CACHE_SRC_AMD_LEGACY;
		decode_amd_legacy_caches(t);
		find_llc(t);
	} else if (cpuid_max_basic() >= 4) {
		topology_read_cache_leaf(t, 4);
	} else {
		t->llc = -1;
	}
}

const char *topo_source_name(enum topo_source s)
{
	switch (s) {
	case TOPO_SRC_LEAF_1F:
		return "leaf 0x1f";
	case TOPO_SRC_LEAF_B:
		return "leaf 0xb";
	case TOPO_SRC_INTEL_LEGACY:
		return "leaves 1 and 4 (legacy)";
	case TOPO_SRC_AMD_LEGACY:
		return "leaf 0x80000008 (AMD legacy)";
	}
	return "?";
}

const char *cache_source_name(enum cache_source s)
{
	switch (s) {
	case CACHE_SRC_NONE:
		return "none";
	case CACHE_SRC_LEAF_4:
		return "leaf 4";
	case CACHE_SRC_8000001D:
		return "leaf 0x8000001d";
	case CACHE_SRC_AMD_LEGACY:
		return "leaves 0x80000005/6 (AMD legacy)";
	}
	return "?";
}

const char *cache_name(const struct cache_info *c)
{
	static const char *const names[][4] = {
		/* null, data, instruction, unified */
		{ "L?", "L?d", "L?i", "L?" },
		{ "L1", "L1d", "L1i", "L1" },
		{ "L2", "L2d", "L2i", "L2" },
		{ "L3", "L3d", "L3i", "L3" },
		{ "L4", "L4d", "L4i", "L4" },
	};

	return names[c->level < 5 ? c->level : 0][c->type & 3];
}
