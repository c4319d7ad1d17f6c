// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Checks the boot CPU's CPUID topology against the topology given on the
 * command line (the -smp values): the SDM says what the leaves must contain,
 * and lib/topology.c decodes them the way Linux does. Built as a 32-bit and
 * as a 64-bit image from this one source. topology_expect.h describes the
 * command line and the APIC ID layout it implies. Count fields too narrow
 * for a huge package are expected saturated at their maximum (see saturate).
 *
 * Output: what was read and decoded, "topology seen by CPU 0: ...", then one
 * PASS/FAIL/SKIP line per check and the SUMMARY.
 */
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"
#include "lib/topology.h"
#include "topology_expect.h"

#define MAX_LEVELS 8		/* subleaves of 0xB/0x1F read before giving up */

#define LEVEL_SMT 1
#define LEVEL_CORE 2
#define LEVEL_DIE 5

/* A leaf 0xB or 0x1F as read: the levels, then the terminator. */
struct ext_leaf {
	uint32_t leaf;
	const char *name;	/* check-name prefix */
	bool present;
	unsigned nlevels;	/* subleaves before the terminator */
	bool terminated;
	struct cpuid_regs sub[MAX_LEVELS + 1];
};

enum scope { SCOPE_CORE, SCOPE_DIE };

static const char *plural(uint32_t n)
{
	return n == 1 ? "" : "s";
}

/* Check names are "<prefix>.<what>"; report() prints them at once, so one
 * buffer is enough. */
static const char *join(const char *prefix, const char *what)
{
	static char buf[64];
	size_t a = strlen(prefix), b = strlen(what);

	if (a + 1 + b >= sizeof(buf))
		return prefix;
	memcpy(buf, prefix, a);
	buf[a] = '.';
	memcpy(buf + a + 1, what, b + 1);
	return buf;
}

/*
 * A count field too narrow for its SDM/APM value on a huge package saturates
 * at the field's maximum, as it must on real CPUs with that many logical
 * processors (software reads leaf 0xB/0x1F for the real counts): the expected
 * field is min(SDM/APM value, field max). When it saturates, says so on the
 * line before the check's PASS/FAIL.
 */
static uint32_t saturate(const char *check, const char *field, unsigned width,
			 uint32_t value)
{
	uint32_t max = (1u << width) - 1;

	if (value <= max)
		return value;
	printf("%s: the SDM/APM value %u does not fit %s (%u bits): "
	       "saturated at %u\n", check, value, field, width, max);
	return max;
}

static uint32_t cache_sharers(const struct expect *e, const struct cache_info *c,
			      uint32_t boot_apic)
{
	return expect_count_groups(e, 0, c->id_shift, boot_apic);
}

/* ---- what was read ---- */

static void print_regs(uint32_t leaf, uint32_t sub, struct cpuid_regs r)
{
	printf("  0x%08x 0x%02x: eax=0x%08x ebx=0x%08x ecx=0x%08x edx=0x%08x\n",
	       leaf, sub, r.eax, r.ebx, r.ecx, r.edx);
}

static void read_ext_leaf(struct ext_leaf *x, uint32_t leaf, const char *name)
{
	memset(x, 0, sizeof(*x));
	x->leaf = leaf;
	x->name = name;
	/* SDM: a leaf without topology reports EBX = 0 in subleaf 0. */
	x->present = cpuid_max_basic() >= leaf && bits(cpuid(leaf, 0).ebx, 15, 0);
	if (!x->present)
		return;
	for (unsigned sub = 0; sub <= MAX_LEVELS; sub++) {
		x->sub[sub] = cpuid(leaf, sub);
		print_regs(leaf, sub, x->sub[sub]);
		if (bits(x->sub[sub].ecx, 15, 8) == 0) {
			x->nlevels = sub;
			x->terminated = true;
			return;
		}
	}
	x->nlevels = MAX_LEVELS;
}

/* "EAX=0x1c004121" for a cache from leaf 4/0x8000001D; legacy AMD caches
 * have no sharing field, n is what Linux assumes. */
