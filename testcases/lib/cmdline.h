// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Multiboot command line as space-separated key=value words, e.g.
 * "sockets=2 cores=3 threads=2 l3=on". Words without '=' (QEMU passes the
 * kernel's file name first) are ignored; if a key repeats, the last one wins.
 */
#ifndef LIB_CMDLINE_H
#define LIB_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/multiboot.h"

enum cmdline_status {
	CMDLINE_ABSENT,
	CMDLINE_FOUND,
	CMDLINE_INVALID,	/* present, but not a number that fits */
};

/* Copies the command line, if the loader passed one (info flags bit 2). */
void cmdline_init(const struct multiboot_info *mbi);

/* The whole command line ("" if none). */
const char *cmdline_get(void);

/* Copies key's value, truncated to size - 1 characters; false if absent. */
bool cmdline_str(const char *key, char *buf, size_t size);

/* Parses key's value as a decimal or 0x-prefixed hex 32-bit number. */
enum cmdline_status cmdline_uint(const char *key, uint32_t *value);

#endif
