/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * 32-bit Multiboot entry, shared by 32- and 64-bit images (it is assembled
 * with -m64 for the latter; .code32 keeps it 32-bit code either way).
 *
 * The loader leaves us in flat protected mode with paging off, EAX = magic
 * and EBX = info, but with no usable stack and a GDT we must not rely on.
 */
#include "lib/boot.h"

	.code32
	.section .text.entry, "ax"
	.globl _start
_start:
	cli
	cld
	mov %eax, %esi			/* magic; lib_start checks it */
					/* EBX = info, kept until lib_start */
	lgdt gdt_desc
	ljmp $SEL_CODE32, $1f
1:	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %fs
	mov %eax, %gs
	mov %eax, %ss

	/* A loader need not zero BSS; the stack and page tables live there. */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb

	mov $boot_stack_top, %esp
#ifdef __x86_64__
	jmp enter_long_mode		/* longmode.S: ESI = magic, EBX = info */
#else
	sub $8, %esp			/* ESP 16-byte aligned at the call, as the ABI wants */
	push %ebx
	push %esi
	call lib_start			/* never returns */
#endif

	.data
	.balign 8
gdt:
	.quad 0				/* null */
	.quad 0x00cf9a000000ffff	/* SEL_CODE32: flat 4 GiB, D=1 */
	.quad 0x00cf92000000ffff	/* SEL_DATA: flat 4 GiB, writable */
	.quad 0x00af9a000000ffff	/* SEL_CODE64: L=1, D=0 */
gdt_end:
gdt_desc:
	.word gdt_end - gdt - 1
	.long gdt			/* stays valid in long mode: identity-mapped below 4 GiB */

	.bss
	.balign 16
	.globl boot_stack_top
boot_stack:
	.skip BOOT_STACK_SIZE
boot_stack_top:
