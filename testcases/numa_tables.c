// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NUMA as the firmware describes it (ACPI 6.5 5.2.16 SRAT, 5.2.17 SLIT),
 * for a run with -numa: every SRAT entry and the SLIT's matrix are printed
 * as "numa:" lines, which under topolab and QEMU 7.2 with the same -smp,
 * -m, -object and -numa options must be the same lines (tests/numa_tables.sh
 * compares them), and the tables are checked against each other:
 *
 *   - the SRAT is there, revision 1 or later, its reserved word 1;
 *   - every enabled CPU of the MADT has exactly one enabled SRAT processor
 *     entry (type 0, or type 2 for an x2APIC ID), and the CPU this runs on
 *     has one;
 *   - the enabled memory ranges do not overlap, and the proximity domains
 *     of the processor and memory entries number nodes=N (the command line);
 *   - with dist=1 on the command line, the SLIT has N localities, 10 on its
 *     diagonal and more than 10 off it (what Linux's slit_valid() asks);
 *     without it, there is no SLIT;
 *   - with hmat=1 (-machine hmat=on), the HMAT (ACPI 6.5 5.2.28) is there,
 *     its structures' lengths add up to the table's (a locality structure's
 *     to 32 + 4s + 4t + 2st), every structure is printed, and its domains
 *     are in range: memory and target domains below N, a valid initiator
 *     and every initiator of a locality structure a domain the SRAT gives
 *     processors; without it, there is no HMAT.
 */
#include "lib/acpi.h"
#include "lib/apic.h"
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

#define SRAT_LOCAL_APIC		0
#define SRAT_MEMORY		1
#define SRAT_LOCAL_X2APIC	2
#define SRAT_ENABLED		(1u << 0)
#define MAX_CPUS		512
#define MAX_DOMAINS		128
#define MAX_RANGES		256

struct srat_local_apic {
	uint8_t type, length, domain_lo, apic_id;
	uint32_t flags;
	uint8_t sapic_eid, domain_hi[3];
	uint32_t clock_domain;
} __attribute__((packed));

struct srat_memory {
	uint8_t type, length;
	uint32_t domain;
	uint16_t reserved;
	uint64_t base, length_bytes;
	uint32_t reserved2, flags;
	uint64_t reserved3;
} __attribute__((packed));

struct srat_local_x2apic {
	uint8_t type, length;
	uint16_t reserved;
	uint32_t domain, x2apic_id, flags, clock_domain, reserved2;
} __attribute__((packed));

static struct madt_cpu madt[MAX_CPUS];
static unsigned srat_hits[MAX_CPUS];
static bool domain_seen[MAX_DOMAINS], cpu_domain[MAX_DOMAINS];
static uint64_t range_base[MAX_RANGES], range_end[MAX_RANGES];

static int madt_index(uint32_t apic_id, int n)
{
	for (int i = 0; i < n && i < MAX_CPUS; ++i)
		if (madt[i].apic_id == apic_id)
			return i;
	return -1;
}

static void note_domain(uint32_t domain, bool *bad_domain)
{
	if (domain < MAX_DOMAINS)
		domain_seen[domain] = true;
	else
		*bad_domain = true;
}

static void note_cpu_domain(uint32_t domain, bool *bad_domain)
{
	note_domain(domain, bad_domain);
	if (domain < MAX_DOMAINS)
		cpu_domain[domain] = true;
}

static void read_srat(const struct acpi_header *srat, int cpus)
{
	const uint8_t *p = (const uint8_t *)srat + 48, *end = (const uint8_t *)srat + srat->length;
	unsigned ranges = 0, bad_entries = 0;
	bool overlap = false, bad_domain = false;

	printf("numa: srat revision=%u reserved=%u\n", srat->revision, *(const uint32_t *)((const uint8_t *)srat + 36));
	report("numa.srat_header", srat->revision >= 1 && *(const uint32_t *)((const uint8_t *)srat + 36) == 1,
	       "revision %u", srat->revision);
	while (p + 2 <= end && p[1] >= 2 && p + p[1] <= end) {
		if (p[0] == SRAT_LOCAL_APIC && p[1] == sizeof(struct srat_local_apic)) {
			const struct srat_local_apic *e = (const void *)p;
			uint32_t domain = e->domain_lo | (srat->revision >= 2 ?
				(uint32_t)e->domain_hi[0] << 8 | (uint32_t)e->domain_hi[1] << 16 |
				(uint32_t)e->domain_hi[2] << 24 : 0);

			printf("numa: srat cpu apic=%u node=%u flags=%u\n", e->apic_id, domain, e->flags);
			if (e->flags & SRAT_ENABLED) {
				int i = madt_index(e->apic_id, cpus);
				if (i >= 0)
					++srat_hits[i];
				note_cpu_domain(domain, &bad_domain);
			}
		} else if (p[0] == SRAT_LOCAL_X2APIC && p[1] == sizeof(struct srat_local_x2apic)) {
			const struct srat_local_x2apic *e = (const void *)p;

			printf("numa: srat cpu x2apic=%u node=%u flags=%u\n", e->x2apic_id, e->domain, e->flags);
			if (e->flags & SRAT_ENABLED) {
				int i = madt_index(e->x2apic_id, cpus);
				if (i >= 0)
					++srat_hits[i];
				note_cpu_domain(e->domain, &bad_domain);
			}
		} else if (p[0] == SRAT_MEMORY && p[1] == sizeof(struct srat_memory)) {
			const struct srat_memory *e = (const void *)p;

			printf("numa: srat memory node=%u base=0x%llx length=0x%llx flags=%u\n", e->domain,
			       (unsigned long long)e->base, (unsigned long long)e->length_bytes, e->flags);
			if ((e->flags & SRAT_ENABLED) && e->length_bytes) {
				for (unsigned r = 0; r < ranges; ++r)
					if (e->base < range_end[r] && range_base[r] < e->base + e->length_bytes)
						overlap = true;
				if (ranges < MAX_RANGES) {
					range_base[ranges] = e->base;
					range_end[ranges++] = e->base + e->length_bytes;
				}
				note_domain(e->domain, &bad_domain);
			}
		} else {
			printf("numa: srat entry type=%u length=%u\n", p[0], p[1]);
			++bad_entries;
		}
		p += p[1];
	}
	report("numa.srat_entries", bad_entries == 0 && p == end, "%u unknown entries, %u bytes left over",
	       bad_entries, (unsigned)(end - p));
	report("numa.memory_apart", !overlap, "enabled memory ranges overlap");
	report("numa.domains_in_range", !bad_domain, "a proximity domain of %u or more", MAX_DOMAINS);
}

static void read_slit(const struct acpi_header *slit, uint32_t nodes)
{
	const uint8_t *body = (const uint8_t *)slit + 36;
	uint64_t localities = *(const uint64_t *)body;
	const uint8_t *matrix = body + 8;
	bool valid = slit->length == 44 + localities * localities;

	printf("numa: slit revision=%u localities=%llu\n", slit->revision, (unsigned long long)localities);
	for (uint64_t i = 0; valid && i < localities; ++i) {
		printf("numa: slit row %llu:", (unsigned long long)i);
		for (uint64_t j = 0; j < localities; ++j) {
			uint8_t d = matrix[i * localities + j];

			printf(" %u", d);
			if ((i == j && d != 10) || (i != j && d <= 10))
				valid = false;
		}
		printf("\n");
	}
	report_eq("numa.slit_localities", localities, nodes);
	report("numa.slit_valid", valid, "a length that does not hold the matrix, a diagonal other than 10 or a "
	       "remote distance of 10 or less");
}

#define HMAT_PROXIMITY		0
#define HMAT_LOCALITY		1
#define HMAT_CACHE		2
#define HMAT_INITIATOR_VALID	(1u << 0)

struct hmat_structure {
	uint16_t type, reserved;
	uint32_t length;
} __attribute__((packed));

struct hmat_proximity {	/* 5.2.28.4 */
	struct hmat_structure h;
	uint16_t flags, reserved;
	uint32_t initiator, memory, reserved2;
	uint64_t reserved3[2];
} __attribute__((packed));

struct hmat_locality {	/* 5.2.28.5, then the lists and the entries */
	struct hmat_structure h;
	uint8_t flags, data_type, min_transfer_size, reserved;
	uint32_t initiators, targets, reserved2;
	uint64_t base_unit;
} __attribute__((packed));

struct hmat_cache {	/* 5.2.28.6 */
	struct hmat_structure h;
	uint32_t memory, reserved;
	uint64_t size;
	uint32_t attributes;
	uint16_t reserved2, smbios_handles;
} __attribute__((packed));

static bool cpu_domain_ok(uint32_t d)
{
	return d < MAX_DOMAINS && cpu_domain[d];
}

static void read_locality(const struct hmat_locality *l, uint32_t nodes, bool *bad_length, bool *bad_domain)
{
	const uint32_t *initiators = (const uint32_t *)(l + 1), *targets = initiators + l->initiators;
	const uint16_t *entries = (const uint16_t *)(targets + l->targets);

	printf("numa: hmat locality flags=%u type=%u initiators=%u targets=%u base=%llu\n", l->flags, l->data_type,
	       l->initiators, l->targets, (unsigned long long)l->base_unit);
	if (l->initiators > MAX_DOMAINS || l->targets > MAX_DOMAINS ||
	    l->h.length != sizeof(*l) + 4 * l->initiators + 4 * l->targets + 2 * l->initiators * l->targets) {
		*bad_length = true;
		return;
	}
	printf("numa: hmat locality initiator list:");
	for (uint32_t i = 0; i < l->initiators; ++i) {
		printf(" %u", initiators[i]);
		*bad_domain |= !cpu_domain_ok(initiators[i]);
	}
	printf("\nnuma: hmat locality target list:");
	for (uint32_t t = 0; t < l->targets; ++t) {
		printf(" %u", targets[t]);
		*bad_domain |= targets[t] >= nodes;
	}
	printf("\n");
	for (uint32_t i = 0; i < l->initiators; ++i) {
		printf("numa: hmat locality row %u:", initiators[i]);
		for (uint32_t t = 0; t < l->targets; ++t)
			printf(" %u", entries[i * l->targets + t]);
		printf("\n");
	}
}

static void read_hmat(const struct acpi_header *hmat, uint32_t nodes)
{
	const uint8_t *p = (const uint8_t *)hmat + 40, *end = (const uint8_t *)hmat + hmat->length;
	bool bad_length = false, bad_domain = false;
	unsigned unknown = 0;

	printf("numa: hmat revision=%u length=%u\n", hmat->revision, hmat->length);
	while (p + sizeof(struct hmat_structure) <= end) {
		const struct hmat_structure *h = (const void *)p;

		if (h->length < sizeof(*h) || p + h->length > end) {
			bad_length = true;
			break;
		}
		if (h->type == HMAT_PROXIMITY && h->length == sizeof(struct hmat_proximity)) {
			const struct hmat_proximity *e = (const void *)p;

			printf("numa: hmat domain memory=%u flags=%u initiator=%u\n", e->memory, e->flags, e->initiator);
			bad_domain |= e->memory >= nodes;
			if (e->flags & HMAT_INITIATOR_VALID)
				bad_domain |= !cpu_domain_ok(e->initiator);
		} else if (h->type == HMAT_LOCALITY && h->length >= sizeof(struct hmat_locality)) {
			read_locality((const void *)p, nodes, &bad_length, &bad_domain);
		} else if (h->type == HMAT_CACHE && h->length == sizeof(struct hmat_cache)) {
			const struct hmat_cache *e = (const void *)p;

			printf("numa: hmat cache memory=%u size=%llu attributes=0x%x smbios=%u\n", e->memory,
			       (unsigned long long)e->size, e->attributes, e->smbios_handles);
			bad_domain |= e->memory >= nodes;
		} else {
			printf("numa: hmat entry type=%u length=%u\n", h->type, h->length);
			++unknown;
		}
		p += h->length;
	}
	report("numa.hmat_lengths", !bad_length && p == end && unknown == 0,
	       "structure lengths that do not add up to the table's (%u unknown structures)", unknown);
	report("numa.hmat_domains", !bad_domain, "a domain past the %u nodes, or an initiator without processors",
	       nodes);
}

/* A table is there exactly when its option is given; NULL when not wanted. */
static const struct acpi_header *expect_table(const char *signature, bool given, const char *present_test,
					      const char *absent_test, const char *option)
{
	const struct acpi_header *t = acpi_find_table(signature);

	if (given)
		report(present_test, t != NULL, "no %s with %s", signature, option);
	else
		report(absent_test, t == NULL, "a %s without %s", signature, option);
	return given ? t : NULL;
}

int main(const struct multiboot_info *mbi)
{
	uint32_t nodes = 0, dist = 0, hmat = 0;

	cmdline_init(mbi);
	if (cmdline_uint("nodes", &nodes) != CMDLINE_FOUND || nodes == 0) {
		report("numa.cmdline", false, "needs nodes=N (the -numa node options given) [dist=1 with -numa dist] "
		       "[hmat=1 with -machine hmat=on]");
		return report_summary();
	}
	cmdline_uint("dist", &dist);
	cmdline_uint("hmat", &hmat);

	int cpus = acpi_madt_cpus(madt, MAX_CPUS, NULL);
	const struct acpi_header *srat = acpi_find_table("SRAT");
	report("numa.srat", srat != NULL, "no SRAT");
	if (srat) {
		read_srat(srat, cpus);
		unsigned missing = 0, twice = 0;
		for (int i = 0; i < cpus && i < MAX_CPUS; ++i) {
			missing += srat_hits[i] == 0;
			twice += srat_hits[i] > 1;
		}
		report("numa.cpus_have_domains", cpus > 0 && missing == 0 && twice == 0,
		       "%u of %d MADT CPUs without an SRAT entry, %u with more than one", missing, cpus, twice);
		int self = madt_index(apic_id(), cpus);
		report("numa.boot_cpu_listed", self >= 0 && srat_hits[self] == 1, "APIC ID %u", apic_id());
		uint32_t domains = 0;
		for (unsigned d = 0; d < MAX_DOMAINS; ++d)
			domains += domain_seen[d];
		report_eq("numa.domains", domains, nodes);
	}
	const struct acpi_header *slit = expect_table("SLIT", dist, "numa.slit", "numa.no_slit", "-numa dist");
	if (slit)
		read_slit(slit, nodes);
	const struct acpi_header *hmat_table = expect_table("HMAT", hmat, "numa.hmat", "numa.no_hmat",
							    "-machine hmat=on");
	if (hmat_table)
		read_hmat(hmat_table, nodes);
	return report_summary();
}
