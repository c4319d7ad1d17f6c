// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/cpuid.h"
#include "lib/string.h"

uint32_t cpuid_max_basic(void)
{
	return cpuid(0, 0).eax;
}

uint32_t cpuid_max_ext(void)
{
	uint32_t max = cpuid(0x80000000, 0).eax;

	/* Old CPUs echo basic-leaf data here; a valid range starts 0x8000xxxx. */
	return (max & 0xffff0000) == 0x80000000 ? max : 0;
}

void cpuid_vendor_string(char out[13])
{
	struct cpuid_regs r = cpuid(0, 0);

	/* The vendor string is EBX, EDX, ECX, in that order. */
	memcpy(out, &r.ebx, 4);
	memcpy(out + 4, &r.edx, 4);
	memcpy(out + 8, &r.ecx, 4);
	out[12] = '\0';
}

enum cpu_vendor cpuid_vendor(void)
{
	char v[13];

	cpuid_vendor_string(v);
	if (!strcmp(v, "GenuineIntel"))
		return VENDOR_INTEL;
	if (!strcmp(v, "AuthenticAMD") || !strcmp(v, "HygonGenuine"))
		return VENDOR_AMD;
	return VENDOR_OTHER;
}

bool cpuid_has_topoext(void)
{
	return cpuid_max_ext() >= 0x80000001 &&
	       (cpuid(0x80000001, 0).ecx & CPUID_80000001_ECX_TOPOEXT);
}

void cpuid_hypervisor_string(char out[13])
{
	struct cpuid_regs r;

	out[0] = '\0';
	if (!(cpuid(1, 0).ecx & CPUID_1_ECX_HYPERVISOR))
		return;
	r = cpuid(0x40000000, 0);
	memcpy(out, &r.ebx, 4);
	memcpy(out + 4, &r.ecx, 4);
	memcpy(out + 8, &r.edx, 4);
	out[12] = '\0';
}

bool cpuid_is_topolab(void)
{
	char s[13];

	cpuid_hypervisor_string(s);
	return !strcmp(s, "topolab");
}

bool cpuid_is_qemu_tcg(void)
{
	char s[13];

	cpuid_hypervisor_string(s);
	return !strcmp(s, "TCGTCGTCGTCG");
}
