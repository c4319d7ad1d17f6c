// SPDX-License-Identifier: GPL-2.0-or-later
/* Constants shared by entry.S (which defines the GDT and the boot stack)
 * and longmode.S. */
#ifndef LIB_BOOT_H
#define LIB_BOOT_H

#define SEL_CODE32 0x08
#define SEL_DATA   0x10
#define SEL_CODE64 0x18

#define BOOT_STACK_SIZE 16384

#endif
