/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * higher_half's ring-3 code, linked at 0x40000000 (section .user.text, one
 * page, mapped P|U/S) with its data page (.user.data, P|RW|U/S|NX). Every
 * program ends with the exit call: INT 0x80 with RAX = 0. struct user_area in
 * higher_half.c mirrors the U_* offsets.
 */
#define U_RSP_BEFORE	0
#define U_FLAGS_BEFORE	8
#define U_RAX		16
#define U_FLAGS_AFTER	24
#define U_CS		32
#define U_SS		40
#define U_RSP_AFTER	48

#define SYS_EXIT	0
#define SYS_PING	1
/* CF PF AF ZF SF DF OF, IF, AC and the fixed bit 1. */
#define USER_FLAGS	0x40ED7

	.section .user.text, "ax"
	.code64

/* After a system call: what ring 3 sees. */
.macro after
	mov %rax, user_area + U_RAX(%rip)
	pushfq
	popq user_area + U_FLAGS_AFTER(%rip)
	xor %eax, %eax
	mov %cs, %ax
	mov %rax, user_area + U_CS(%rip)
	mov %ss, %ax
	mov %rax, user_area + U_SS(%rip)
	mov %rsp, user_area + U_RSP_AFTER(%rip)
	push $0x202
	popfq				/* CPL 3, IOPL 0: IF stays as it is */
	xor %eax, %eax
	int $0x80			/* SYS_EXIT */
	ud2
.endm

	.globl u_int80, u_int80_ret
u_int80:
	mov %rsp, user_area + U_RSP_BEFORE(%rip)
	push $USER_FLAGS
	popfq
	pushfq
	popq user_area + U_FLAGS_BEFORE(%rip)
	mov $SYS_PING, %eax
	int $0x80
u_int80_ret:
	after

	.globl u_syscall, u_syscall_ret
u_syscall:
	mov %rsp, user_area + U_RSP_BEFORE(%rip)
	push $USER_FLAGS
	popfq
	pushfq
	popq user_area + U_FLAGS_BEFORE(%rip)
	mov $SYS_PING, %eax
	syscall
u_syscall_ret:
	after

	.globl u_sysenter, u_sysenter_ret
u_sysenter:
	mov %rsp, user_area + U_RSP_BEFORE(%rip)
	push $USER_FLAGS
	popfq
	pushfq
	popq user_area + U_FLAGS_BEFORE(%rip)
	mov %rsp, %rcx			/* SYSEXIT: RSP <- RCX, RIP <- RDX */
	lea u_sysenter_ret(%rip), %rdx
	sysenter
u_sysenter_ret:
	after

/* One faulting instruction each, at the label; argument in RDI. */
	.globl u_load, u_store, u_jump, u_hlt, u_mov_cr3
u_load:
	mov (%rdi), %rax
	ud2
u_store:
	movq $1, (%rdi)
	ud2
u_jump:
	jmp *%rdi
u_hlt:
	hlt
	ud2
u_mov_cr3:
	mov %rdi, %cr3
	ud2

	.section .user.data, "aw"
	.balign 64
	.globl user_area
user_area:
	.skip 64
