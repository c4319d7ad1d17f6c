/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * AP start-up. smp.c copies smp_trampoline_start..smp_trampoline_end to
 * SMP_TRAMPOLINE_ADDR and fills smp_trampoline_gdtr in the copy with the
 * BSP's GDTR; STARTUP vector SMP_SIPI_VECTOR makes the AP begin there in real
 * mode with CS = vector << 8, IP = 0 (SDM Vol. 3A 8.4.3).
 *
 * The AP then takes a stack slot with LOCK XADD, so even an AP that checks
 * in late (after the BSP gave up on it) never shares a stack.
 */
#include "lib/boot.h"
#include "lib/smp.h"

#define CR0_PE		(1 << 0)
#define CR0_PG		(1 << 31)
#define CR4_PAE		(1 << 5)
#define MSR_EFER	0xC0000080
#define EFER_LME	(1 << 8)

	/* Data, not code, here: only the copy below 1 MiB runs. */
	.section .rodata
	.code16
	.balign 16
	.globl smp_trampoline_start
smp_trampoline_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	/* DS-relative: the copy's offset of the GDTR. lgdtl takes a 32-bit
	 * base (a 16-bit operand size would drop the top byte). */
	lgdtl smp_trampoline_gdtr - smp_trampoline_start
	mov %cr0, %eax
	or $CR0_PE, %eax
	mov %eax, %cr0
	/* A far jump loads CS from the GDT and leaves real mode (SDM 9.9.1). */
	ljmpl $SEL_CODE32, $ap_start32

	.balign 8
	.globl smp_trampoline_gdtr
smp_trampoline_gdtr:
	.word 0				/* limit */
	.long 0				/* base */
	.globl smp_trampoline_end
smp_trampoline_end:

	.text
	.code32
ap_start32:
	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %fs
	mov %eax, %gs
	mov %eax, %ss

	mov $1, %eax
	lock xadd %eax, smp_stack_ticket	/* EAX = this AP's slot */
	cmp $(SMP_MAX_CPUS - 1), %eax
	jae no_stack
	inc %eax
	imul $SMP_STACK_SIZE, %eax
	add $smp_ap_stacks, %eax
	mov %eax, %esp			/* top of the slot */

#ifdef __x86_64__
	/* The same steps as longmode.S, on the BSP's page tables (SDM 9.8.5). */
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov smp_boot_cr3, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $CR0_PG, %eax
	mov %eax, %cr0
	ljmp $SEL_CODE64, $1f

	.code64
1:	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %esp, %esp			/* clears RSP[63:32], undefined here */
	call smp_ap_entry
	.code32
#else
	call smp_ap_entry
#endif
	/* smp_ap_entry never returns; more APs than slots stop here. */
no_stack:
	cli
	hlt
	jmp no_stack
