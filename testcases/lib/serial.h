// SPDX-License-Identifier: GPL-2.0-or-later
/* Polled output on the first 16550 UART (COM1, I/O port 0x3F8). */
#ifndef LIB_SERIAL_H
#define LIB_SERIAL_H

void serial_init(void);
void serial_putc(char c);

#endif
