// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Demand paging and copy-on-write with 4 KiB pages in long mode (SDM Vol. 3A
 * chapter 4): a #PF handler that builds mappings on first touch, COW between
 * two virtual ranges, the accessed/dirty bits the CPU sets, and TLB control
 * (INVLPG, CR3 reload, CR4.PGE global pages).
 *
 * demand_paging (64-bit) boots identity-mapped (longmode.S: 2 MiB pages
 * below 4 GiB) and adds PML4[1] (0x80_0000_0000 up) at run time, all of it
 * 4 KiB pages from a pool in BSS. demand_paging_pae (32-bit) turns on PAE
 * paging itself (the low 1 GiB identity in 2 MiB pages) and uses the
 * 32-bit addresses in brackets below; a PDPTE the handler creates is
 * followed by a CR3 reload (PAE loads PDPTEs at MOV CR3). CR0.WP=1 so
 * supervisor writes honour R/W, EFER.NXE=1 so data pages are NX. 32-bit
 * accesses are 4 bytes, and PAE has no PML4E and no A bit in its PDPTEs,
 * so those two A checks are 64-bit only.
 *
 * Regions:
 *   DEMAND 0x80_0000_0000 [0x4000_0000], 1 GiB, starts without even a
 *          PDPT [a PD]: the handler allocates tables and a zero-filled
 *          frame on any not-present fault there, mapped P|RW|NX with A=D=0.
 *   COW_A  0x80_4000_0000 [0x8000_0000], COW_B 0x80_8000_0000
 *          [0x8040_0000]: 4 pages each, both mapping the same 4 frames
 *          read-only with software bit 9 (COW). A write fault (error 0x3)
 *          on such a page copies the frame when another mapping still
 *          shares it, or just makes it writable when it is the last one,
 *          then INVLPGs and retries.
 *   TLB    0x80_C000_0000 [0x8080_0000]: one page flipped between two
 *          frames for the TLB checks.
 * Every check prints PASS/FAIL with got and expected values; fault counts,
 * CR2 values, error codes and faulting RIPs are exact. Nothing here is known
 * to differ under QEMU 7.2 TCG, so no DEVIATION is accepted; where the SDM
 * leaves a result open (a global entry surviving a CR3 load) the image only
 * prints an INFO line.
 */
#include <stddef.h>

#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/paging.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"

#ifdef __x86_64__
#define DEMAND_BASE	0x8000000000ull
#define DEMAND_SIZE	0x40000000ull
#define COW_A		0x8040000000ull
#define COW_B		0x8080000000ull
#define TLB_VA		0x80C0000000ull
#define DEMAND_TABLES	5	/* PDPT, PD, 3 PTs */
#define LEA_1F(op)	"lea 1f(%%rip), " op
#else
#define DEMAND_BASE	0x40000000u
#define DEMAND_SIZE	0x40000000u
#define COW_A		0x80000000u
#define COW_B		0x80400000u
#define TLB_VA		0x80800000u
#define DEMAND_TABLES	4	/* PD, 3 PTs */
#define LEA_1F(op)	"movl $1f, " op
#endif
#define COW_PAGES	4
#define PTE_COW		PTE_AVL9

#define POOL_PAGES	64

static uint8_t pool[POOL_PAGES][PAGE_SIZE] __attribute__((aligned(4096)));
static unsigned pool_used, table_pages, data_pages;
/* Share counts of the COW frames, indexed by pool page. */
static unsigned share[POOL_PAGES];

struct fault {
	uint64_t cr2, error, rip;
};
#define MAX_FAULTS 32
static struct fault faults[MAX_FAULTS];
static unsigned nfaults, cow_copies, cow_reuses;
static uint64_t tlb_refill_frame;	/* TLB_VA's frame after a fault there */

static void *pool_page(void)
{
	if (pool_used == POOL_PAGES)
		return NULL;
	memset(pool[pool_used], 0, PAGE_SIZE);
	return pool[pool_used++];
}

static void *alloc_table(void)
{
	void *p = pool_page();

	if (p)
		table_pages++;
	return p;
}

static unsigned pool_index(uint64_t pa)
{
	return (unsigned)((pa - (uintptr_t)pool) / PAGE_SIZE);
}

static uint64_t *pte(uintptr_t va, bool alloc)
{
	return pt_walk(read_cr3(), va, 1, alloc ? alloc_table : NULL, 0);
}

