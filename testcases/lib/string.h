// SPDX-License-Identifier: GPL-2.0-or-later
/* The few C string/memory functions the guests use. */
#ifndef LIB_STRING_H
#define LIB_STRING_H

#include <stddef.h>

/* gcc may emit calls to memset/memcpy for struct initialisation and copies,
 * even with -ffreestanding, so these two must exist. */
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

#endif
