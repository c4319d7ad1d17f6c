/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Multiboot 1 header. link.ld puts .multiboot first in the first loadable
 * segment, so it falls within the first 8 KiB of the file as the spec requires.
 * No a.out-kludge fields: QEMU and topolab load the ELF by its program headers.
 */
#define MB_MAGIC 0x1BADB002
#define MB_FLAG_PAGE_ALIGN (1 << 0)  /* modules on page boundaries */
#define MB_FLAG_MEMORY_INFO (1 << 1) /* mem_lower/mem_upper in the info block */
#define MB_FLAGS (MB_FLAG_PAGE_ALIGN | MB_FLAG_MEMORY_INFO)

	.section .multiboot, "a"
	.balign 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)