static const char *cache_origin(const struct cache_info *c)
{
	static char buf[] = "EAX=0x00000000";

	if (!c->eax)
		return "legacy leaf, n assumed";
	for (int i = 0; i < 8; i++)
		buf[6 + i] = "0123456789abcdef"[c->eax >> (28 - 4 * i) & 0xf];
	return buf;
}

static void print_decoded(const struct topology *t)
{
	printf("decoded from %s: APIC ID %u; SMT shift %u, core shift %u, "
	       "package shift %u; counts %u/core, %u/die, %u/package\n",
	       topo_source_name(t->source), t->apic_id, t->smt_shift,
	       t->core_shift, t->pkg_shift, t->threads_per_core,
	       t->logical_per_die, t->logical_per_pkg);
	if (t->nodes_per_pkg)
		printf("decoded from leaf 0x8000001e: node ID %u, %u node%s "
		       "(dies) per package\n", t->node_id, t->nodes_per_pkg,
		       plural(t->nodes_per_pkg));
}

static void print_caches(const struct expect *e, const struct topology *t)
{
	printf("caches from %s:\n", cache_source_name(t->cache_source));
	for (unsigned i = 0; i < t->ncaches; i++) {
		const struct cache_info *c = &t->caches[i];
		uint32_t n = cache_sharers(e, c, t->apic_id);

		printf("  %-3s %6u KiB (%s): n=%u -> id = APIC ID >> %u = %u, "
		       "shared by %u CPU%s%s\n",
		       cache_name(c), c->size_kib, cache_origin(c), c->sharing,
		       c->id_shift, c->id, n, plural(n),
		       (int)i == t->llc ? " (LLC)" : "");
	}
}

/* "topology seen by CPU 0: 1 package x 8 cores x 2 threads; L1d/L1i/L2
 * shared by 2 logical CPUs; L3 shared by 16 logical CPUs" */
static void print_seen(const struct expect *e, const struct topology *t)
{
	uint32_t a = t->apic_id;
	uint32_t pkgs = expect_count_groups(e, t->pkg_shift, 32, a);
	uint32_t dies = expect_count_groups(e, t->core_shift, t->pkg_shift, a);
	uint32_t cores = expect_count_groups(e, t->smt_shift, t->core_shift, a);
	uint32_t threads = expect_count_groups(e, 0, t->smt_shift, a);

	/* AMD: leaf 0xB folds the dies into its core level; the nodes of
	 * 0x8000001E split them again. */
	if (t->nodes_per_pkg > 1 && dies == 1 && cores % t->nodes_per_pkg == 0) {
		dies = t->nodes_per_pkg;
		cores /= dies;
	}
	printf("topology seen by CPU 0: %u package%s", pkgs, plural(pkgs));
	if (dies > 1 || e->dies > 1)
		printf(" x %u die%s", dies, plural(dies));
	printf(" x %u core%s x %u thread%s", cores, plural(cores), threads,
	       plural(threads));
	/* Caches come lowest level first; runs with equal sharing are merged. */
	for (unsigned i = 0; i < t->ncaches; i++) {
		uint32_t n = cache_sharers(e, &t->caches[i], a);
		bool first = i == 0 || cache_sharers(e, &t->caches[i - 1], a) != n;
		bool last = i + 1 == t->ncaches ||
			    cache_sharers(e, &t->caches[i + 1], a) != n;

		printf("%s%s", first ? "; " : "/", cache_name(&t->caches[i]));
		if (last)
			printf(" shared by %u logical CPU%s", n, plural(n));
	}
	if (t->llc >= 0)
		printf("; LLC is %s\n", cache_name(&t->caches[t->llc]));
	else
		printf("; no LLC\n");
}

/* ---- leaf 1 ---- */

