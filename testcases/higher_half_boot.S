/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * higher_half's start-up (instead of lib/entry.S and lib/longmode.S): in
 * 32-bit code at the load address, build page tables that map
 *   0 .. 1 GiB                 identity, 2 MiB pages, supervisor
 *                              (this stub, the Multiboot info, the tables)
 *   0xFFFFFFFF80000000 + 16 MiB  -> physical 0x400000, 2 MiB pages,
 *                              supervisor (the kernel)
 * enter long mode (EFER.LME|NXE, CR0.PG|WP), then jump to the kernel's
 * high addresses, zero its BSS, and call lib_start on a high stack.
 */
#include "lib/boot.h"

#define KERNEL_PHYS	0x400000
#define PTE_P		1
#define PTE_RW		2
#define PTE_PS		0x80
#define MSR_EFER	0xC0000080
#define EFER_LME	(1 << 8)
#define EFER_NXE	(1 << 11)

	.section .boot.text, "ax"
	.code32
	.globl _start
_start:
	cli
	cld
	mov %eax, %esi			/* magic; EBX = info */
	lgdt boot_gdt_desc
	ljmp $SEL_CODE32, $1f
1:	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss

	mov $boot_pml4, %edi		/* five tables, contiguous */
	mov $(5 * 1024), %ecx
	xor %eax, %eax
	rep stosl

	movl $(boot_pdpt_low + PTE_P + PTE_RW), boot_pml4
	movl $(boot_pdpt_high + PTE_P + PTE_RW), boot_pml4 + 511 * 8
	movl $(boot_pd_low + PTE_P + PTE_RW), boot_pdpt_low
	movl $(boot_pd_high + PTE_P + PTE_RW), boot_pdpt_high + 510 * 8
	mov $boot_pd_low, %edi
	mov $(PTE_P + PTE_RW + PTE_PS), %eax
	mov $512, %ecx
2:	mov %eax, (%edi)
	add $0x200000, %eax
	add $8, %edi
	loop 2b
	mov $boot_pd_high, %edi
	mov $(KERNEL_PHYS + PTE_P + PTE_RW + PTE_PS), %eax
	mov $8, %ecx
3:	mov %eax, (%edi)
	add $0x200000, %eax
	add $8, %edi
	loop 3b

	mov %cr4, %eax
	or $(1 << 5), %eax		/* PAE */
	mov %eax, %cr4
	mov $boot_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $(EFER_LME | EFER_NXE), %eax
	wrmsr
	mov %cr0, %eax
	or $((1 << 31) | (1 << 16)), %eax	/* PG, WP */
	mov %eax, %cr0
	ljmp $SEL_CODE64, $4f

	.code64
4:	movabs $hh_start64, %rax
	jmp *%rax

	.section .boot.data, "aw"
	.balign 8
boot_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* SEL_CODE32 */
	.quad 0x00cf92000000ffff	/* SEL_DATA */
	.quad 0x00af9a000000ffff	/* SEL_CODE64 */
boot_gdt_end:
boot_gdt_desc:
	.word boot_gdt_end - boot_gdt - 1
	.long boot_gdt

	.section .boot.bss, "aw", @nobits
	.balign 4096
	.globl boot_pml4
boot_pml4:	.skip 4096
boot_pdpt_low:	.skip 4096
boot_pd_low:	.skip 4096
boot_pdpt_high:	.skip 4096
boot_pd_high:	.skip 4096

	.text
hh_start64:
	lea hh_stack_top(%rip), %rsp
	lea __bss_start(%rip), %rdi
	lea __bss_end(%rip), %rcx
	sub %rdi, %rcx
	xor %eax, %eax
	rep stosb
	mov %esi, %edi			/* magic */
	mov %ebx, %esi			/* info (physical, identity-mapped) */
	call lib_start

	.bss
	.balign 16
hh_stack:
	.skip BOOT_STACK_SIZE
hh_stack_top:
