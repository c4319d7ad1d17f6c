// SPDX-License-Identifier: GPL-2.0-or-later
/* Port I/O and CPU-control primitives. */
#ifndef LIB_IO_H
#define LIB_IO_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* Stop this CPU for good: with interrupts off, nothing wakes it but NMI/INIT. */
static inline __attribute__((noreturn)) void halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

#endif