static void check_leaf1(const struct expect *e)
{
	struct cpuid_regs r = cpuid(1, 0);
	bool htt = r.edx & CPUID_1_EDX_HTT;
	uint32_t ids = bits(r.ebx, 23, 16);
	/* SDM: addressable IDs, a power of two; APM: the logical processors. */
	uint32_t sdm = cpuid_vendor() == VENDOR_AMD ? e->per_pkg : 1u << e->pkg_off;

	/* SDM: HTT = 0 means one logical processor in the package. */
	report("leaf1.htt", htt || e->per_pkg == 1,
	       "EDX[28] clear, but %u logical CPUs per package", e->per_pkg);
	if (!htt) {
		report_skip("leaf1.logical_ids", "HTT clear: EBX[23:16] not valid");
		return;
	}
	uint32_t want = saturate("leaf1.logical_ids", "EBX[23:16]", 8, sdm);

	if (e->per_pkg > want)
		report("leaf1.logical_ids", ids == want,
		       "EBX=0x%08x: EBX[23:16]=%u, expected %u: %u logical CPUs "
		       "per package saturate the 8-bit field", r.ebx, ids, want,
		       e->per_pkg);
	else
		report("leaf1.logical_ids", ids >= e->per_pkg,
		       "EBX=0x%08x: EBX[23:16]=%u addressable IDs < %u logical "
		       "CPUs per package (SDM/APM value: %u%s)", r.ebx, ids,
		       e->per_pkg, want, want < sdm ? ", saturated" : "");
}

/* ---- leaves 0xB and 0x1F ---- */

static const char *level_name(unsigned type)
{
	static const char *const names[] = { "invalid", "SMT", "core",
					     "module", "tile", "die" };

	return type < 6 ? names[type] : "unknown";
}

/* The levels we expect in this leaf, lowest first; returns how many. 0xB
 * reports SMT and core only; 0x1F adds the die level, which it may leave out
 * when there is one die per package. */
static unsigned expected_levels(const struct expect *e, const struct ext_leaf *x,
				unsigned want[3])
{
	unsigned n = 0;

	want[n++] = LEVEL_SMT;
	want[n++] = LEVEL_CORE;
	if (x->leaf == 0x1F &&
	    (e->dies > 1 ||
	     (x->nlevels > 2 && bits(x->sub[2].ecx, 15, 8) == LEVEL_DIE)))
		want[n++] = LEVEL_DIE;
	return n;
}

/* SDM: EAX[4:0] shifts the x2APIC ID right to get the next level's ID;
 * EBX[15:0] counts the logical processors in one instance of the next level. */
static unsigned expected_shift(const struct expect *e, unsigned type, bool die_next)
{
	if (type == LEVEL_SMT)
		return e->smt_bits;
	if (type == LEVEL_CORE)
		return die_next ? e->die_off : e->pkg_off;
	return e->pkg_off;
}

static uint32_t expected_count(const struct expect *e, unsigned type, bool die_next)
{
	if (type == LEVEL_SMT)
		return e->per_core;
	if (type == LEVEL_CORE)
		return die_next ? e->per_die : e->per_pkg;
	return e->per_pkg;
}