static __attribute__((noreturn)) void die(struct irq_frame *f, const char *why)
{
	printf("FAIL: #PF %s (CR2 0x%llx, error 0x%llx, RIP 0x%llx)\n", why,
	       (unsigned long long)read_cr2(), (unsigned long long)f->error,
	       (unsigned long long)f->ip);
	report_summary();
	debug_exit(EXIT_FAIL);
}

static void pf_handler(struct irq_frame *f)
{
	uintptr_t cr2 = read_cr2();
	uint64_t *e;

	if (nfaults < MAX_FAULTS)
		faults[nfaults] = (struct fault){ cr2, f->error, f->ip };
	nfaults++;
	if (cr2 >= DEMAND_BASE && cr2 < DEMAND_BASE + DEMAND_SIZE) {
		void *frame;

		if (f->error & PF_P)
			die(f, "protection fault in the demand region");
		e = pte(cr2, true);
		frame = pool_page();
		if (!e || !frame)
			die(f, "pool exhausted");
		data_pages++;
		*e = (uintptr_t)frame | PTE_P | PTE_RW | PTE_NX;
	} else if ((cr2 >= COW_A && cr2 < COW_A + COW_PAGES * PAGE_SIZE) ||
		   (cr2 >= COW_B && cr2 < COW_B + COW_PAGES * PAGE_SIZE)) {
		unsigned old;

		e = pte(cr2, false);
		if (!e || (f->error & (PF_P | PF_W)) != (PF_P | PF_W) ||
		    !(*e & PTE_COW))
			die(f, "in a COW range that is not a COW write");
		old = pool_index(*e & PTE_ADDR);
		if (share[old] > 1) {
			uint8_t *copy = pool_page();

			if (!copy)
				die(f, "pool exhausted");
			memcpy(copy, pool[old], PAGE_SIZE);
			share[old]--;
			share[pool_index((uintptr_t)copy)] = 1;
			*e = (uintptr_t)copy | PTE_P | PTE_RW | PTE_NX;
			cow_copies++;
		} else {
			*e = (*e & ~PTE_COW) | PTE_RW;
			cow_reuses++;
		}
		invlpg(cr2);
	} else if (cr2 >= TLB_VA && cr2 < TLB_VA + PAGE_SIZE) {
		e = pte(cr2, false);
		if (!e)
			die(f, "on the TLB page without a table");
		*e = tlb_refill_frame | PTE_P | PTE_RW | PTE_NX;
		invlpg(cr2);
	} else {
		die(f, "outside every region");
	}
}

/* One access each; *ip gets the address of the accessing instruction. */
static uintptr_t rd(uintptr_t va, uintptr_t *ip)
{
	uintptr_t v;

	__asm__ volatile(LEA_1F("%1") "\n1:\tmov (%2), %0"
			 : "=&r"(v), "=&r"(*ip) : "r"(va) : "memory");
	return v;
}

static void wr(uintptr_t va, uintptr_t v, uintptr_t *ip)
{
	__asm__ volatile(LEA_1F("%0") "\n1:\tmov %2, (%1)"
			 : "=&r"(*ip) : "r"(va), "r"(v) : "memory");
}

/* dst = a + b (printf has no snprintf here). */
static const char *cat(char *dst, const char *a, const char *b)
{
	char *q = dst;

	while (*a && q < dst + 80)
		*q++ = *a++;
	while (*b && q < dst + 95)
		*q++ = *b++;
	*q = 0;
	return dst;
}

static void check_fault(const char *what, unsigned i, uint64_t cr2,
			uint64_t error, uintptr_t ip)
{
	char name[96];
	bool have = i < nfaults && i < MAX_FAULTS;

	report_eq(cat(name, what, ".cr2"), have ? faults[i].cr2 : 0, cr2);
	report_eq(cat(name, what, ".error"), have ? faults[i].error : ~0ull, error);
	report_eq(cat(name, what, ".rip"), have ? faults[i].rip : 0, ip);
}

static uint64_t ad(uintptr_t va, int level)
{
	uint64_t *e = pt_walk(read_cr3(), va, level, NULL, 0);

	return e ? *e & (PTE_A | PTE_D) : ~0ull;
}

