// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/desc.h"
#include "lib/string.h"

_Static_assert(sizeof(struct tss) == 0x68, "TSS layout (SDM Figures 7-2, 7-11)");

#define KSTACK_SIZE 16384

uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16)));
struct tss tss __attribute__((aligned(128)));
static uint8_t kstack[KSTACK_SIZE] __attribute__((aligned(16)));

uint64_t desc_make(uint32_t base, uint32_t limit, uint8_t access, uint8_t flags)
{
	return (uint64_t)(limit & 0xFFFF) | (uint64_t)(base & 0xFFFFFF) << 16 |
	       (uint64_t)access << 40 | (uint64_t)((limit >> 16) & 0xF) << 48 |
	       (uint64_t)(flags & 0xF) << 52 | (uint64_t)(base >> 24) << 56;
}

void gdt_set(unsigned sel, uint64_t d)
{
	gdt[sel >> 3] = d;
}

uintptr_t desc_kstack_top(void)
{
	return (uintptr_t)kstack + KSTACK_SIZE;
}

void desc_init(void)
{
	struct {
		uint16_t limit;
		uintptr_t base;
	} __attribute__((packed)) d = { sizeof(gdt) - 1, (uintptr_t)gdt };
	uintptr_t t = (uintptr_t)&tss;

	memset(gdt, 0, sizeof(gdt));
	/* Access: P | DPL | S | type; flags: G=1 (4 KiB units), D or L. */
	gdt_set(SEL_CODE32, desc_make(0, 0xFFFFF, 0x9A, 0xC));
	gdt_set(SEL_DATA, desc_make(0, 0xFFFFF, 0x92, 0xC));
	gdt_set(SEL_CODE64, desc_make(0, 0xFFFFF, 0x9A, 0xA));
	gdt_set(SEL_KDATA2, desc_make(0, 0xFFFFF, 0x92, 0xC));
	gdt_set(SEL_UCODE32, desc_make(0, 0xFFFFF, 0xFA, 0xC));
	gdt_set(SEL_UDATA, desc_make(0, 0xFFFFF, 0xF2, 0xC));
	gdt_set(SEL_UCODE64, desc_make(0, 0xFFFFF, 0xFA, 0xA));
	gdt_set(SEL_UDATA2, desc_make(0, 0xFFFFF, 0xF2, 0xC));
	memset(&tss, 0, sizeof(tss));
	tss.iomap_base = sizeof(tss);	/* no I/O bitmap */
#ifdef __x86_64__
	tss.rsp[0] = desc_kstack_top();
	/* Available 64-bit TSS (type 9); the upper half holds base[63:32]. */
	gdt_set(SEL_TSS, desc_make((uint32_t)t, sizeof(tss) - 1, 0x89, 0));
	gdt_set(SEL_TSS + 8, (uint64_t)t >> 32);
#else
	tss.esp0 = desc_kstack_top();
	tss.ss0 = SEL_DATA;
	gdt_set(SEL_TSS, desc_make(t, sizeof(tss) - 1, 0x89, 0));
#endif
	__asm__ volatile("lgdt %0" : : "m"(d) : "memory");
	__asm__ volatile("ltr %w0" : : "r"((uint16_t)SEL_TSS) : "memory");
}
