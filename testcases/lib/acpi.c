// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/acpi.h"
#include "lib/io.h"
#include "lib/string.h"

#define BIOS_AREA_START	0xE0000
#define BIOS_AREA_END	0x100000
#define EBDA_SEG_PTR	0x40E	/* BDA word: EBDA segment (ACPI 5.2.5.1) */
#define RSDP_ALIGN	16
#define RSDP_V1_SIZE	20
/* Bounds the walk if a table length is garbage. */
#define MAX_TABLE_LEN	(1u << 20)

/* lib/string.h has no memcmp; only equality matters here. */
static bool same(const void *a, const void *b, uint32_t n)
{
	const uint8_t *x = a, *y = b;

	while (n--)
		if (*x++ != *y++)
			return false;
	return true;
}

static uint8_t sum(const void *p, uint32_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	while (n--)
		s += *b++;
	return s;
}

static const struct acpi_rsdp *scan(uintptr_t start, uintptr_t end)
{
	for (uintptr_t a = start; a + RSDP_V1_SIZE <= end; a += RSDP_ALIGN) {
		const struct acpi_rsdp *r = (const struct acpi_rsdp *)a;

		if (same(r->signature, "RSD PTR ", 8) &&
		    sum(r, RSDP_V1_SIZE) == 0)
			return r;
	}
	return NULL;
}

const struct acpi_rsdp *acpi_find_rsdp(void)
{
	/* Hidden from gcc, which takes any address below 4 KiB for NULL + n. */
	uintptr_t bda = EBDA_SEG_PTR;
	const struct acpi_rsdp *r = NULL;

	__asm__("" : "+r"(bda));
	uintptr_t ebda = (uintptr_t)*(volatile uint16_t *)bda << 4;

	if (ebda >= 0x80000 && ebda < 0xA0000)
		r = scan(ebda, ebda + 1024);
	return r ? r : scan(BIOS_AREA_START, BIOS_AREA_END);
}

static bool table_ok(const struct acpi_header *h)
{
	return h && h->length >= sizeof(*h) && h->length <= MAX_TABLE_LEN &&
	       sum(h, h->length) == 0;
}

const struct acpi_header *acpi_find_table(const char sig[4])
{
	const struct acpi_rsdp *r = acpi_find_rsdp();

	if (!r)
		return NULL;
	/* The XSDT when there is one below 4 GiB (ACPI 5.2.5.3), else the RSDT. */
	bool x = r->revision >= 2 && r->xsdt && !(r->xsdt >> 32) &&
		 sum(r, r->length < 36 ? 36 : r->length) == 0;
	const struct acpi_header *sdt = (const struct acpi_header *)(uintptr_t)
		(x ? (uint32_t)r->xsdt : r->rsdt);

	if (!table_ok(sdt))
		return NULL;
	unsigned width = x ? 8 : 4;
	unsigned n = (sdt->length - sizeof(*sdt)) / width;
	const uint8_t *ptrs = (const uint8_t *)(sdt + 1);

	for (unsigned i = 0; i < n; i++) {
		uint64_t a = 0;

		memcpy(&a, ptrs + i * width, width);	/* may be unaligned */
		if (a >> 32)
			continue;
		const struct acpi_header *h =
			(const struct acpi_header *)(uintptr_t)a;

		if (same(h->signature, sig, 4) && table_ok(h))
			return h;
	}
	return NULL;
}

int acpi_madt_cpus(struct madt_cpu *out, unsigned max, uint32_t *lapic_addr)
{
	const struct acpi_header *madt = acpi_find_table("APIC");

	if (!madt)
		return -1;
	const uint8_t *p = (const uint8_t *)madt;
	uint32_t off = sizeof(*madt) + 8;	/* local APIC address, flags */
	unsigned n = 0;

	if (lapic_addr)
		memcpy(lapic_addr, p + sizeof(*madt), 4);
	while (off + 2 <= madt->length) {
		uint8_t type = p[off], len = p[off + 1];
		struct madt_cpu c = { 0 };
		uint32_t flags;

		if (len < 2 || off + len > madt->length)
			break;	/* malformed: stop rather than loop */
		if (type == MADT_LOCAL_APIC && len >= 8) {
			/* uid u8, APIC ID u8, flags u32 */
			c.uid = p[off + 2];
			c.apic_id = p[off + 3];
			memcpy(&flags, p + off + 4, 4);
		} else if (type == MADT_LOCAL_X2APIC && len >= 16) {
			/* reserved u16, x2APIC ID u32, flags u32, UID u32 */
			memcpy(&c.apic_id, p + off + 4, 4);
			memcpy(&flags, p + off + 8, 4);
			memcpy(&c.uid, p + off + 12, 4);
			c.x2apic_entry = true;
		} else {
			off += len;
			continue;
		}
		if (flags & MADT_CPU_ENABLED) {
			if (n < max)
				out[n] = c;
			n++;
		}
		off += len;
	}
	return (int)n;
}

#define FW_CFG_SEL	0x510
#define FW_CFG_DATA	0x511
#define FW_CFG_SIGNATURE 0x00
#define FW_CFG_NB_CPUS	0x05

static void fwcfg_select(uint16_t key)
{
	__asm__ volatile("outw %0, %1" : : "a"(key), "Nd"((uint16_t)FW_CFG_SEL));
}

uint32_t fwcfg_cpu_count(void)
{
	char sig[4];

	fwcfg_select(FW_CFG_SIGNATURE);
	for (int i = 0; i < 4; i++)
		sig[i] = (char)inb(FW_CFG_DATA);
	if (!same(sig, "QEMU", 4))
		return 0;
	fwcfg_select(FW_CFG_NB_CPUS);
	uint32_t lo = inb(FW_CFG_DATA);

	return lo | (uint32_t)inb(FW_CFG_DATA) << 8;	/* u16, little-endian */
}
