// SPDX-License-Identifier: GPL-2.0-or-later
/* CPUID access and the few decoded facts every test wants. */
#ifndef LIB_CPUID_H
#define LIB_CPUID_H

#include <stdbool.h>
#include <stdint.h>

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	__asm__ volatile("cpuid"
			 : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

/* Bits hi..lo of v, shifted down. */
static inline uint32_t bits(uint32_t v, unsigned hi, unsigned lo)
{
	return (v >> lo) & (uint32_t)((2ull << (hi - lo)) - 1);
}

enum cpu_vendor {
	VENDOR_INTEL,
	VENDOR_AMD,	/* AuthenticAMD and HygonGenuine: they share AMD's leaves */
	VENDOR_OTHER,
};

#define CPUID_1_EDX_HTT		(1u << 28)
#define CPUID_80000001_ECX_TOPOEXT (1u << 22)

uint32_t cpuid_max_basic(void);
uint32_t cpuid_max_ext(void);		/* 0 if the extended range is absent */
enum cpu_vendor cpuid_vendor(void);
void cpuid_vendor_string(char out[13]);

/*
 * The hypervisor signature of leaf 0x40000000 (EBX, ECX, EDX), when
 * CPUID.1:ECX[31] says there is a hypervisor; "" otherwise. topolab gives
 * "topolab", QEMU's TCG "TCGTCGTCGTCG", KVM "KVMKVMKVM".
 */
#define CPUID_1_ECX_HYPERVISOR	(1u << 31)
void cpuid_hypervisor_string(char out[13]);
bool cpuid_is_topolab(void);
bool cpuid_is_qemu_tcg(void);

/* AMD's topology extensions: leaves 0x8000001D/0x8000001E are valid. */
bool cpuid_has_topoext(void);

#endif
