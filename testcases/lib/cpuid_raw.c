// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/cpuid.h"
#include "lib/cpuid_raw.h"
#include "lib/printf.h"

/* Bounds every subleaf walk, in case a terminator never comes. */
#define MAX_SUBLEAF 63

static struct cpuid_regs dump(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r = cpuid(leaf, subleaf);

	printf("   0x%08x 0x%02x: eax=0x%08x ebx=0x%08x ecx=0x%08x edx=0x%08x\n",
	       leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
	return r;
}

/* Leaves 4 and 0x8000001D: one subleaf per cache, then a type-0 terminator. */
static void dump_until_cache_type_0(uint32_t leaf)
{
	for (uint32_t sub = 0; sub <= MAX_SUBLEAF; sub++)
		if (bits(dump(leaf, sub).eax, 4, 0) == 0)
			break;
}

/* Leaves 0xB and 0x1F: one subleaf per level, then a level type 0 terminator. */
static void dump_until_level_type_0(uint32_t leaf)
{
	for (uint32_t sub = 0; sub <= MAX_SUBLEAF; sub++)
		if (bits(dump(leaf, sub).ecx, 15, 8) == 0)
			break;
}

/* Leaf 0xD: subleaves 0 and 1, then one per state component that XCR0
 * (subleaf 0 EDX:EAX) or IA32_XSS (subleaf 1 EDX:ECX) can enable, as cpuid -r. */
static void dump_xsave(void)
{
	struct cpuid_regs s0 = dump(0xD, 0), s1 = dump(0xD, 1);
	uint64_t mask = ((uint64_t)(s0.edx | s1.edx) << 32) | s0.eax | s1.ecx;

	for (uint32_t sub = 2; sub <= MAX_SUBLEAF; sub++)
		if (mask >> sub & 1)
			dump(0xD, sub);
}

static void dump_leaf(uint32_t leaf)
{
	switch (leaf) {
	case 0x4:
	case 0x8000001D:
		dump_until_cache_type_0(leaf);
		break;
	case 0x7: {
		uint32_t max_sub = dump(7, 0).eax;	/* the last valid subleaf */

		for (uint32_t sub = 1; sub <= max_sub && sub <= MAX_SUBLEAF; sub++)
			dump(7, sub);
		break;
	}
	case 0xB:
	case 0x1F:
		dump_until_level_type_0(leaf);
		break;
	case 0xD:
		dump_xsave();
		break;
	case 0x12:	/* SGX */
	case 0x14:	/* Processor Trace */
	case 0x17:	/* SoC vendor */
	case 0x18:	/* TLB parameters */
		dump(leaf, 0);
		dump(leaf, 1);
		break;
	default:
		dump(leaf, 0);
	}
}

void cpuid_raw_dump(void)
{
	uint32_t max_basic = cpuid_max_basic(), max_ext = cpuid_max_ext();

	for (uint32_t leaf = 0; leaf <= max_basic; leaf++)
		dump_leaf(leaf);
	/* Always show 0x80000000, even when it reports no extended range. */
	dump_leaf(0x80000000);
	for (uint32_t leaf = 0x80000001; leaf <= max_ext; leaf++)
		dump_leaf(leaf);
}
