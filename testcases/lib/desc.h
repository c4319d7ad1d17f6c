// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A GDT with ring-3 segments and a TSS, and ring-3 entry (SDM Vol. 3A 3.4.5,
 * 5.8, 7.2). desc_init() replaces entry.S's GDT by a larger one that keeps its
 * three kernel selectors, so the IDT's gates (SEL_CODE32/SEL_CODE64) stay
 * valid. The order suits SYSCALL/SYSRET (STAR) and SYSENTER/SYSEXIT
 * (IA32_SYSENTER_CS) in 64-bit mode:
 *   SYSCALL:  CS = STAR[47:32] = 0x18, SS = +8 = 0x20
 *   SYSRET:   64-bit CS = STAR[63:48] + 16 = 0x38|3, SS = +8 = 0x30|3;
 *             32-bit CS = STAR[63:48] = 0x28|3
 *   SYSENTER: CS = SYSENTER_CS = 0x18, SS = +8 = 0x20
 *   SYSEXIT:  64-bit CS = SYSENTER_CS + 32 = 0x38|3, SS = +40 = 0x40|3;
 *             32-bit CS = +16, SS = +24 (not used here)
 */
#ifndef LIB_DESC_H
#define LIB_DESC_H

#include <stdint.h>

#include "lib/boot.h"

#define SEL_KDATA2	0x20	/* kernel data, SS after SYSCALL/SYSENTER */
#define SEL_UCODE32	0x28	/* DPL 3, 32-bit code */
#define SEL_UDATA	0x30	/* DPL 3, flat data */
#define SEL_UCODE64	0x38	/* DPL 3, L=1 */
#define SEL_UDATA2	0x40	/* DPL 3, flat data (SS after SYSEXIT) */
#define SEL_TSS		0x48	/* 16 bytes in 64-bit mode */
#define SEL_SPARE	0x58	/* free entries for the images' own tests */
#define GDT_ENTRIES	16	/* 0x58..0x78 are spare */

#ifdef __x86_64__
#define SEL_UCODE	SEL_UCODE64
#else
#define SEL_UCODE	SEL_UCODE32
#endif

/* The hardware TSS (SDM Vol. 3A Figures 7-2 and 7-11). */
#ifdef __x86_64__
struct tss {
	uint32_t reserved0;
	uint64_t rsp[3];	/* 0x04 */
	uint64_t ist[8];	/* 0x1C: ist[0] is the reserved slot, IST1 at 0x24 */
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;	/* 0x66; 0x68 bytes in all */
} __attribute__((packed));
#else
struct tss {
	uint16_t link, r0;
	uint32_t esp0;
	uint16_t ss0, r1;
	uint32_t esp1;
	uint16_t ss1, r2;
	uint32_t esp2;
	uint16_t ss2, r3;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint16_t es, r4, cs, r5, ss, r6, ds, r7, fs, r8, gs, r9, ldt, r10;
	uint16_t trap, iomap_base;
} __attribute__((packed));
#endif

extern struct tss tss;
extern uint64_t gdt[GDT_ENTRIES];

/* Builds and loads the GDT, loads TR; RSP0/ESP0 (SS0 = SEL_DATA) point to a
 * 16 KiB kernel stack of desc.c (desc_kstack_top). */
void desc_init(void);
uintptr_t desc_kstack_top(void);
/* A raw segment descriptor: base, limit (20 bits), access byte, flags
 * nibble (G, D/B, L, AVL). */
uint64_t desc_make(uint32_t base, uint32_t limit, uint8_t access, uint8_t flags);
/* Sets a GDT entry by selector (no reload). */
void gdt_set(unsigned sel, uint64_t d);

/*
 * Enters ring 3 by IRET at rip with stack sp, the given RFLAGS (IOPL 0
 * unless flags say otherwise) and arg in RDI (64-bit) / EAX (32-bit); the
 * user segments are SEL_UCODE|3 and SEL_UDATA|3 (32-bit: DS/ES too).
 * user_call returns when kernel code (a handler, on whatever stack) calls
 * user_exit(value): that abandons the handler's frame, restores the kernel's
 * data segments and stack, and user_call returns value.
 */
uintptr_t user_call(uintptr_t rip, uintptr_t sp, uintptr_t arg, uintptr_t flags);
__attribute__((noreturn)) void user_exit(uintptr_t value);

#endif
