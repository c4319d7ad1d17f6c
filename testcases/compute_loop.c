// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A deterministic integer workload for benchmarks: table-driven CRC32 over a
 * small buffer mixed with a multiplicative hash, about 30 instructions per
 * iteration (table loads, a buffer load and store, shifts, a multiply). The checksum depends
 * only on the iteration count, so any two runs can be compared.
 *
 * cmdline: iterations=N (default DEFAULT_ITERATIONS); stores=off drops the
 * feedback into the buffer, so the loop only loads (emulators differ most in
 * how fast they store: docs/benchmarks.md); nx=on (64-bit image only) first
 * maps the image's data execute-disable (map_data_nx below). nx= never
 * changes the checksum: the work is the same.
 */
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"
#ifdef __x86_64__
#include "lib/msr.h"
#include "lib/paging.h"
#endif

#define DEFAULT_ITERATIONS 50000000u
#define CRC32_POLY 0xEDB88320u	/* reflected IEEE 802.3 */
#define FNV_PRIME 0x01000193u
#define BUF_WORDS 16		/* 64 bytes: one cache line of state */

static uint32_t crc_table[256];
static uint32_t buf[BUF_WORDS];

static void init_crc_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? CRC32_POLY : 0);
		crc_table[i] = c;
	}
}

static uint32_t crc_byte(uint32_t crc, uint32_t byte)
{
	return crc_table[(crc ^ byte) & 0xff] ^ (crc >> 8);
}

#ifdef __x86_64__
#define LARGE_PAGE_SIZE	0x200000ull	/* a 2 MiB page-directory entry */
#define PAGES_PER_LARGE	512
#define CPUID_EXT_NX	(1u << 20)	/* CPUID.80000001H:EDX.NX[bit 20] */

/* lib/link.ld: code and read-only data below __data_start, which is
 * page-aligned; data, BSS (the boot stack and page tables too) above it. */
extern char __image_start[], __data_start[], __image_end[];

static uint64_t image_pt[PAGES_PER_LARGE] __attribute__((aligned(4096)));

/*
 * Splits the 2 MiB page holding the image (longmode.S identity-maps 4 GiB
 * with 2 MiB pages) into 4 KiB pages, with XD = 1 on every page from
 * __data_start up (crc_table, buf, the stack) and the code pages executable.
 * Why: Unicorn 2.1.x takes its fast store path only for pages its TLB holds
 * without execute permission (docs/benchmarks.md). XD needs IA32_EFER.NXE
 * (SDM Vol. 3A 4.6.2; with NXE = 0, bit 63 is reserved and the walk faults),
 * which needs CPUID.80000001H:EDX.NX.
 */
static bool map_data_nx(void)
{
	uintptr_t region = (uintptr_t)__image_start & ~(LARGE_PAGE_SIZE - 1);
	uintptr_t data = (uintptr_t)__data_start, end = (uintptr_t)__image_end;
	uint64_t *pde;

	if (cpuid_max_ext() < 0x80000001 ||
	    !(cpuid(0x80000001, 0).edx & CPUID_EXT_NX))
		return report("nx", false, "CPUID.80000001H:EDX.NX[bit 20] is clear");
	if (end - 1 - region >= LARGE_PAGE_SIZE)
		return report("nx", false, "the image (0x%lx-0x%lx) crosses a 2 MiB boundary",
			      (unsigned long)__image_start, (unsigned long)end);
	pde = pt_walk(read_cr3(), region, 2, NULL, 0);
	if (!pde || !(*pde & PTE_PS))
		return report("nx", false, "0x%lx is not mapped by a 2 MiB page",
			      (unsigned long)region);

	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
	for (unsigned i = 0; i < PAGES_PER_LARGE; i++) {
		uintptr_t page = region + i * PAGE_SIZE;

		image_pt[i] = page | PTE_P | PTE_RW | (page >= data ? PTE_NX : 0);
	}
	*pde = (uintptr_t)image_pt | PTE_P | PTE_RW;
	/* The old 2 MiB translation may be cached anywhere in the TLBs: flush
	 * them all (no global pages here), then each 4 KiB page for good
	 * measure, as SDM Vol. 3A 4.10.4.1 allows either. */
	write_cr3(read_cr3());
	for (unsigned i = 0; i < PAGES_PER_LARGE; i++)
		invlpg(region + i * PAGE_SIZE);
	if (!(rdmsr(MSR_EFER) & EFER_NXE))
		return report("nx", false, "IA32_EFER.NXE did not stay set");
	printf("nx: 4 KiB pages 0x%lx-0x%lx execute-disable, 0x%lx-0x%lx executable\n",
	       (unsigned long)data, (unsigned long)(region + LARGE_PAGE_SIZE - 1),
	       (unsigned long)region, (unsigned long)(data - 1));
	return true;
}
#else
/* Flat protected mode, paging off: no page to mark execute-disable. */
static bool map_data_nx(void)
{
	return report("nx", false, "nx=on needs the 64-bit image (compute_loop64)");
}
#endif

static uint32_t run(uint32_t iterations, bool stores)
{
	uint32_t crc = ~0u, hash = 0x811C9DC5u;	/* FNV offset basis */

	for (uint32_t i = 0; i < BUF_WORDS; i++)
		buf[i] = i * 0x9E3779B9u;	/* golden-ratio spread */
	for (uint32_t i = 0; i < iterations; i++) {
		uint32_t w = buf[i % BUF_WORDS];

		crc = crc_byte(crc, w);
		crc = crc_byte(crc, w >> 8);
		hash = (hash ^ crc ^ w) * FNV_PRIME;
		hash ^= hash >> 15;
		/* Feed back so every iteration depends on the previous ones. */
		if (stores)
			buf[i % BUF_WORDS] = (w << 7 | w >> 25) ^ hash;
	}
	return ~crc ^ hash;
}

int main(const struct multiboot_info *mbi)
{
	uint32_t iterations = DEFAULT_ITERATIONS;
	char stores[4] = "on", nx[4] = "off";

	if (cmdline_uint("iterations", &iterations) == CMDLINE_INVALID) {
		report("cmdline", false, "iterations= is not a 32-bit number");
		return report_summary();
	}
	cmdline_str("stores", stores, sizeof(stores));
	cmdline_str("nx", nx, sizeof(nx));
	if (strcmp(nx, "on") == 0 && !map_data_nx())
		return report_summary();
	init_crc_table();
	printf("compute_loop: %u iterations, stores=%s nx=%s\n", iterations, stores, nx);
	printf("checksum: 0x%08x\n", run(iterations, strcmp(stores, "off") != 0));
	return EXIT_PASS;
}
