// SPDX-License-Identifier: GPL-2.0-or-later
/* Model-specific registers (RDMSR/WRMSR: SDM Vol. 2B) and the control
 * registers the SMP code reads. */
#ifndef LIB_MSR_H
#define LIB_MSR_H

#include <stdint.h>

#define MSR_IA32_APIC_BASE	0x1B
#define MSR_IA32_TSC_DEADLINE	0x6E0
#define MSR_EFER		0xC0000080

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return (uint64_t)hi << 32 | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr"
			 : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
			 : "memory");
}

/* The time-stamp counter (SDM Vol. 2B, RDTSC): not serializing, so it may
 * be read a little before earlier instructions complete. */
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

static inline uintptr_t read_cr3(void)
{
	uintptr_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

#endif
