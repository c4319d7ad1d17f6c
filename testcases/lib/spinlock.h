// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A test-and-test-and-set spinlock on XCHG, which is atomic with memory
 * without a LOCK prefix (SDM Vol. 3A 9.1.2.1). PAUSE in the wait loop keeps a
 * spinning hyperthread from starving its sibling (SDM Vol. 2B, PAUSE).
 */
#ifndef LIB_SPINLOCK_H
#define LIB_SPINLOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
	volatile uint32_t locked;
} spinlock_t;

#define SPINLOCK_INIT { 0 }

static inline bool spin_trylock(spinlock_t *l)
{
	uint32_t old = 1;

	__asm__ volatile("xchg %0, %1" : "+r"(old), "+m"(l->locked) : : "memory");
	return old == 0;
}

static inline void spin_lock(spinlock_t *l)
{
	while (!spin_trylock(l))
		while (l->locked)
			__asm__ volatile("pause" ::: "memory");
}

/* x86 stores are not reordered with earlier loads or stores (SDM Vol. 3A
 * 9.2.2), so a plain store after a compiler barrier releases the lock. */
static inline void spin_unlock(spinlock_t *l)
{
	__asm__ volatile("" ::: "memory");
	l->locked = 0;
}

#endif
