// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Interrupt descriptor table: all 256 vectors go through one stub each
 * (isr.S) to idt_dispatch, which calls the C handler registered for the
 * vector. Vectors without a handler end the run: "FAIL: unexpected exception
 * N ..." (vectors 0-31) or "FAIL: unexpected interrupt N ..." and exit 1.
 *
 * Every gate is an interrupt gate (SDM Vol. 3A 6.11/6.14.1), so handlers run
 * with IF clear. One table serves every CPU: the BSP builds it with
 * idt_init(), other CPUs only load it with idt_load().
 */
#ifndef LIB_IDT_H
#define LIB_IDT_H

#include <stdbool.h>
#include <stdint.h>

#define IDT_VECTORS	256
#define VEC_NMI		2
#define VEC_FIRST_IRQ	32	/* 0-31 are reserved for exceptions */

/* What the stub saved, lowest address first (isr.S pushes it this way). */
struct irq_frame {
#ifdef __x86_64__
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t ip, cs, flags, sp, ss;	/* pushed by the CPU */
#else
	uint32_t edi, esi, ebp, esp_unused, ebx, edx, ecx, eax;	/* PUSHA */
	uint32_t vector, error;
	uint32_t ip, cs, flags;		/* pushed by the CPU */
	uint32_t sp, ss;		/* only on a privilege change (CS RPL 3) */
#endif
};

typedef void (*irq_handler_t)(struct irq_frame *f);

/* Builds the IDT (once), loads it on this CPU and disables the 8259 PICs. */
void idt_init(void);
/* Loads the table built by idt_init on this CPU (APs). */
void idt_load(void);
bool idt_ready(void);

/* handler NULL restores the default (fail and exit). */
void idt_set_handler(unsigned vector, irq_handler_t handler);
irq_handler_t idt_get_handler(unsigned vector);

/* Rewrites one gate after idt_init: present or not, its DPL (3 lets INT n
 * from ring 3 through), and in 64-bit mode its IST index (0: none). */
void idt_set_gate(unsigned vector, bool present, unsigned dpl, unsigned ist);

/* Remaps the 8259s away from the exception vectors (to 0x20-0x2F) and masks
 * every line, so a stray legacy IRQ is never taken for an exception. */
void pic_disable(void);

static inline void irq_enable(void)
{
	__asm__ volatile("sti" ::: "memory");
}

static inline void irq_disable(void)
{
	__asm__ volatile("cli" ::: "memory");
}

/* Called by isr.S. */
void idt_dispatch(struct irq_frame *f);

#endif