static void check_levels(const struct expect *e, const struct ext_leaf *x)
{
	unsigned want[3], n = expected_levels(e, x, want);

	for (unsigned i = 0; i < n; i++) {
		if (i >= x->nlevels) {
			report(join(x->name, "levels"), false,
			       "%u level%s before the terminator, expected a %s "
			       "level at subleaf %u", x->nlevels,
			       plural(x->nlevels), level_name(want[i]), i);
			return;
		}
		unsigned type = bits(x->sub[i].ecx, 15, 8);

		if (type != want[i]) {
			report(join(x->name, "levels"), false,
			       "subleaf %u is a %s level (ECX=0x%08x), expected %s",
			       i, level_name(type), x->sub[i].ecx, level_name(want[i]));
			return;
		}
		if (bits(x->sub[i].ecx, 7, 0) != i) {
			report(join(x->name, "levels"), false,
			       "subleaf %u reports ECX[7:0]=%u", i,
			       bits(x->sub[i].ecx, 7, 0));
			return;
		}
	}
	report(join(x->name, "levels"), x->nlevels == n,
	       "subleaf %u is an unexpected %s level", n,
	       level_name(bits(x->sub[n].ecx, 15, 8)));

	bool shifts_ok = true, counts_ok = true;
	unsigned bad_shift = 0, bad_count = 0;
	unsigned levels = x->nlevels < n ? x->nlevels : n;

	for (unsigned i = 0; i < levels; i++) {
		bool die_next = i + 1 < n && want[i + 1] == LEVEL_DIE;

		if (shifts_ok && bits(x->sub[i].eax, 4, 0) !=
				 expected_shift(e, want[i], die_next)) {
			shifts_ok = false;
			bad_shift = i;
		}
		if (counts_ok && bits(x->sub[i].ebx, 15, 0) !=
				 expected_count(e, want[i], die_next)) {
			counts_ok = false;
			bad_count = i;
		}
	}
	bool die_next = bad_shift + 1 < n && want[bad_shift + 1] == LEVEL_DIE;
	report(join(x->name, "shifts"), shifts_ok,
	       "subleaf %u (%s): EAX=0x%08x, shift %u, expected %u", bad_shift,
	       level_name(want[bad_shift]), x->sub[bad_shift].eax,
	       bits(x->sub[bad_shift].eax, 4, 0),
	       expected_shift(e, want[bad_shift], die_next));
	die_next = bad_count + 1 < n && want[bad_count + 1] == LEVEL_DIE;
	report(join(x->name, "counts"), counts_ok,
	       "subleaf %u (%s): EBX=0x%08x, %u logical CPUs, expected %u",
	       bad_count, level_name(want[bad_count]), x->sub[bad_count].ebx,
	       bits(x->sub[bad_count].ebx, 15, 0),
	       expected_count(e, want[bad_count], die_next));
}

static void check_terminator(const struct ext_leaf *x)
{
	const struct cpuid_regs *t = &x->sub[x->nlevels];

	if (!x->terminated) {
		report(join(x->name, "terminator"), false,
		       "no level type 0 within %u subleaves", MAX_LEVELS + 1);
		return;
	}
	/* SDM: EAX = EBX = 0 and level type 0; ECX[7:0] still echoes the
	 * subleaf. Readers stop on different fields, so all must agree. */
	report(join(x->name, "terminator"),
	       t->eax == 0 && t->ebx == 0 && bits(t->ecx, 7, 0) == x->nlevels,
	       "subleaf %u: eax=0x%08x ebx=0x%08x ecx=0x%08x", x->nlevels,
	       t->eax, t->ebx, t->ecx);
}

static void check_x2apic_id(const struct ext_leaf *x)
{
	uint32_t apic8 = bits(cpuid(1, 0).ebx, 31, 24);

	/* Linux: "[Firmware Bug] ... APIC ID mismatch" when these differ.
	 * sub[nlevels] is the terminator, or the last subleaf read. */
	for (unsigned i = 1; i <= x->nlevels; i++) {
		if (x->sub[i].edx != x->sub[0].edx) {
			report(join(x->name, "x2apic_id"), false,
			       "subleaf %u EDX=0x%08x, subleaf 0 EDX=0x%08x", i,
			       x->sub[i].edx, x->sub[0].edx);
			return;
		}
	}
	report(join(x->name, "x2apic_id"), (x->sub[0].edx & 0xff) == apic8,
	       "x2APIC ID 0x%08x, but leaf 1 EBX[31:24] = 0x%02x",
	       x->sub[0].edx, apic8);
}

static void check_ext_leaf(const struct expect *e, const struct ext_leaf *x)
{
	if (!x->present) {
		if (cpuid_max_basic() < x->leaf)
			report_skip(x->name, "max basic leaf is 0x%x",
				    cpuid_max_basic());
		else
			report_skip(x->name, "subleaf 0 EBX = 0: not implemented");
		return;
	}
	check_levels(e, x);
	check_terminator(x);
	check_x2apic_id(x);
}

/* ---- the decoded topology ---- */

/* The index of CPU 0's die among all dies: the node ID 0x8000001E gives it. */
static uint32_t boot_die(const struct expect *e)
{
	struct cpu_pos boot = expect_cpu(e, 0);

	return boot.pkg * e->dies + boot.die;
}

