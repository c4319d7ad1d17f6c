// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A higher-half 64-bit kernel with ring-3 pages: system calls by INT 0x80,
 * SYSCALL/SYSRET and SYSENTER/SYSEXIT, the TSS stacks (RSP0, IST), and the
 * faults ring 3 can take (SDM Vol. 3A 4.6, 5.8.8, 6.14, 7.7; Vol. 2B
 * SYSCALL, SYSRET, SYSENTER, SYSEXIT).
 *
 * Layout (higher_half.ld, higher_half_boot.S): the kernel runs at
 * 0xFFFFFFFF80000000 (physical 0x400000, 2 MiB supervisor pages); the low
 * 1 GiB stays identity-mapped, supervisor-only. Ring 3 lives at 0x40000000
 * (PDPT_low[1], U/S=1 on every level), 4 KiB pages:
 *   0x40000000 user code   P|U          (higher_half_user.S)
 *   0x40001000 user data   P|RW|U|NX
 *   0x40002000 user stack  P|RW|U|NX
 *   0x40010000 read-only   P|U|NX       (the user data frame again)
 *   0x40011000 NX code     P|U|NX       (the user code frame again)
 *   0x40020000 unmapped
 * GDT and TSS: lib/desc.h (user CS 0x3B, SS 0x33; after SYSEXIT SS 0x43).
 * TSS.RSP0 = a 16 KiB kernel stack, IST1 (#DF) and IST2 (NMI gate) their
 * own stacks.
 *
 * Checks, each a PASS/FAIL line with got and expected values:
 *   kernel.*     RIP, a static's address and the stack are in the top 2 GiB
 *   int80.*      INT 0x80 (DPL-3 gate): the frame's CS 0x3B, SS 0x33, RSP
 *                and RIP (after the INT), the handler's stack is RSP0; back
 *                by IRETQ: RAX, CS, SS, RSP and RFLAGS as ring 3 left them
 *   syscall.*    EFER.SCE, STAR, LSTAR, FMASK = AC|DF|IF|TF: in the kernel
 *                RFLAGS = user RFLAGS & ~FMASK exactly, R11 = user RFLAGS,
 *                RCX = the next RIP, CS 0x18, SS 0x20; back by SYSRET: RAX,
 *                CS 0x3B, SS 0x33, RSP, RFLAGS = R11
 *   sysenter.*   SYSENTER_CS 0x18, ESP, EIP: kernel RSP = SYSENTER_ESP, CS
 *                0x18, SS 0x20, RFLAGS = user & ~(IF|RF|VM); back by
 *                SYSEXIT (REX.W): RIP = RDX, RSP = RCX, CS 0x3B, SS 0x43
 *   pf.* gp.*    ring-3 faults: a read of a kernel page (#PF 0x5), a write
 *                to a read-only user page (0x7), a fetch from an NX user page
 *                (0x15, CR2 = RIP), HLT and MOV CR3 (#GP(0)): error code,
 *                CR2, RIP, CS 0x3B, SS 0x33, RSP, and the handler on RSP0
 *   df.*         #PF gate made not present, ring 3 touches an unmapped page:
 *                #PF then #NP is #DF(0), taken on the IST1 stack
 *   nmi.*        INT 2 in the kernel: the NMI gate's IST2 stack
 *
 * Known deviation (report.h convention: PASS plus a DEVIATION line; FAIL
 * with -append strict=1): syscall.kernel_rflags: QEMU 7.2 TCG clears every
 * arithmetic flag on SYSCALL besides those FMASK names.
 */
#include <stddef.h>

#include "lib/desc.h"
#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/paging.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"
#include "lib/string.h"

#define KERNEL_VIRT	0xFFFFFFFF80000000ul
#define KERNEL_PHYS	0x400000ul
#define V2P(p)		((uintptr_t)(p) - KERNEL_VIRT + KERNEL_PHYS)

#define USER_VIRT	0x40000000ul
#define USER_DATA	(USER_VIRT + 0x1000)
#define USER_STACK_TOP	(USER_VIRT + 0x3000)
#define USER_RO		(USER_VIRT + 0x10000)
#define USER_NX		(USER_VIRT + 0x11000)
#define USER_UNMAPPED	(USER_VIRT + 0x20000)
#define USER_FLAGS	0x40ED7ul	/* higher_half_user.S */
#define USER_ENTRY_FLAGS 0x202ul	/* IF=1, IOPL 0 */

#define SYS_EXIT	0
#define SYS_PING	1

#define MSR_STAR		0xC0000081
#define MSR_LSTAR		0xC0000082
#define MSR_FMASK		0xC0000084
#define MSR_SYSENTER_CS		0x174
#define MSR_SYSENTER_ESP	0x175
#define MSR_SYSENTER_EIP	0x176

#define FL_CF 0x1ul
#define FL_PF 0x4ul
#define FL_AF 0x10ul
#define FL_ZF 0x40ul
#define FL_SF 0x80ul
#define FL_TF 0x100ul
#define FL_IF 0x200ul
#define FL_DF 0x400ul
#define FL_OF 0x800ul
#define FL_RF 0x10000ul
#define FL_VM 0x20000ul
#define FL_AC 0x40000ul
#define FL_ARITH (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)
#define FMASK (FL_AC | FL_DF | FL_IF | FL_TF)

/* higher_half_user.S */
struct user_area {
	uint64_t rsp_before, flags_before, rax, flags_after, cs, ss, rsp_after;
};
/* At USER_DATA (the first thing in .user.data; main checks it). Kernel code
 * uses the absolute address: RIP-relative cannot reach from the top 2 GiB. */
#define user_area (*(volatile struct user_area *)USER_DATA)
extern const char u_int80[], u_int80_ret[], u_syscall[], u_syscall_ret[];
extern const char u_sysenter[], u_sysenter_ret[];
extern const char u_load[], u_store[], u_jump[], u_hlt[], u_mov_cr3[];
extern const char __user_phys[], __user_text[], __user_data[], __user_stack[];

/* Page tables for the user region (kernel BSS; physical = V2P). */
static uint64_t user_pd[512] __attribute__((aligned(4096)));
static uint64_t user_pt[512] __attribute__((aligned(4096)));

static uint8_t ist1_stack[8192] __attribute__((aligned(16)));
static uint8_t ist2_stack[8192] __attribute__((aligned(16)));
static uint8_t sysenter_stack[8192] __attribute__((aligned(16)));
static uint8_t syscall_stack[8192] __attribute__((aligned(16)));
#define TOP(s) ((uintptr_t)(s) + sizeof(s))

/* What the handlers saw. */
static struct {
	unsigned count;
	uint64_t vector, error, ip, cs, flags, sp, ss, cr2, frame_top;
} rec;
static uint64_t ping_frame_top, ping_cs, ping_ss, ping_sp, ping_ip;

/* SYSCALL/SYSENTER entry points: record, answer, return. */
uint64_t sc_user_rsp, sc_kflags, sc_rcx, sc_r11, sc_kcs, sc_kss;
uint64_t se_kflags, se_krsp, se_kcs, se_kss;
__asm__(".text\n"
	"syscall_entry:\n\t"
	"mov %rsp, sc_user_rsp(%rip)\n\t"
	"mov syscall_stack_top(%rip), %rsp\n\t"
	"pushfq\n\t"
	"popq sc_kflags(%rip)\n\t"
	"mov %rcx, sc_rcx(%rip)\n\t"
	"mov %r11, sc_r11(%rip)\n\t"
	"xor %eax, %eax\n\t"
	"mov %cs, %ax\n\t"
	"mov %rax, sc_kcs(%rip)\n\t"
	"mov %ss, %ax\n\t"
	"mov %rax, sc_kss(%rip)\n\t"
	"mov sc_user_rsp(%rip), %rsp\n\t"
	"mov $0xBEEF, %eax\n\t"
	"sysretq\n"
	"sysenter_entry:\n\t"
	"mov %rsp, se_krsp(%rip)\n\t"
	"pushfq\n\t"
	"popq se_kflags(%rip)\n\t"
	"xor %eax, %eax\n\t"
	"mov %cs, %ax\n\t"
	"mov %rax, se_kcs(%rip)\n\t"
	"mov %ss, %ax\n\t"
	"mov %rax, se_kss(%rip)\n\t"
	"mov $0xCAFE, %eax\n\t"
	"sysexitq\n");
extern const char syscall_entry[], sysenter_entry[];
uintptr_t syscall_stack_top;

static uint64_t frame_top(struct irq_frame *f)
{
	return (uintptr_t)(&f->ss + 1);
}

static void int80(struct irq_frame *f)
{
	if (f->rax == SYS_EXIT)
		user_exit(0);
	ping_frame_top = frame_top(f);
	ping_cs = f->cs;
	ping_ss = f->ss;
	ping_sp = f->sp;
	ping_ip = f->ip;
	f->rax = 0xC0FFEE;
}

static void record(struct irq_frame *f)
{
	rec.count++;
	rec.vector = f->vector;
	rec.error = f->error;
	rec.ip = f->ip;
	rec.cs = f->cs;
	rec.flags = f->flags;
	rec.sp = f->sp;
	rec.ss = f->ss;
	rec.cr2 = read_cr2();
	rec.frame_top = frame_top(f);
}

static void fault(struct irq_frame *f)
{
	record(f);
	if (f->vector == 8) {	/* its saved CS:RIP are undefined */
		idt_set_gate(14, true, 0, 0);
		user_exit(1);
	}
	if (!(f->cs & 3)) {
		printf("FAIL: kernel-mode exception %lu at RIP 0x%lx (error 0x%lx, "
		       "CR2 0x%lx)\n", f->vector, f->ip, f->error, read_cr2());
		report_summary();
		debug_exit(EXIT_FAIL);
	}
	user_exit(1);
}

static void nmi(struct irq_frame *f)
{
	record(f);
}

static void map_user(void)
{
	uint64_t *pml4 = (uint64_t *)(read_cr3() & PTE_ADDR);	/* identity */
	uint64_t *pdpt_low = (uint64_t *)(uintptr_t)(pml4[0] & PTE_ADDR);
	uintptr_t text = (uintptr_t)__user_phys;
	uintptr_t data = text + ((uintptr_t)__user_data - (uintptr_t)__user_text);
	uintptr_t stack = text + ((uintptr_t)__user_stack - (uintptr_t)__user_text);

	user_pt[0] = text | PTE_P | PTE_US;
	user_pt[1] = data | PTE_P | PTE_RW | PTE_US | PTE_NX;
	user_pt[2] = stack | PTE_P | PTE_RW | PTE_US | PTE_NX;
	user_pt[0x10] = data | PTE_P | PTE_US | PTE_NX;
	user_pt[0x11] = text | PTE_P | PTE_US | PTE_NX;
	user_pd[0] = V2P(user_pt) | PTE_P | PTE_RW | PTE_US;
	pdpt_low[1] = V2P(user_pd) | PTE_P | PTE_RW | PTE_US;
	pml4[0] |= PTE_US;	/* PDPT_low[0] stays supervisor */
	write_cr3(read_cr3());
}

static uint64_t run_user(const char *ip, uint64_t arg)
{
	memset(&rec, 0, sizeof(rec));
	memset((void *)&user_area, 0, sizeof(user_area));
	return user_call((uintptr_t)ip, USER_STACK_TOP, arg, USER_ENTRY_FLAGS);
}

static void test_kernel_high(void)
{
	uintptr_t rip, rsp;

	__asm__ volatile("lea 0(%%rip), %0; mov %%rsp, %1" : "=r"(rip), "=r"(rsp));
	report_eq("kernel.rip_in_top_2g", rip >= KERNEL_VIRT, 1);
	report_eq("kernel.rsp_in_top_2g", rsp >= KERNEL_VIRT, 1);
	report_eq("kernel.static_in_top_2g", (uintptr_t)&rec >= KERNEL_VIRT, 1);
	report_eq("kernel.text_starts_at_0xffffffff80000000",
		  ((uintptr_t)&test_kernel_high & ~0x1FFFFFul), KERNEL_VIRT);
	report_eq("kernel.cr0_wp", read_cr0() & CR0_WP, CR0_WP);
	report_eq("kernel.efer_nxe", rdmsr(MSR_EFER) & EFER_NXE, EFER_NXE);
}

static void test_int80(void)
{
	report_eq("int80.exit_status", run_user(u_int80, 0), 0);
	report_eq("int80.frame.cs", ping_cs, SEL_UCODE64 | 3);
	report_eq("int80.frame.ss", ping_ss, SEL_UDATA | 3);
	report_eq("int80.frame.rsp", ping_sp, user_area.rsp_before);
	report_eq("int80.frame.rip_after_int", ping_ip, (uintptr_t)u_int80_ret);
	report_eq("int80.handler_on_rsp0", ping_frame_top, tss.rsp[0]);
	report_eq("int80.iretq.rax", user_area.rax, 0xC0FFEE);
	report_eq("int80.iretq.cs", user_area.cs, SEL_UCODE64 | 3);
	report_eq("int80.iretq.ss", user_area.ss, SEL_UDATA | 3);
	report_eq("int80.iretq.rsp", user_area.rsp_after, user_area.rsp_before);
	report_eq("int80.iretq.rflags", user_area.flags_after, user_area.flags_before);
	report_eq("int80.user_rflags_as_set", user_area.flags_before, USER_FLAGS);
}

static void test_syscall(void)
{
	uint64_t want = USER_FLAGS & ~FMASK;

	syscall_stack_top = TOP(syscall_stack);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
	wrmsr(MSR_STAR, (uint64_t)SEL_UCODE32 << 48 | (uint64_t)SEL_CODE64 << 32);
	wrmsr(MSR_LSTAR, (uintptr_t)syscall_entry);
	wrmsr(MSR_FMASK, FMASK);
	report_eq("syscall.exit_status", run_user(u_syscall, 0), 0);
	report_eq("syscall.user_rflags_as_set", user_area.flags_before, USER_FLAGS);
	report_eq_dev("syscall.kernel_rflags_is_user_and_not_fmask", sc_kflags,
		      want, want & ~FL_ARITH,
		      "QEMU 7.2 TCG clears CF PF AF ZF SF OF on SYSCALL although "
		      "IA32_FMASK does not name them (SDM: RFLAGS & ~FMASK)");
	report_eq("syscall.r11_is_user_rflags", sc_r11, user_area.flags_before & ~FL_RF);
	report_eq("syscall.rcx_is_next_rip", sc_rcx, (uintptr_t)u_syscall_ret);
	report_eq("syscall.kernel_cs", sc_kcs, SEL_CODE64);
	report_eq("syscall.kernel_ss", sc_kss, SEL_KDATA2);
	report_eq("syscall.user_rsp_unchanged_in_kernel", sc_user_rsp,
		  user_area.rsp_before);
	report_eq("sysret.rax", user_area.rax, 0xBEEF);
	report_eq("sysret.cs", user_area.cs, SEL_UCODE64 | 3);
	report_eq("sysret.ss", user_area.ss, SEL_UDATA | 3);
	report_eq("sysret.rsp", user_area.rsp_after, user_area.rsp_before);
	report_eq("sysret.rflags_from_r11", user_area.flags_after,
		  (sc_r11 & 0x3C7FD7) | 2);
}

static void test_sysenter(void)
{
	wrmsr(MSR_SYSENTER_CS, SEL_CODE64);
	wrmsr(MSR_SYSENTER_ESP, TOP(sysenter_stack));
	wrmsr(MSR_SYSENTER_EIP, (uintptr_t)sysenter_entry);
	report_eq("sysenter.exit_status", run_user(u_sysenter, 0), 0);
	report_eq("sysenter.kernel_rsp", se_krsp, TOP(sysenter_stack));
	report_eq("sysenter.kernel_cs", se_kcs, SEL_CODE64);
	report_eq("sysenter.kernel_ss", se_kss, SEL_CODE64 + 8);
	report_eq("sysenter.kernel_rflags", se_kflags,
		  user_area.flags_before & ~(FL_IF | FL_RF | FL_VM));
	report_eq("sysexit.rax", user_area.rax, 0xCAFE);
	report_eq("sysexit.cs", user_area.cs, SEL_CODE64 + 32 + 3);
	report_eq("sysexit.ss", user_area.ss, SEL_CODE64 + 40 + 3);
	report_eq("sysexit.rsp_from_rcx", user_area.rsp_after, user_area.rsp_before);
	report_eq("sysexit.rip_from_rdx_reached", user_area.cs != 0, 1);
}

/* dst = a + "." + b (printf has no snprintf here). */
static const char *cat(char *dst, const char *a, const char *b)
{
	char *q = dst;

	while (*a && q < dst + 60)
		*q++ = *a++;
	*q++ = '.';
	while (*b && q < dst + 110)
		*q++ = *b++;
	*q = 0;
	return dst;
}

static void user_fault(const char *name, const char *ip, uint64_t arg,
		       unsigned vec, uint64_t error, uint64_t rip, bool cr2,
		       uint64_t want_cr2, uint64_t stack_top)
{
	char n[128];

	report_eq(cat(n, name, "exit_status"), run_user(ip, arg), 1);
	report_eq(cat(n, name, "count"), rec.count, 1);
	report_eq(cat(n, name, "vector"), rec.vector, vec);
	report_eq(cat(n, name, "error"), rec.error, error);
	if (cr2)
		report_eq(cat(n, name, "cr2"), rec.cr2, want_cr2);
	if (rip) {
		report_eq(cat(n, name, "rip"), rec.ip, rip);
		report_eq(cat(n, name, "cs"), rec.cs, SEL_UCODE64 | 3);
		report_eq(cat(n, name, "ss"), rec.ss, SEL_UDATA | 3);
		report_eq(cat(n, name, "rsp"), rec.sp, USER_STACK_TOP);
		report_eq(cat(n, name, "rflags"), rec.flags & ~FL_RF, USER_ENTRY_FLAGS);
	}
	report_eq(cat(n, name, stack_top == tss.rsp[0] ? "on_rsp0" : "on_ist1"),
		  rec.frame_top, stack_top);
}

static void test_user_faults(void)
{
	uintptr_t kaddr = (uintptr_t)&rec.count;

	user_fault("pf.user_read_supervisor", u_load, kaddr, 14, 0x5,
		   (uintptr_t)u_load, true, kaddr, tss.rsp[0]);
	user_fault("pf.user_write_read_only", u_store, USER_RO + 0x18, 14, 0x7,
		   (uintptr_t)u_store, true, USER_RO + 0x18, tss.rsp[0]);
	/* u_jump's target is u_load's code, mapped again NX at USER_NX. */
	user_fault("pf.user_fetch_nx", u_jump,
		   USER_NX + ((uintptr_t)u_load - USER_VIRT), 14, 0x15,
		   USER_NX + ((uintptr_t)u_load - USER_VIRT), true,
		   USER_NX + ((uintptr_t)u_load - USER_VIRT), tss.rsp[0]);
	user_fault("gp.user_hlt", u_hlt, 0, 13, 0, (uintptr_t)u_hlt, false, 0,
		   tss.rsp[0]);
	user_fault("gp.user_mov_cr3", u_mov_cr3, read_cr3(), 13, 0,
		   (uintptr_t)u_mov_cr3, false, 0, tss.rsp[0]);
	/* #PF with its gate not present: #NP, and #PF + #NP is #DF. Only
	 * the error code and the stack: #DF's saved CS:RIP are undefined. */
	idt_set_gate(14, false, 0, 0);
	user_fault("df.pf_through_not_present_gate", u_load, USER_UNMAPPED, 8, 0,
		   0, false, 0, TOP(ist1_stack));
	report_eq("df.pf_gate_restored_then_pf_works",
		  (run_user(u_load, USER_UNMAPPED), rec.vector), 14);
}

static void test_nmi_ist(void)
{
	memset(&rec, 0, sizeof(rec));
	__asm__ volatile("int $2");
	report_eq("nmi.int2.count", rec.count, 1);
	report_eq("nmi.int2.on_ist2", rec.frame_top, TOP(ist2_stack));
	report_eq("nmi.int2.cs", rec.cs, SEL_CODE64);
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	report_strict_from_cmdline();
	printf("higher_half: kernel at 0x%lx, user at 0x%lx\n",
	       (unsigned long)(uintptr_t)&main, USER_VIRT);
	desc_init();
	tss.ist[1] = TOP(ist1_stack);
	tss.ist[2] = TOP(ist2_stack);
	idt_init();
	idt_set_gate(0x80, true, 3, 0);
	idt_set_handler(0x80, int80);
	idt_set_gate(8, true, 0, 1);
	idt_set_gate(2, true, 0, 2);
	idt_set_handler(2, nmi);
	for (unsigned v = 0; v < 32; v++)
		if (v != 2)
			idt_set_handler(v, fault);
	map_user();
	report_eq("user.layout.data_page", (uintptr_t)__user_data, USER_DATA);

	test_kernel_high();
	test_int80();
	test_syscall();
	test_sysenter();
	test_user_faults();
	test_nmi_ist();
	return report_summary();
}
