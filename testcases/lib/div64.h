// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * 64-bit unsigned division without libgcc: 32-bit images are linked with
 * -nostdlib, so a plain `/` on uint64_t would need __udivdi3. Shift and
 * subtract, one quotient bit per step (fine outside hot loops).
 */
#ifndef LIB_DIV64_H
#define LIB_DIV64_H

#include <stdint.h>

static inline uint64_t udiv64(uint64_t n, uint64_t d)
{
#ifdef __x86_64__
	return d ? n / d : 0;
#else
	uint64_t q = 0, r = 0;

	if (!d)
		return 0;
	for (int i = 63; i >= 0; i--) {
		r = r << 1 | (n >> i & 1);
		if (r >= d) {
			r -= d;
			q |= 1ull << i;
		}
	}
	return q;
#endif
}

#endif