static void check_decoded(const struct expect *e, const struct topology *t,
			  const struct ext_leaf *leaf_1f)
{
	const char *src = topo_source_name(t->source);
	/* AMD has no leaf 0x1F: with TOPOEXT the dies are the nodes of
	 * 0x8000001E, and leaf 0xB folds them into its core level. */
	bool amd_nodes = t->vendor == VENDOR_AMD && cpuid_has_topoext();

	if (e->dies > 1 && amd_nodes)
		report("topology.die_level",
		       t->nodes_per_pkg == e->dies && t->node_id == boot_die(e),
		       "dies=%u, CPU 0 in die %u, but leaf 0x8000001e reports "
		       "%u node%s per package, node ID %u", e->dies, boot_die(e),
		       t->nodes_per_pkg, plural(t->nodes_per_pkg), t->node_id);
	else if (e->dies > 1)
		report("topology.die_level", leaf_1f->present,
		       "dies=%u, but no leaf 0x1f: the die level is invisible",
		       e->dies);
	report("topology.boot_apic_id", t->apic_id == expect_cpu(e, 0).apic_id,
	       "boot CPU has APIC ID %u, CPU 0 should have %u", t->apic_id,
	       expect_cpu(e, 0).apic_id);
	report("topology.smt_shift", t->smt_shift == e->smt_bits,
	       "decoded %u from %s, expected %u", t->smt_shift, src, e->smt_bits);
	if (amd_nodes && !leaf_1f->present)
		report("topology.core_shift", t->core_shift == e->pkg_off,
		       "decoded %u from %s, expected the package shift %u (no "
		       "leaf 0x1f: leaf 0xb folds the dies into the core level)",
		       t->core_shift, src, e->pkg_off);
	else
		report("topology.core_shift", t->core_shift == e->die_off,
		       "decoded %u from %s, expected %u", t->core_shift, src,
		       e->die_off);
	report("topology.package_shift", t->pkg_shift == e->pkg_off,
	       "decoded %u from %s, expected %u", t->pkg_shift, src, e->pkg_off);
}

/* ---- caches ---- */

static const struct cache_info *find_cache(const struct topology *t,
					   unsigned level, enum cache_type type)
{
	for (unsigned i = 0; i < t->ncaches; i++)
		if (t->caches[i].level == level && t->caches[i].type == type)
			return &t->caches[i];
	return NULL;
}

/* Compares the CPUs that share the cache by Linux's decode (same
 * apicid >> id_shift) with the CPUs of the boot CPU's core or die. */
static void check_sharing(const char *name, const struct expect *e,
			  const struct cache_info *c, enum scope scope)
{
	struct cpu_pos boot = expect_cpu(e, 0);
	const char *scope_name = scope == SCOPE_CORE ? "core" : "die";
	uint32_t expected = scope == SCOPE_CORE ? e->per_core : e->per_die;

	for (uint32_t i = 0; i < e->cpus; i++) {
		struct cpu_pos p = expect_cpu(e, i);
		bool same = p.pkg == boot.pkg && p.die == boot.die &&
			    (scope == SCOPE_DIE || p.core == boot.core);
		bool shares = p.apic_id >> c->id_shift == c->id;

		if (same != shares) {
			report(name, false,
			       "%s: n=%u -> APIC ID >> %u; CPU %u (APIC ID %u) %s "
			       "it, but is %s the %s of CPU 0 (%u CPU%s)",
			       cache_origin(c), c->sharing, c->id_shift, i, p.apic_id,
			       shares ? "shares" : "does not share",
			       same ? "in" : "outside", scope_name, expected,
			       plural(expected));
			return;
		}
	}
	report(name, true, NULL);
}

static void check_core_cache(const char *prefix, const char *what,
			      const struct expect *e, const struct topology *t,
			      unsigned level, enum cache_type type)
{
	const struct cache_info *c = find_cache(t, level, type);

	if (c)
		check_sharing(join(prefix, what), e, c, SCOPE_CORE);
	else
		report(join(prefix, what), false, "no such cache in %s",
		       cache_source_name(t->cache_source));
}

