// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * printf to the serial port. Conversions: d i u x X s c %, flags '-' and
 * '0', a field width (digits or '*'), and the length modifiers l ll z.
 */
#ifndef LIB_PRINTF_H
#define LIB_PRINTF_H

#include <stdarg.h>

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
