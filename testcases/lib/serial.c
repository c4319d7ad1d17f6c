// SPDX-License-Identifier: GPL-2.0-or-later
/* Polled 16550 output: no interrupts, no FIFO assumptions beyond THRE. */
#include "lib/serial.h"
#include "lib/io.h"

#define COM1      0x3F8
#define REG_THR   0	/* transmit holding (DLAB=0) */
#define REG_DLL   0	/* divisor low (DLAB=1) */
#define REG_IER   1	/* interrupt enable (DLAB=0) */
#define REG_DLM   1	/* divisor high (DLAB=1) */
#define REG_FCR   2
#define REG_LCR   3
#define REG_MCR   4
#define REG_LSR   5

#define LCR_8N1   0x03
#define LCR_DLAB  0x80
#define FCR_ENABLE_CLEAR 0x07	/* enable FIFOs, clear RX and TX */
#define MCR_DTR_RTS_OUT2 0x0B
#define LSR_THRE  0x20

void serial_init(void)
{
	outb(COM1 + REG_IER, 0);		/* we poll */
	outb(COM1 + REG_LCR, LCR_DLAB);
	outb(COM1 + REG_DLL, 1);		/* divisor 1: 115200 baud */
	outb(COM1 + REG_DLM, 0);
	outb(COM1 + REG_LCR, LCR_8N1);
	outb(COM1 + REG_FCR, FCR_ENABLE_CLEAR);
	outb(COM1 + REG_MCR, MCR_DTR_RTS_OUT2);
}

void serial_putc(char c)
{
	while (!(inb(COM1 + REG_LSR) & LSR_THRE))
		;
	outb(COM1 + REG_THR, (uint8_t)c);
}