/* Leaf 4 EAX[31:26] + 1 is the number of addressable core IDs in the
 * package (SDM: 1 << core+die bits). Linux's legacy path only uses
 * ceil_log2 of it, so a real core count that rounds up the same passes.
 * More than 64 core IDs saturate the field at 63, which must be exact. */
static void check_leaf4_core_ids(const struct expect *e)
{
	unsigned want = e->pkg_off - e->core_off;
	uint32_t field = saturate("leaf4.core_ids", "EAX[31:26]", 6,
				  (1u << want) - 1);
	bool saturated = field != (1u << want) - 1;

	for (uint32_t sub = 0; sub < TOPO_MAX_CACHES; sub++) {
		uint32_t eax = cpuid(4, sub).eax;

		if (bits(eax, 4, 0) == CACHE_TYPE_NULL)
			break;
		if (saturated && bits(eax, 31, 26) != field) {
			report("leaf4.core_ids", false,
			       "subleaf %u EAX=0x%08x: EAX[31:26]=%u, expected %u: "
			       "%u core-ID bits saturate the 6-bit field", sub, eax,
			       bits(eax, 31, 26), field, want);
			return;
		}
		if (!saturated && ceil_log2(bits(eax, 31, 26) + 1) != want) {
			report("leaf4.core_ids", false,
			       "subleaf %u EAX=0x%08x: EAX[31:26]=%u -> %u core-ID "
			       "bits, expected %u (SDM value EAX[31:26]=%u)",
			       sub, eax, bits(eax, 31, 26),
			       ceil_log2(bits(eax, 31, 26) + 1), want,
			       (1u << want) - 1);
			return;
		}
	}
	report("leaf4.core_ids", true, NULL);
}

/* prefix names the checks: "cache" for the caches Linux would use. */
static void check_caches(const char *prefix, const struct expect *e,
			 const struct topology *t)
{
	if (t->cache_source == CACHE_SRC_NONE) {
		report_skip(prefix, "no cache leaves");
		return;
	}
	if (t->cache_source == CACHE_SRC_LEAF_4 ||
	    t->cache_source == CACHE_SRC_8000001D)
		report(join(prefix, "terminator"), !t->cache_leaf_unterminated,
		       "no type-0 subleaf within %u subleaves of %s",
		       TOPO_MAX_CACHES, cache_source_name(t->cache_source));
	if (t->cache_source == CACHE_SRC_LEAF_4)
		check_leaf4_core_ids(e);

	check_core_cache(prefix, "l1d.shared_by_core", e, t, 1, CACHE_TYPE_DATA);
	check_core_cache(prefix, "l1i.shared_by_core", e, t, 1, CACHE_TYPE_INST);
	check_core_cache(prefix, "l2.shared_by_core", e, t, 2, CACHE_TYPE_UNIFIED);

	const struct cache_info *l3 = find_cache(t, 3, CACHE_TYPE_UNIFIED);
	report(join(prefix, "l3.present"), (l3 != NULL) == e->l3,
	       "L3 %s, but l3=%s", l3 ? "present" : "absent", e->l3 ? "on" : "off");
	if (l3 && e->l3)
		check_sharing(join(prefix, "l3.shared_by_die"), e, l3, SCOPE_DIE);

	/* What the scheduler uses: cpus_share_cache() is "same LLC id". */
	if (t->llc < 0)
		report(join(prefix, "llc"), false, "no L2 or L3");
	else
		check_sharing(join(prefix, "llc"), e, &t->caches[t->llc],
			      e->l3 ? SCOPE_DIE : SCOPE_CORE);
}

/* ---- AMD ---- */

