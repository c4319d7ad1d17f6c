// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The C side of boot. entry.S (via longmode.S in 64-bit images) calls
 * lib_start, which sets up the serial port and the command line, runs the
 * image's main and exits through debug_exit with main's return value.
 */
#ifndef LIB_START_H
#define LIB_START_H

#include <stdint.h>

#include "lib/multiboot.h"

/* Each image defines this; it returns an exit status (see report.h). */
int main(const struct multiboot_info *mbi);

__attribute__((noreturn)) void lib_start(uint32_t magic,
					 const struct multiboot_info *mbi);

#endif
