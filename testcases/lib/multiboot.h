// SPDX-License-Identifier: GPL-2.0-or-later
/* The part of the Multiboot 1 information block that the guests read. */
#ifndef LIB_MULTIBOOT_H
#define LIB_MULTIBOOT_H

#include <stdint.h>

#define MULTIBOOT_BOOTLOADER_MAGIC 0x2BADB002u
#define MULTIBOOT_INFO_CMDLINE     (1u << 2)

/* Addresses are physical and 32-bit; everything is identity-mapped. */
struct multiboot_info {
	uint32_t flags;
	uint32_t mem_lower;   /* KiB below 1 MiB */
	uint32_t mem_upper;   /* KiB above 1 MiB */
	uint32_t boot_device;
	uint32_t cmdline;
};

#endif
