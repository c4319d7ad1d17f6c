/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ring-3 entry and the way back (desc.h): user_call enters ring 3 by IRET,
 * user_exit, called by kernel code at any depth, returns from it.
 */
#include "lib/boot.h"
#define SEL_UCODE32	0x28
#define SEL_UDATA	0x30
#define SEL_UCODE64	0x38

	.text
#ifdef __x86_64__
	/* rdi = rip, rsi = rsp, rdx = arg, rcx = rflags */
	.globl user_call
user_call:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, user_saved_sp(%rip)
	push $(SEL_UDATA | 3)
	push %rsi
	push %rcx
	push $(SEL_UCODE64 | 3)
	push %rdi
	mov %rdx, %rdi
	xor %eax, %eax
	xor %ebx, %ebx
	xor %ecx, %ecx
	xor %edx, %edx
	xor %esi, %esi
	xor %ebp, %ebp
	iretq

	.globl user_exit
user_exit:
	mov user_saved_sp(%rip), %rsp
	mov $SEL_DATA, %eax
	mov %eax, %ss
	mov %eax, %ds
	mov %eax, %es
	mov %rdi, %rax
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret

	.bss
	.balign 8
user_saved_sp:
	.quad 0
#else
	/* cdecl: rip, esp, arg, eflags */
	.globl user_call
user_call:
	push %ebx
	push %esi
	push %edi
	push %ebp
	mov %esp, user_saved_sp
	mov 20(%esp), %ecx		/* rip */
	mov 24(%esp), %edx		/* esp */
	mov 28(%esp), %eax		/* arg */
	mov 32(%esp), %ebx		/* eflags */
	push $(SEL_UDATA | 3)
	push %edx
	push %ebx
	push $(SEL_UCODE32 | 3)
	push %ecx
	mov $(SEL_UDATA | 3), %ecx
	mov %ecx, %ds
	mov %ecx, %es
	xor %ebx, %ebx
	xor %ecx, %ecx
	xor %edx, %edx
	xor %esi, %esi
	xor %edi, %edi
	xor %ebp, %ebp
	iret

	.globl user_exit
user_exit:
	mov 4(%esp), %eax
	mov $SEL_DATA, %ecx
	mov %ecx, %ds
	mov %ecx, %es
	mov %ecx, %ss
	mov user_saved_sp, %esp
	pop %ebp
	pop %edi
	pop %esi
	pop %ebx
	ret

	.bss
	.balign 4
user_saved_sp:
	.long 0
#endif
