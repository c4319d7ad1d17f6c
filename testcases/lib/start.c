// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/cmdline.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/serial.h"
#include "lib/start.h"

/* 32-bit images get the arguments on the stack from entry.S; 64-bit images in
 * RDI/RSI from longmode.S, which matches each ABI's default convention. */
void lib_start(uint32_t magic, const struct multiboot_info *mbi)
{
	serial_init();
	if (magic != MULTIBOOT_BOOTLOADER_MAGIC) {
		/* Without the magic, EBX is not an info block we may read. */
		printf("FAIL: boot (Multiboot magic is 0x%08x, expected 0x%08x)\n",
		       magic, MULTIBOOT_BOOTLOADER_MAGIC);
		debug_exit(EXIT_FAIL);
	}
	cmdline_init(mbi);
	debug_exit(main(mbi));
}
