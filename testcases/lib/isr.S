/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One 16-byte stub per vector: each pushes a dummy error code where the CPU
 * pushes none, then the vector number, so isr_common always sees the same
 * frame (struct irq_frame in idt.h). The CPU pushes an error code for #DF,
 * #TS, #NP, #SS, #GP, #PF, #AC, #CP, #VC and #SX (SDM Vol. 3A Table 6-1);
 * external interrupts and INT n never push one.
 */
#define ISR_STUB_SIZE 16

	.text
	.balign ISR_STUB_SIZE
	.globl isr_stubs
isr_stubs:
	vec = 0
	.rept 256
	.balign ISR_STUB_SIZE
	.if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	push $0
	.endif
	push $vec
	jmp isr_common
	vec = vec + 1
	.endr

#ifdef __x86_64__
isr_common:
	/* The CPU aligned RSP to 16 before its 5-word frame (SDM Vol. 3A
	 * 6.14.2); with the 2 words above and these 15, RSP is 16-byte
	 * aligned again at the call, as the ABI wants. */
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, %rdi
	cld
	call idt_dispatch
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	add $16, %rsp			/* vector and error code */
	iretq
#else
isr_common:
	pusha
	mov %esp, %eax
	cld
	push %eax
	call idt_dispatch
	add $4, %esp
	popa
	add $8, %esp			/* vector and error code */
	iret
#endif
