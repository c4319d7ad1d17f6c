// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ACPI tables a test needs to find the CPUs (ACPI 6.5 chapter 5):
 * RSDP on a 16-byte boundary in the BIOS area 0xE0000-0xFFFFF (or the first
 * KiB of the EBDA) -> RSDT (32-bit pointers) or XSDT -> MADT ("APIC").
 * Everything is read in place: the tables lie below 4 GiB, identity-mapped.
 * Checksums are verified; a table that fails them is not returned.
 */
#ifndef LIB_ACPI_H
#define LIB_ACPI_H

#include <stdbool.h>
#include <stdint.h>

struct acpi_rsdp {
	char signature[8];	/* "RSD PTR " */
	uint8_t checksum;	/* over the first 20 bytes */
	char oem_id[6];
	uint8_t revision;	/* 0: ACPI 1.0 (RSDT only); 2: has the XSDT */
	uint32_t rsdt;
	uint32_t length;	/* revision >= 2 from here on */
	uint64_t xsdt;
	uint8_t ext_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
} __attribute__((packed));

/* MADT interrupt controller structure types (ACPI 6.5 5.2.12). */
#define MADT_LOCAL_APIC		0
#define MADT_IO_APIC		1
#define MADT_LOCAL_X2APIC	9
#define MADT_CPU_ENABLED	(1u << 0)
#define MADT_CPU_ONLINE_CAPABLE	(1u << 1)

struct madt_cpu {
	uint32_t apic_id;
	uint32_t uid;		/* ACPI processor ID (type 0) or UID (type 9) */
	bool x2apic_entry;	/* listed by a type 9 entry */
};

/* NULL if no valid RSDP is found. */
const struct acpi_rsdp *acpi_find_rsdp(void);
/* The first table with this signature whose checksum is right, or NULL. */
const struct acpi_header *acpi_find_table(const char sig[4]);

/*
 * Lists the enabled processors of the MADT (type 0 and type 9 entries with
 * the Enabled flag; "online capable" ones are not running, so they are left
 * out), in table order, up to max of them. Returns how many are enabled
 * (possibly more than max), or -1 if there is no MADT. *lapic_addr (if not
 * NULL) gets the MADT's local APIC address.
 */
int acpi_madt_cpus(struct madt_cpu *out, unsigned max, uint32_t *lapic_addr);

/* QEMU fw_cfg (port 0x510 selector, 0x511 data): the CPU count (key 0x05),
 * or 0 if there is no fw_cfg ("QEMU" signature at key 0). */
uint32_t fwcfg_cpu_count(void);

#endif