static void test_demand(void)
{
	uintptr_t ip[8];
	uintptr_t v;
	unsigned f0 = nfaults;

	printf("demand: region 0x%llx..0x%llx starts unmapped\n",
	       (unsigned long long)DEMAND_BASE,
	       (unsigned long long)DEMAND_BASE + DEMAND_SIZE);
#ifdef __x86_64__
	report_eq("demand.pml4e_initially_not_present",
		  *pt_walk(read_cr3(), DEMAND_BASE, 4, NULL, 0) & PTE_P, 0);
#else
	report_eq("demand.pdpte_initially_not_present",
		  *pt_walk(read_cr3(), DEMAND_BASE, 3, NULL, 0) & PTE_P, 0);
#endif

	v = rd(DEMAND_BASE + 0x123, &ip[0]);
	report_eq("demand.read0.zero_filled", v, 0);
	wr(DEMAND_BASE + 0x1008, (uintptr_t)0xA5A5A5A5DEADBEEFull, &ip[1]);
	v = rd(DEMAND_BASE + 0x1FF7F8, &ip[2]);	/* last page of the first PT */
	report_eq("demand.read2.zero_filled", v, 0);
	wr(DEMAND_BASE + 0x200000, (uintptr_t)0x1122334455667788ull, &ip[3]); /* second PT */
	wr(DEMAND_BASE + DEMAND_SIZE - 8, (uintptr_t)0x0102030405060708ull, &ip[4]);
	report_eq("demand.faults_after_5_first_touches", nfaults - f0, 5);
	check_fault("demand.fault0.not_present_read", f0 + 0,
		    DEMAND_BASE + 0x123, 0x0, ip[0]);
	check_fault("demand.fault1.not_present_write", f0 + 1,
		    DEMAND_BASE + 0x1008, 0x2, ip[1]);
	check_fault("demand.fault2.not_present_read", f0 + 2,
		    DEMAND_BASE + 0x1FF7F8, 0x0, ip[2]);
	check_fault("demand.fault3.not_present_write", f0 + 3,
		    DEMAND_BASE + 0x200000, 0x2, ip[3]);
	check_fault("demand.fault4.not_present_write", f0 + 4,
		    DEMAND_BASE + DEMAND_SIZE - 8, 0x2, ip[4]);
	/* (64-bit: a PDPT,) a PD, and PTs for 0-2 MiB, 2-4 MiB and the last
	 * 2 MiB. */
	report_eq("demand.table_pages_allocated", table_pages, DEMAND_TABLES);
	report_eq("demand.data_pages_allocated", data_pages, 5);

	/* Touch again: present now, no more faults. */
	report_eq("demand.reread_written_value", rd(DEMAND_BASE + 0x1008, &ip[5]),
		  (uintptr_t)0xA5A5A5A5DEADBEEFull);
	report_eq("demand.reread_second_pt", rd(DEMAND_BASE + 0x200000, &ip[5]),
		  (uintptr_t)0x1122334455667788ull);
	report_eq("demand.reread_last_qword", rd(DEMAND_BASE + DEMAND_SIZE - 8, &ip[5]),
		  (uintptr_t)0x0102030405060708ull);
	/* Accessed and dirty, as the CPU left them: page 0 was only read. */
	report_eq("demand.ad.page0_after_read", ad(DEMAND_BASE, 1), PTE_A);
	report_eq("demand.ad.page_1ff_after_read", ad(DEMAND_BASE + 0x1FF000, 1), PTE_A);
	report_eq("demand.ad.page1_after_write", ad(DEMAND_BASE + 0x1000, 1),
		  PTE_A | PTE_D);
	report_eq("demand.ad.page_200_after_write", ad(DEMAND_BASE + 0x200000, 1),
		  PTE_A | PTE_D);
	wr(DEMAND_BASE + 0x456, 7, &ip[6]);	/* read-faulted, mapped RW */
	report_eq("demand.ad.page0_after_later_write", ad(DEMAND_BASE, 1),
		  PTE_A | PTE_D);
	report_eq("demand.ad.pde_accessed", ad(DEMAND_BASE, 2) & PTE_A, PTE_A);
#ifdef __x86_64__	/* PAE PDPTEs have no A bit */
	report_eq("demand.ad.pdpte_accessed", ad(DEMAND_BASE, 3) & PTE_A, PTE_A);
	report_eq("demand.ad.pml4e_accessed", ad(DEMAND_BASE, 4) & PTE_A, PTE_A);
#endif
	report_eq("demand.faults_total", nfaults - f0, 5);

	/* The A bit again after software cleared it (and flushed the TLB). */
	*pte(DEMAND_BASE + 0x1FF000, false) &= ~(PTE_A | PTE_D);
	invlpg(DEMAND_BASE + 0x1FF000);
	(void)rd(DEMAND_BASE + 0x1FF000, &ip[7]);
	report_eq("demand.ad.a_set_again_after_clear_invlpg",
		  ad(DEMAND_BASE + 0x1FF000, 1), PTE_A);
}

