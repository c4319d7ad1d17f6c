// SPDX-License-Identifier: GPL-2.0-or-later
#include <stddef.h>

#include "lib/boot.h"
#include "lib/cpuid.h"
#include "lib/idt.h"
#include "lib/io.h"
#include "lib/printf.h"
#include "lib/report.h"

#define ISR_STUB_SIZE	16	/* isr.S */
#define GATE_INTR	0x8E	/* present, DPL 0, 32/64-bit interrupt gate */

/* SDM Vol. 3A 6.11 (32-bit) and 6.14.1 (64-bit) gate layouts. */
struct gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;		/* 32-bit: reserved, 0 */
	uint8_t type_attr;
	uint16_t offset_mid;
#ifdef __x86_64__
	uint32_t offset_hi;
	uint32_t reserved;
#endif
} __attribute__((packed));

struct idt_desc {
	uint16_t limit;
	uintptr_t base;
} __attribute__((packed));

extern const char isr_stubs[];

static struct gate idt[IDT_VECTORS] __attribute__((aligned(16)));
static irq_handler_t handlers[IDT_VECTORS];
static volatile bool built;

static const char *const exception_names[32] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
	"#DF", "coprocessor segment overrun", "#TS", "#NP", "#SS", "#GP",
	"#PF", "reserved", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
	"reserved", "reserved", "reserved", "reserved", "reserved",
	"reserved", "#HV", "#VC", "#SX", "reserved",
};

#define PIC1_CMD	0x20
#define PIC1_DATA	0x21
#define PIC2_CMD	0xA0
#define PIC2_DATA	0xA1

void pic_disable(void)
{
	/* ICW1-ICW4 (8259A data sheet): edge, cascade, 8086 mode. The BIOS
	 * leaves the master at vector 8, where IRQ0 would look like #DF. */
	outb(PIC1_CMD, 0x11);
	outb(PIC2_CMD, 0x11);
	outb(PIC1_DATA, 0x20);
	outb(PIC2_DATA, 0x28);
	outb(PIC1_DATA, 0x04);	/* slave on IRQ2 */
	outb(PIC2_DATA, 0x02);	/* slave identity */
	outb(PIC1_DATA, 0x01);
	outb(PIC2_DATA, 0x01);
	outb(PIC1_DATA, 0xFF);	/* OCW1: mask everything */
	outb(PIC2_DATA, 0xFF);
}

void idt_load(void)
{
	struct idt_desc d = { sizeof(idt) - 1, (uintptr_t)idt };

	__asm__ volatile("lidt %0" : : "m"(d));
}

bool idt_ready(void)
{
	return built;
}

void idt_init(void)
{
	if (!built) {
		for (unsigned v = 0; v < IDT_VECTORS; v++) {
			uintptr_t a = (uintptr_t)isr_stubs + v * ISR_STUB_SIZE;
			struct gate *g = &idt[v];

			g->offset_lo = (uint16_t)a;
			g->offset_mid = (uint16_t)(a >> 16);
#ifdef __x86_64__
			g->selector = SEL_CODE64;
			g->offset_hi = (uint32_t)((uint64_t)a >> 32);
#else
			g->selector = SEL_CODE32;
#endif
			g->type_attr = GATE_INTR;
		}
		pic_disable();
		built = true;
	}
	idt_load();
}

void idt_set_handler(unsigned vector, irq_handler_t handler)
{
	if (vector < IDT_VECTORS)
		handlers[vector] = handler;
}

void idt_set_gate(unsigned vector, bool present, unsigned dpl, unsigned ist)
{
	if (vector >= IDT_VECTORS)
		return;
	idt[vector].type_attr = (uint8_t)((present ? 0x80 : 0) | (dpl & 3) << 5 |
					  (GATE_INTR & 0x1F));
#ifdef __x86_64__
	idt[vector].ist = (uint8_t)(ist & 7);
#else
	(void)ist;
#endif
}

irq_handler_t idt_get_handler(unsigned vector)
{
	return vector < IDT_VECTORS ? handlers[vector] : NULL;
}

/* Not under the console lock: the faulting CPU may hold it, and the run
 * ends here anyway. */
static void unexpected(struct irq_frame *f)
{
	unsigned v = (unsigned)f->vector;
	uint32_t apic_id = bits(cpuid(1, 0).ebx, 31, 24);

	if (v < 32)
		printf("FAIL: unexpected exception %u (%s) at EIP 0x%lx "
		       "(error code 0x%lx, CPU with initial APIC ID %u)\n",
		       v, exception_names[v], (unsigned long)f->ip,
		       (unsigned long)f->error, apic_id);
	else
		printf("FAIL: unexpected interrupt %u at EIP 0x%lx "
		       "(CPU with initial APIC ID %u)\n",
		       v, (unsigned long)f->ip, apic_id);
	debug_exit(EXIT_FAIL);
}

void idt_dispatch(struct irq_frame *f)
{
	irq_handler_t h = handlers[f->vector & (IDT_VECTORS - 1)];

	if (h)
		h(f);
	else
		unexpected(f);
}
