// SPDX-License-Identifier: GPL-2.0-or-later
#include <stddef.h>

#include "lib/paging.h"

#ifdef __x86_64__
#define TOP_LEVEL 4
#else
#define TOP_LEVEL 3	/* PAE: 4 PDPTEs, then 512-entry PDs and PTs */
#endif

static unsigned index_of(uintptr_t va, int l)
{
	return (unsigned)(((uint64_t)va >> (12 + 9 * (l - 1))) &
			  (l == TOP_LEVEL && TOP_LEVEL == 3 ? 3 : 511));
}

uint64_t *pt_walk(uintptr_t cr3, uintptr_t va, int level,
		  void *(*alloc)(void), uint64_t table_flags)
{
	uint64_t *table = (uint64_t *)(uintptr_t)
		(cr3 & (TOP_LEVEL == 3 ? ~0x1Full : PTE_ADDR));

	for (int l = TOP_LEVEL; l > level; l--) {
		uint64_t *e = &table[index_of(va, l)];
		bool pdpte = TOP_LEVEL == 3 && l == 3;

		if (!(*e & PTE_P)) {
			void *page;

			if (!alloc || !(page = alloc()))
				return NULL;
			if (pdpte) {
				/* PAE PDPTEs take P, PWT and PCD only, and the
				 * CPU reads them at MOV CR3. */
				*e = (uintptr_t)page | PTE_P;
				__asm__ volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
			} else {
				*e = (uintptr_t)page | PTE_P | PTE_RW | table_flags;
			}
		} else if (!pdpte && (*e & PTE_PS)) {
			return e;
		}
		if (!pdpte)
			*e |= table_flags;
		table = (uint64_t *)(uintptr_t)(*e & PTE_ADDR);
	}
	return &table[index_of(va, level)];
}
