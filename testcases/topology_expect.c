// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/string.h"
#include "lib/topology.h"
#include "topology_expect.h"

static const char *plural(uint32_t n)
{
	return n == 1 ? "" : "s";
}

struct cpu_pos expect_cpu(const struct expect *e, uint32_t i)
{
	struct cpu_pos p;

	p.smt = i % e->threads;
	i /= e->threads;
	p.core = i % e->cores;
	i /= e->cores;
	p.die = i % e->dies;
	p.pkg = i / e->dies;
	p.apic_id = p.pkg << e->pkg_off | p.die << e->die_off |
		    p.core << e->core_off | p.smt;
	return p;
}

static bool read_count(const char *key, uint32_t *v, bool *given)
{
	*v = 1;
	switch (cmdline_uint(key, v)) {
	case CMDLINE_ABSENT:
		*given = false;
		return true;
	case CMDLINE_FOUND:
		*given = true;
		if (*v >= 1 && *v <= MAX_CPUS)
			return true;
		return report("cmdline", false, "%s=%u is out of range 1..%u",
			      key, *v, MAX_CPUS);
	case CMDLINE_INVALID:
		break;
	}
	return report("cmdline", false, "%s= is not a number", key);
}

bool expect_parse(struct expect *e)
{
	bool given, cores_given, cpus_given;
	char l3[8] = "on";

	memset(e, 0, sizeof(*e));
	if (!read_count("sockets", &e->sockets, &given) ||
	    !read_count("dies", &e->dies, &given) ||
	    !read_count("cores", &e->cores, &cores_given) ||
	    !read_count("threads", &e->threads, &given) ||
	    !read_count("cpus", &e->cpus, &cpus_given))
		return false;

	/* Each count is at most MAX_CPUS, so these products fit in 64 bits. */
	uint64_t others = (uint64_t)e->sockets * e->dies * e->threads;
	uint64_t total = others * e->cores;
	if (!cores_given && cpus_given) {
		/* 32-bit arithmetic: 64-bit division would need libgcc. */
		if (others > e->cpus || e->cpus % (uint32_t)others)
			return report("cmdline", false,
				      "cpus=%u is not a multiple of sockets*dies*threads",
				      e->cpus);
		e->cores = e->cpus / (uint32_t)others;
		total = e->cpus;
	}
	if (total > MAX_CPUS)
		return report("cmdline", false,
			      "sockets*dies*cores*threads is more than %u", MAX_CPUS);
	if (!cpus_given)
		e->cpus = (uint32_t)total;
	if (e->cpus > total)
		return report("cmdline", false,
			      "cpus=%u exceeds sockets*dies*cores*threads=%u",
			      e->cpus, (uint32_t)total);

	cmdline_str("l3", l3, sizeof(l3));
	if (strcmp(l3, "on") && strcmp(l3, "off"))
		return report("cmdline", false, "l3=%s is neither on nor off", l3);
	e->l3 = !strcmp(l3, "on");

	e->smt_bits = ceil_log2(e->threads);
	e->core_bits = ceil_log2(e->cores);
	e->die_bits = ceil_log2(e->dies);
	e->core_off = e->smt_bits;
	e->die_off = e->core_off + e->core_bits;
	e->pkg_off = e->die_off + e->die_bits;
	e->per_core = e->threads;
	e->per_die = e->threads * e->cores;
	e->per_pkg = e->per_die * e->dies;
	return true;
}

/* Expected APIC IDs grow with the CPU index, so distinct values are counted
 * as changes along the way. */
uint32_t expect_count_groups(const struct expect *e, unsigned lo, unsigned hi,
			     uint32_t boot_apic)
{
	uint32_t groups = 0;
	uint64_t last = ~0ull;

	for (uint32_t i = 0; i < e->cpus; i++) {
		uint64_t apic = expect_cpu(e, i).apic_id;

		if (apic >> hi != (uint64_t)boot_apic >> hi)
			continue;
		if (apic >> lo != last)
			groups++;
		last = apic >> lo;
	}
	return groups;
}

void expect_print(const struct expect *e)
{
	printf("expected: %u socket%s x %u die%s x %u core%s x %u thread%s, "
	       "%u CPU%s, l3=%s\n",
	       e->sockets, plural(e->sockets), e->dies, plural(e->dies),
	       e->cores, plural(e->cores), e->threads, plural(e->threads),
	       e->cpus, plural(e->cpus), e->l3 ? "on" : "off");
	printf("expected APIC ID fields: SMT %u bit%s, core %u, die %u "
	       "(core shift %u, die shift %u, package shift %u)\n",
	       e->smt_bits, plural(e->smt_bits), e->core_bits, e->die_bits,
	       e->core_off, e->die_off, e->pkg_off);
}
