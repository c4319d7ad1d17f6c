/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The context switch: only what the SysV ABI makes the callee preserve
 * (RBX, RBP, R12-R15) and RSP; everything else is dead across the call to
 * switch_to, and the images use no FPU/SSE state (-mno-sse -mno-80387).
 *
 * void switch_to(uint64_t *prev_rsp, uint64_t next_rsp)
 * saves the current task's registers on its stack, stores RSP into
 * *prev_rsp, loads next_rsp and pops next's registers. A new task's stack
 * (task.c) is laid out as if switch_to had saved it, with R12 = the task and
 * the return address task_trampoline.
 */
	.text
	.globl switch_to
switch_to:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, (%rdi)
	mov %rsi, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret

	/* First code of every task; RSP is 16-byte aligned here (task.c). */
	.globl task_trampoline
task_trampoline:
	mov %r12, %rdi
	call task_bootstrap		/* never returns */
	ud2
