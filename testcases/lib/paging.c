#include <stddef.h>

#include "lib/paging.h"

#ifdef __x86_64__
uint64_t *pt_walk(uintptr_t cr3, uintptr_t va, int level,
		  void *(*alloc)(void), uint64_t table_flags)
{
	uint64_t *table = (uint64_t *)(cr3 & PTE_ADDR);

	for (int l = 4; l > level; l--) {
		uint64_t *e = &table[(va >> (12 + 9 * (l - 1))) & 511];

		if (!(*e & PTE_P)) {
			void *page;

			if (!alloc || !(page = alloc()))
				return NULL;
			*e = (uintptr_t)page | PTE_P | PTE_RW | table_flags;
		} else if (*e & PTE_PS) {
			return e;
		}
		*e |= table_flags;
		table = (uint64_t *)(uintptr_t)(*e & PTE_ADDR);
	}
	return &table[(va >> (12 + 9 * (level - 1))) & 511];
}
#endif
