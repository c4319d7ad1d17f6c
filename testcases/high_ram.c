// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * RAM above 4 GiB as QEMU's pc machine gives it (docs/machine.md, "Memory
 * map"), read from the Multiboot information block and used through
 * paging, for a run with -m MIB (cmdline: mib=MIB, the same number):
 *
 *   - mem_upper is the RAM from 1 MiB up to the end of the RAM below 4 GiB
 *     (QEMU's multiboot.c: below_4g_mem_size / 1024 - 1024), 3 GiB with
 *     5 GiB or more; under QEMU, SeaBIOS's reservation of the last 128 KiB
 *     below it is accepted as a known deviation;
 *   - the memory map (info flag 6) has a RAM entry (type 1) from 4 GiB as
 *     long as the rest, and no RAM entry between the end of the RAM below
 *     4 GiB and 4 GiB (the firmware may reserve pieces of the RAM below 4 GiB,
 *     as SeaBIOS does under QEMU, so only these entries are compared);
 *   - 2 MiB pages for the first 2 GiB from 4 GiB (PDPT entries 4 and 5 of
 *     the identity map longmode.S built) reach RAM there: a value written at
 *     the start, the middle and the end of each GiB reads back, and no write
 *     shows through at the same offset from 0.
 *
 * 64-bit only (the addresses need long mode). With strict=1 on the command
 * line, SeaBIOS's mem_upper is a FAIL.
 */
#include "lib/cmdline.h"
#include "lib/paging.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

#define GIB		(1ull << 30)
#define MIB		(1ull << 20)
#define INFO_MMAP	(1u << 6)

/* The Multiboot 1 memory map entry: size (of what follows), base, length, type. */
struct mmap_entry {
	uint32_t size;
	uint64_t base, length;
	uint32_t type;
} __attribute__((packed));

static uint64_t pd_high[2][512] __attribute__((aligned(4096)));

static uint64_t read_cr3(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

/* Maps linear [4 GiB, 6 GiB) to physical [4 GiB, 6 GiB) in 2 MiB pages. */
static void map_above_4g(void)
{
	uint64_t *pml4 = (uint64_t *)(uintptr_t)(read_cr3() & PTE_ADDR);
	uint64_t *pdpt = (uint64_t *)(uintptr_t)(pml4[0] & PTE_ADDR);

	for (int gib = 0; gib < 2; ++gib) {
		for (int i = 0; i < 512; ++i)
			pd_high[gib][i] = (4 * GIB + gib * GIB + ((uint64_t)i << 21)) | PTE_P | PTE_RW | PTE_PS;
		pdpt[4 + gib] = (uint64_t)(uintptr_t)pd_high[gib] | PTE_P | PTE_RW;
	}
	write_cr3(read_cr3());
}

int main(const struct multiboot_info *mbi)
{
	uint32_t mib = 0;

	cmdline_init(mbi);
	report_strict_from_cmdline();
	if (cmdline_uint("mib", &mib) != CMDLINE_FOUND || (uint64_t)mib * MIB < 5 * GIB) {
		report("high_ram.cmdline", false, "needs mib=N with N MiB of -m, at least 5120 (2 GiB above 4 GiB)");
		return report_summary();
	}
	const uint64_t ram = (uint64_t)mib * MIB, low = 3 * GIB, high = ram - low;
	const uint32_t *info = (const uint32_t *)mbi;

	/* Under QEMU, multiboot.bin takes mem_upper from SeaBIOS's e820 map, which
	 * reserves the last 128 KiB of the RAM below 4 GiB (docs/deviations.md). */
	report_eq_dev("high_ram.mem_upper", info[2], (low - MIB) / 1024, (low - MIB - 128 * 1024) / 1024,
		      "SeaBIOS reserves the top 128 KiB of the RAM below 4 GiB; mem_upper stops there");
	if (!report("high_ram.mmap_given", info[0] & INFO_MMAP, "flags %#x", info[0]))
		return report_summary();

	uint64_t high_entry = 0, ram_in_gap = 0;
	for (uint32_t at = info[12]; at < info[12] + info[11];) {
		const struct mmap_entry *e = (const struct mmap_entry *)(uintptr_t)at;

		if (e->type == 1 && e->base == 4 * GIB)
			high_entry = e->length;
		if (e->type == 1 && e->base < 4 * GIB && e->base + e->length > low)
			ram_in_gap = e->base + e->length;
		at += e->size + 4;
	}
	report_eq("high_ram.mmap_from_4g", high_entry, high);
	report_eq("high_ram.mmap_no_ram_in_the_gap", ram_in_gap, 0);

	map_above_4g();
	static const uint64_t offsets[] = {4096, GIB / 2, GIB - 8, GIB, GIB + GIB / 2, 2 * GIB - 8};
	enum { N = sizeof offsets / sizeof offsets[0] };
	uint64_t low_before[N];

	/* The same offsets below 4 GiB (RAM with 5 GiB or more): a write above
	 * that wrapped to 32 bits would land there. */
	for (unsigned i = 0; i < N; ++i)
		low_before[i] = *(volatile uint64_t *)(uintptr_t)offsets[i];
	for (unsigned i = 0; i < N; ++i)
		*(volatile uint64_t *)(uintptr_t)(4 * GIB + offsets[i]) = 0x4a11000000000000ull + offsets[i];
	unsigned good = 0, unaliased = 0;
	for (unsigned i = 0; i < N; ++i) {
		const uint64_t got = *(volatile uint64_t *)(uintptr_t)(4 * GIB + offsets[i]);

		if (got == 0x4a11000000000000ull + offsets[i])
			++good;
		else
			printf("high_ram: at 0x%llx read 0x%llx\n", 4 * GIB + offsets[i], (unsigned long long)got);
		if (*(volatile uint64_t *)(uintptr_t)offsets[i] == low_before[i])
			++unaliased;
	}
	report_eq("high_ram.reads_back_what_was_written", good, N);
	report_eq("high_ram.not_aliased_below_4g", unaliased, N);
	return report_summary();
}