static void check_amd(const struct expect *e, const struct topology *t)
{
	uint32_t max_ext = cpuid_max_ext();

	if (max_ext >= 0x80000008) {
		uint32_t ecx = cpuid(0x80000008, 0).ecx;
		uint32_t nc = bits(ecx, 7, 0) + 1, size = bits(ecx, 15, 12);
		/* Linux derives the width from NC when ApicIdCoreIdSize is 0. */
		unsigned width = size ? size : ceil_log2(nc);

		uint32_t want = saturate("amd.80000008.nc", "ECX[7:0] NC", 8,
					 e->per_pkg - 1);

		if (want != e->per_pkg - 1)
			report("amd.80000008.nc", nc - 1 == want,
			       "ECX=0x%08x: NC = %u, expected %u: %u threads per "
			       "package saturate the 8-bit field", ecx, nc - 1,
			       want, e->per_pkg);
		else
			report("amd.80000008.nc", nc == e->per_pkg,
			       "ECX=0x%08x: NC+1 = %u threads, expected %u per "
			       "package", ecx, nc, e->per_pkg);
		report("amd.80000008.apic_id_size", width == e->pkg_off,
		       "ECX=0x%08x: ApicIdCoreIdSize %u -> %u bits, expected %u",
		       ecx, size, width, e->pkg_off);
	} else {
		report_skip("amd.80000008", "max extended leaf 0x%x", max_ext);
	}

	/*
	 * Without TOPOEXT these two leaves are reserved and Linux ignores them,
	 * but QEMU fills them anyway (TCG cannot offer TOPOEXT), so check them
	 * as plain CPUID content too.
	 */
	if (max_ext >= 0x8000001D && t->cache_source != CACHE_SRC_8000001D) {
		struct topology raw = *t;

		printf("TOPOEXT clear: checking 0x8000001d/0x8000001e as raw leaves\n");
		topology_read_cache_leaf(&raw, 0x8000001D);
		print_caches(e, &raw);
		check_caches("amd.8000001d", e, &raw);
	}
	if (max_ext < 0x8000001E) {
		report_skip("amd.8000001e", "max extended leaf 0x%x", max_ext);
		return;
	}
	struct cpuid_regs r = cpuid(0x8000001E, 0);

	report("amd.8000001e.apic_id", r.eax == t->apic_id,
	       "EAX=0x%08x, but the APIC ID is 0x%x", r.eax, t->apic_id);
	report("amd.8000001e.threads_per_core",
	       bits(r.ebx, 15, 8) + 1 == e->threads,
	       "EBX=0x%08x: %u threads per core, expected %u", r.ebx,
	       bits(r.ebx, 15, 8) + 1, e->threads);
	/* QEMU presents each die as a node. */
	report("amd.8000001e.nodes_per_package",
	       bits(r.ecx, 10, 8) + 1 == e->dies,
	       "ECX=0x%08x: %u nodes per package, expected %u (dies)", r.ecx,
	       bits(r.ecx, 10, 8) + 1, e->dies);
	report("amd.8000001e.node_id", bits(r.ecx, 7, 0) == boot_die(e),
	       "ECX=0x%08x: node ID %u, but CPU 0 is in die %u", r.ecx,
	       bits(r.ecx, 7, 0), boot_die(e));
}

int main(const struct multiboot_info *mbi)
{
	struct expect e;
	struct topology t;
	struct ext_leaf leaf_b, leaf_1f;
	char vendor[13];

	printf("topology_check (%u-bit code)\n", (unsigned)sizeof(void *) * 8);
	printf("cmdline: %s\n", cmdline_get());
	if (!expect_parse(&e))
		return report_summary();

	cpuid_vendor_string(vendor);
	printf("CPU: %s, max basic leaf 0x%x, max extended leaf 0x%x\n", vendor,
	       cpuid_max_basic(), cpuid_max_ext());
	expect_print(&e);
	print_regs(1, 0, cpuid(1, 0));
	read_ext_leaf(&leaf_b, 0xB, "leaf0xb");
	read_ext_leaf(&leaf_1f, 0x1F, "leaf0x1f");
	topology_decode(&t);
	print_decoded(&t);
	print_caches(&e, &t);
	print_seen(&e, &t);

	check_leaf1(&e);
	check_ext_leaf(&e, &leaf_b);
	check_ext_leaf(&e, &leaf_1f);
	check_decoded(&e, &t, &leaf_1f);
	check_caches("cache", &e, &t);
	if (t.vendor == VENDOR_AMD)
		check_amd(&e, &t);
	return report_summary();
}
