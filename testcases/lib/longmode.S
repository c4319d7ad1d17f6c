/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Switch from 32-bit protected mode to long mode, then call lib_start in
 * 64-bit code. Linked into 64-bit images only; entry.S jumps here with
 * ESI = Multiboot magic, EBX = info pointer, ESP = boot stack.
 *
 * Paging identity-maps the low 4 GiB with 2 MiB pages: topolab's CPU core only
 * supports identity paging, and the loader's info block, the image and all
 * device MMIO (APIC at 0xFEE00000) lie below 4 GiB.
 */
#include "lib/boot.h"

#define CR0_PG		(1 << 31)
#define CR4_PAE		(1 << 5)
#define MSR_EFER	0xC0000080
#define EFER_LME	(1 << 8)
#define PTE_P		(1 << 0)
#define PTE_RW		(1 << 1)
#define PTE_PS		(1 << 7)	/* in a page directory entry: 2 MiB page */
#define CPUID_EXT_LM	(1 << 29)	/* 0x80000001 EDX */

#define COM1_THR	0x3F8
#define COM1_LSR	0x3FD
#define LSR_THRE	(1 << 5)
#define DEBUG_EXIT_PORT	0xF4

	.code32
	.text
	.globl enter_long_mode
enter_long_mode:
	mov %ebx, %ebp			/* CPUID clobbers EBX */
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb no_long_mode
	mov $0x80000001, %eax
	cpuid
	test $CPUID_EXT_LM, %edx
	jz no_long_mode
	mov %ebp, %ebx

	/* PML4[0] -> PDPT; PDPT[0..3] -> the four page directories. */
	movl $(pdpt + PTE_P + PTE_RW), pml4
	mov $pdpt, %edi
	mov $(pd + PTE_P + PTE_RW), %eax
	mov $4, %ecx
1:	mov %eax, (%edi)
	add $4096, %eax
	add $8, %edi
	loop 1b

	/* 2048 directory entries of 2 MiB each = 4 GiB; high dwords stay 0 (BSS). */
	mov $pd, %edi
	mov $(PTE_P + PTE_RW + PTE_PS), %eax
	mov $2048, %ecx
2:	mov %eax, (%edi)
	add $0x200000, %eax
	add $8, %edi
	loop 2b

	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $CR0_PG, %eax
	mov %eax, %cr0			/* now in compatibility mode */
	ljmp $SEL_CODE64, $3f

	.code64
3:	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	/* Reload RSP whole: the upper half is not defined by the mode switch. */
	mov $boot_stack_top, %rsp
	mov %esi, %edi			/* zero-extends: rdi = magic */
	mov %ebx, %esi			/* rsi = info pointer */
	call lib_start			/* never returns */

	/* Without long mode the 64-bit C library cannot run: say so by hand. */
	.code32
no_long_mode:
	mov $no_lm_msg, %esi
4:	lodsb
	test %al, %al
	jz 6f
	mov %al, %ah
	mov $COM1_LSR, %dx
5:	inb %dx, %al
	test $LSR_THRE, %al
	jz 5b
	mov $COM1_THR, %dx
	mov %ah, %al
	outb %al, %dx
	jmp 4b
6:	mov $1, %eax
	outl %eax, $DEBUG_EXIT_PORT
7:	cli
	hlt
	jmp 7b

	.section .rodata
no_lm_msg:
	.asciz "FAIL: boot (CPU has no long mode: CPUID 0x80000001 EDX[29] clear)\n"

	.bss
	.balign 4096
pml4:	.skip 4096
pdpt:	.skip 4096
pd:	.skip 4 * 4096
