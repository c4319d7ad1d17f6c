// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * 4-level (IA-32e) paging helpers for 64-bit images (SDM Vol. 3A 4.5): the
 * entry bits, a walker that can allocate the missing tables, and the control
 * instructions. Page-table pages must be addressable at their physical
 * address (identity-mapped), as the images' BSS is.
 */
#ifndef LIB_PAGING_H
#define LIB_PAGING_H

#include <stdbool.h>
#include <stdint.h>

#define PAGE_SIZE	4096ull
#define PTE_P		(1ull << 0)
#define PTE_RW		(1ull << 1)
#define PTE_US		(1ull << 2)
#define PTE_PWT		(1ull << 3)
#define PTE_PCD		(1ull << 4)
#define PTE_A		(1ull << 5)
#define PTE_D		(1ull << 6)
#define PTE_PS		(1ull << 7)
#define PTE_G		(1ull << 8)
#define PTE_AVL9	(1ull << 9)	/* ignored by the CPU: software's */
#define PTE_NX		(1ull << 63)
#define PTE_ADDR	0x000FFFFFFFFFF000ull

/* #PF error code bits (SDM Vol. 3A Figure 4-12). */
#define PF_P		(1u << 0)
#define PF_W		(1u << 1)
#define PF_U		(1u << 2)
#define PF_RSVD		(1u << 3)
#define PF_I		(1u << 4)

#define CR0_WP		(1ul << 16)
#define CR0_AM		(1ul << 18)
#define CR4_PAE		(1ul << 5)
#define CR4_PGE		(1ul << 7)
#define CR0_PG		(1ul << 31)
#define EFER_SCE	(1ull << 0)
#define EFER_NXE	(1ull << 11)

static inline uintptr_t read_cr0(void)
{
	uintptr_t v;

	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static inline void write_cr0(uintptr_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static inline uintptr_t read_cr2(void)
{
	uintptr_t v;

	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline uintptr_t read_cr4(void)
{
	uintptr_t v;

	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static inline void write_cr4(uintptr_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static inline void write_cr3(uintptr_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline void invlpg(uintptr_t va)
{
	__asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

/* Returns a pointer to va's entry at the given level (1 = PTE, 2 = PDE, 3 =
 * PDPTE, 4 = PML4E) under the tables at cr3, or NULL when a table on the way
 * is missing and alloc is NULL. alloc returns a zeroed, identity-mapped page;
 * new tables get P|RW plus the extra bits in table_flags (e.g. PTE_US).
 * Stops early (returns the large-page entry) at a PS=1 entry. 64-bit code
 * walks 4-level tables; 32-bit code PAE tables (CR3 -> 4 PDPTEs, 32-byte
 * aligned), where a new PDPTE gets P only and is followed by a CR3 reload. */
uint64_t *pt_walk(uintptr_t cr3, uintptr_t va, int level,
		  void *(*alloc)(void), uint64_t table_flags);

#endif