static uint64_t pattern(unsigned frame, unsigned word)
{
	return 0xC0DE000000000000ull | (uint64_t)word << 16 | frame;
}

static void test_cow(void)
{
	uint64_t frames[COW_PAGES];
	uintptr_t ip, ip2;
	unsigned f0, bad = 0;
	uint64_t *pa, *pb;

	for (unsigned k = 0; k < COW_PAGES; k++) {
		uint64_t *fr = pool_page();

		for (unsigned w = 0; w < PAGE_SIZE / 8; w++)
			fr[w] = pattern(k, w);
		frames[k] = (uintptr_t)fr;
		share[pool_index(frames[k])] = 2;
		*pte(COW_A + k * PAGE_SIZE, true) = frames[k] | PTE_P | PTE_COW | PTE_NX;
		*pte(COW_B + k * PAGE_SIZE, true) = frames[k] | PTE_P | PTE_COW | PTE_NX;
	}
	f0 = nfaults;
	for (unsigned k = 0; k < COW_PAGES; k++) {
		if (rd(COW_A + k * PAGE_SIZE + 8 * k, &ip) != (uintptr_t)pattern(k, k))
			bad++;
		if (rd(COW_B + k * PAGE_SIZE + 8 * (k + 1), &ip) !=
		    (uintptr_t)pattern(k, k + 1))
			bad++;
	}
	report_eq("cow.shared_reads_see_both_ranges", bad, 0);
	report_eq("cow.reads_do_not_fault", nfaults - f0, 0);

	wr(COW_A + PAGE_SIZE + 0x10, 0xAAAA, &ip);	/* page 1 via A */
	report_eq("cow.write_a1.faults", nfaults - f0, 1);
	check_fault("cow.write_a1.protection_write", f0, COW_A + PAGE_SIZE + 0x10,
		    0x3, ip);
	report_eq("cow.write_a1.copies", cow_copies, 1);
	report_eq("cow.write_a1.value_a", rd(COW_A + PAGE_SIZE + 0x10, &ip2), 0xAAAA);
	report_eq("cow.write_a1.b_keeps_old", rd(COW_B + PAGE_SIZE + 0x10, &ip2),
		  (uintptr_t)pattern(1, 2));
	pa = (uint64_t *)(uintptr_t)(*pte(COW_A + PAGE_SIZE, false) & PTE_ADDR);
	pb = (uint64_t *)(uintptr_t)(*pte(COW_B + PAGE_SIZE, false) & PTE_ADDR);
	report_eq("cow.write_a1.b_frame_unchanged", (uintptr_t)pb, frames[1]);
	report_eq("cow.write_a1.a_frame_is_new", (uintptr_t)pa != frames[1], 1);
	bad = 0;
	for (unsigned w = 0; w < PAGE_SIZE / 8; w++)
		if (w != 2 && pa[w] != pattern(1, w))
			bad++;
	report_eq("cow.write_a1.rest_of_page_copied", bad, 0);
	report_eq("cow.write_a1.pte", *pte(COW_A + PAGE_SIZE, false) & ~PTE_ADDR,
		  PTE_P | PTE_RW | PTE_A | PTE_D | PTE_NX);

	wr(COW_B + PAGE_SIZE + 0x18, 0xBBBB, &ip);	/* last sharer: reuse */
	report_eq("cow.write_b1.faults", nfaults - f0, 2);
	check_fault("cow.write_b1.protection_write", f0 + 1, COW_B + PAGE_SIZE + 0x18,
		    0x3, ip);
	report_eq("cow.write_b1.reuses", cow_reuses, 1);
	report_eq("cow.write_b1.copies_still", cow_copies, 1);
	report_eq("cow.write_b1.frame_kept", *pte(COW_B + PAGE_SIZE, false) & PTE_ADDR,
		  frames[1]);
	report_eq("cow.write_b1.value_b", rd(COW_B + PAGE_SIZE + 0x18, &ip2), 0xBBBB);
	report_eq("cow.write_b1.a_unaffected", rd(COW_A + PAGE_SIZE + 0x18, &ip2),
		  (uintptr_t)pattern(1, 3));

	wr(COW_A + PAGE_SIZE + 0x20, 0xCCCC, &ip);	/* writable now */
	wr(COW_B + PAGE_SIZE + 0x20, 0xDDDD, &ip);
	report_eq("cow.rewrites_do_not_fault", nfaults - f0, 2);
	report_eq("cow.other_pages_still_shared",
		  *pte(COW_A + 2 * PAGE_SIZE, false) & (PTE_ADDR | PTE_RW),
		  frames[2]);
}

static void test_tlb(void)
{
	uint64_t *f1 = pool_page(), *f2 = pool_page();
	uint64_t *e = pte(TLB_VA, true);
	uintptr_t ip;
	unsigned f0 = nfaults;
	uintptr_t v;

	f1[0] = 0x1111;
	f2[0] = 0x2222;
	*e = (uintptr_t)f1 | PTE_P | PTE_RW | PTE_NX;
	invlpg(TLB_VA);
	report_eq("tlb.read_f1", rd(TLB_VA, &ip), 0x1111);

	/* Not present + INVLPG: the next access must fault; the handler
	 * maps f2. */
	*e &= ~PTE_P;
	invlpg(TLB_VA);
	tlb_refill_frame = (uintptr_t)f2;
	v = rd(TLB_VA, &ip);
	report_eq("tlb.invlpg_not_present.faults", nfaults - f0, 1);
	check_fault("tlb.invlpg_not_present", f0, TLB_VA, 0x0, ip);
	report_eq("tlb.invlpg_not_present.retry_reads_f2", v, 0x2222);

	/* A changed frame, then MOV CR3: the new frame. */
	*e = (uintptr_t)f1 | PTE_P | PTE_RW | PTE_NX;
	write_cr3(read_cr3());
	report_eq("tlb.cr3_reload_sees_f1", rd(TLB_VA, &ip), 0x1111);
	*e = (uintptr_t)f2 | PTE_P | PTE_RW | PTE_NX;
	invlpg(TLB_VA);
	report_eq("tlb.invlpg_sees_f2", rd(TLB_VA, &ip), 0x2222);

	/* Global pages (CR4.PGE): a CR3 load need not flush them (SDM 4.10.4.1
	 * leaves it open, so only INFO), toggling PGE and INVLPG must. */
	write_cr4(read_cr4() | CR4_PGE);
	*e = (uintptr_t)f1 | PTE_P | PTE_RW | PTE_NX | PTE_G;
	invlpg(TLB_VA);
	report_eq("tlb.global.read_f1", rd(TLB_VA, &ip), 0x1111);
	*e = (uintptr_t)f2 | PTE_P | PTE_RW | PTE_NX | PTE_G;
	write_cr3(read_cr3());
	v = rd(TLB_VA, &ip);
	printf("INFO: tlb.global: after MOV CR3 a global entry reads 0x%llx "
	       "(0x1111: kept, 0x2222: flushed; both allowed)\n",
	       (unsigned long long)v);
	write_cr4(read_cr4() & ~CR4_PGE);
	write_cr4(read_cr4() | CR4_PGE);
	report_eq("tlb.global.pge_toggle_flushes", rd(TLB_VA, &ip), 0x2222);
	*e = (uintptr_t)f1 | PTE_P | PTE_RW | PTE_NX | PTE_G;
	invlpg(TLB_VA);
	report_eq("tlb.global.invlpg_flushes", rd(TLB_VA, &ip), 0x1111);
	write_cr4(read_cr4() & ~CR4_PGE);
	report_eq("tlb.faults_total", nfaults - f0, 1);
}

#ifndef __x86_64__
/* 32-bit: PAE paging of our own, the low 1 GiB identity in 2 MiB pages. */
static uint64_t pae_pdpt[4] __attribute__((aligned(32)));
static uint64_t pae_pd0[512] __attribute__((aligned(4096)));

static void pae_init(void)
{
	for (unsigned i = 0; i < 512; i++)
		pae_pd0[i] = (uint64_t)i << 21 | PTE_P | PTE_RW | PTE_PS;
	pae_pdpt[0] = (uintptr_t)pae_pd0 | PTE_P;
	write_cr4(read_cr4() | CR4_PAE);
	write_cr3((uintptr_t)pae_pdpt);
	write_cr0(read_cr0() | CR0_PG);
}
#endif

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	report_strict_from_cmdline();
	idt_init();
	idt_set_handler(14, pf_handler);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
#ifndef __x86_64__
	pae_init();
#endif
	write_cr0(read_cr0() | CR0_WP);
	test_demand();
	test_cow();
	test_tlb();
	return report_summary();
}
