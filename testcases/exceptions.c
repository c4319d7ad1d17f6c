// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every exception vector's error code and saved frame (SDM Vol. 3A chapter 6,
 * "Interrupt 0" to "Interrupt 21"), built as a 32-bit image (exceptions) and
 * a 64-bit one (exceptions64) from this one file.
 *
 * Each case runs one instruction at a known address and expects exactly one
 * exception. The handler (all 32 vectors) records the frame and resumes after
 * the instruction (kernel cases), or returns to the kernel with user_exit
 * (ring-3 cases). One line per value:
 *   PASS: <MN>.<case>.<field> (got G, expected E)
 * fields: count (exceptions taken: 1), vector, error (vectors that push one),
 * rip (the faulting instruction for faults, the next one for traps), cs,
 * rflags (RF masked: the SDM sets it in the image of faults, not of traps,
 * and the checks do not depend on it), and in 64-bit mode ss and rsp (the
 * 32-bit frame has them only on a privilege change, then they are checked
 * too), cr2 for #PF.
 *
 * The expected values are the SDM's. Known deviations (report.h
 * convention): a check that sees the one documented alternative counts as
 * passed, its PASS line says "SDM expects ...; accepted as a known
 * deviation" and a line "DEVIATION: <name>: <what>" follows; with -append
 * strict=1 it is a FAIL instead. Where the alternative means the exception
 * never came (or another one did), the case stops at that line. Accepted:
 *   DB.icebp.vector/rip    QEMU 7.2 TCG: ICEBP is #UD at the instruction
 *   XM.divss_by_zero.count QEMU 7.2 TCG never raises #XM (MXCSR.ZE is set)
 *   AC.ring3_unaligned_load.vector  QEMU 7.2 TCG never raises #AC: the load
 *       completes and the ud2 after it raises #UD
 *   PF.reserved_bit.error  SDM 0x9 (P|RSVD); QEMU 7.2 TCG reports 0x8
 *   64-bit only:
 *   SS.non_canonical_stack.vector  SDM #SS(0) for an RBP-based
 *       non-canonical access; QEMU 7.2 TCG raises #GP(0)
 *   NP.int_gate_not_present.error, GP.int_dpl0_gate_from_ring3.error
 *       SDM vector*8+2 (IDT bit, index = vector); QEMU 7.2 TCG puts the
 *       16-byte gate's offset there, vector*16+2
 *
 * The sequences:
 *   #DE  div by a zero register                       fault
 *   #DB  ICEBP (0xF1): trap, RIP after it; TF single-step: trap after the
 *        instruction following POPF, DR6.BS=1
 *   #BP  int3: trap, RIP after it
 *   #OF  INTO with OF=1 (32-bit only)                  trap
 *   #BR  BOUND with an index above the bound (32-bit only) fault
 *   #UD  ud2                                           fault
 *   #NM  CR0.TS=1 then FNOP, and then XORPS (CR4.OSFXSR=1) fault
 *   #DF  the #GP gate marked not present, then a #GP (a bad DS selector):
 *        delivering #GP raises #NP, contributory on contributory is #DF(0)
 *        (SDM Table 6-5). Only vector and error are checked: the saved
 *        CS:RIP of #DF is undefined.
 *   #TS  32-bit: IRET with EFLAGS.NT=1 and a TSS back link that selects a
 *        data descriptor (SEL 0x58): #TS(0x58), RIP = the IRET.
 *        64-bit: TR loaded from a second TSS descriptor (0x58) with limit
 *        0x23, then INT 0x42 through a gate with IST=1: the IST1 slot
 *        (0x24..0x2B) is beyond the limit: #TS(0x58), RIP = the INT.
 *   #NP  MOV to DS of a not-present data descriptor (0x68): #NP(0x68); INT
 *        0x41 through a not-present gate: #NP(0x41*8+2 = 0x20A)
 *   #SS  MOV to SS of a not-present descriptor (0x70): #SS(0x70); 64-bit:
 *        a non-canonical RBP-based access: #SS(0)
 *   #GP  MOV to DS of a selector past the GDT limit (0x1000): #GP(0x1000);
 *        64-bit: a non-canonical data access: #GP(0); from ring 3, INT 0x41
 *        through a DPL-0 gate: #GP(0x20A) with CS/SS RPL 3 and the user
 *        stack in the frame
 *   #PF  4 KiB pages at 0x4000_0000 (32-bit: paging with 4 MiB PSE pages
 *        identity below 128 MiB, and one page table) or 0x80_0000_0000
 *        (64-bit), CR0.WP=1: not-present read 0x0 and write 0x2, supervisor
 *        write to a read-only page 0x3, user read of a supervisor page 0x5,
 *        user write to a read-only page 0x7; 64-bit with EFER.NXE:
 *        supervisor fetch from an NX page 0x11, user fetch 0x15, a PTE with
 *        reserved bit 51 set 0x9; CR2 each time
 *   #MF  CR0.NE=1, FLDCW with ZM unmasked, 1/0 with FDIVP, then FWAIT:
 *        fault at the FWAIT
 *   #AC  CR0.AM=1, EFLAGS.AC=1, ring 3, a 4-byte load from an odd address:
 *        #AC(0)
 *   #XM  CR4.OSFXSR|OSXMMEXCPT, MXCSR with ZM unmasked, DIVSS by zero:
 *        fault at the DIVSS
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

/* The one table of the exceptions (SDM Vol. 3A Table 6-1): vector ->
 * mnemonic, name, whether the CPU pushes an error code, and the class. */
static const struct {
	const char *mn, *name;
	bool error_code;
	const char *kind;
} exc[32] = {
	[0] = { "DE", "divide error", false, "fault" },
	[1] = { "DB", "debug", false, "fault/trap" },
	[2] = { "NMI", "non-maskable interrupt", false, "interrupt" },
	[3] = { "BP", "breakpoint", false, "trap" },
	[4] = { "OF", "overflow", false, "trap" },
	[5] = { "BR", "BOUND range exceeded", false, "fault" },
	[6] = { "UD", "invalid opcode", false, "fault" },
	[7] = { "NM", "device not available", false, "fault" },
	[8] = { "DF", "double fault", true, "abort" },
	[9] = { "CSO", "coprocessor segment overrun", false, "fault" },
	[10] = { "TS", "invalid TSS", true, "fault" },
	[11] = { "NP", "segment not present", true, "fault" },
	[12] = { "SS", "stack-segment fault", true, "fault" },
	[13] = { "GP", "general protection", true, "fault" },
	[14] = { "PF", "page fault", true, "fault" },
	[15] = { "R15", "reserved", false, "-" },
	[16] = { "MF", "x87 floating-point error", false, "fault" },
	[17] = { "AC", "alignment check", true, "fault" },
	[18] = { "MC", "machine check", false, "abort" },
	[19] = { "XM", "SIMD floating-point exception", false, "fault" },
	[20] = { "VE", "virtualization exception", false, "fault" },
	[21] = { "CP", "control protection", true, "fault" },
};

#define V_DE 0
#define V_DB 1
#define V_BP 3
#define V_OF 4
#define V_BR 5
#define V_UD 6
#define V_NM 7
#define V_DF 8
#define V_TS 10
#define V_NP 11
#define V_SS 12
#define V_GP 13
#define V_PF 14
#define V_MF 16
#define V_AC 17
#define V_XM 19

#define VEC_NP_GATE	0x41	/* INT 0x41: gate not present / DPL 0 */
#define VEC_IST_GATE	0x42	/* INT 0x42: gate with IST 1 (64-bit #TS) */
#define SEL_TSS2	SEL_SPARE	/* 0x58: 64-bit: limit-0x23 TSS; 32-bit: data */
#define SEL_NP_DATA	0x68
#define SEL_NP_STACK	0x70
#define SEL_BEYOND	0x1000

#define FL_TF	0x100ul
#define FL_NT	0x4000ul
#define FL_RF	0x10000ul
#define FL_AC	0x40000ul

/* What the handler saw. */
static struct {
	unsigned count;
	uintptr_t vector, error, ip, cs, flags, sp, ss, cr2, dr6;
	uint32_t mxcsr;
	bool has_sp;
} rec;

/* Set by each case's asm just before the instruction under test. */
uintptr_t fault_ip, resume_ip, sp_at, flags_at;
uintptr_t saved_bp;

#ifdef __x86_64__
#define PTRSFX "q"
#define SPREG "rsp"
#define SAVE_IPS "lea 1f(%%rip), %%rax\n\tmov %%rax, fault_ip(%%rip)\n\t" \
		 "lea 2f(%%rip), %%rax\n\tmov %%rax, resume_ip(%%rip)\n\t" \
		 "mov %%rsp, sp_at(%%rip)\n\t"
#define SAVE_FLAGS "pushf\n\tpop flags_at(%%rip)\n\t"
#define AX "rax"
#else
#define PTRSFX "l"
#define SPREG "esp"
#define SAVE_IPS "movl $1f, fault_ip\n\tmovl $2f, resume_ip\n\tmov %%esp, sp_at\n\t"
#define SAVE_FLAGS "pushf\n\tpop flags_at\n\t"
#define AX "eax"
#endif

/* setup, then flags captured, then "1:" insn "2:". Clobbers the scratch
 * registers. */
#define RUN(setup, insn, ...)						\
	do {								\
		rec.count = 0;						\
		__asm__ volatile(SAVE_IPS setup "\n\t" SAVE_FLAGS	\
				 "1:\t" insn "\n2:\n"			\
				 : : __VA_ARGS__			\
				 : "eax", "ecx", "edx", "memory", "cc");	\
	} while (0)

static uintptr_t read_cs(void)
{
	uint16_t v;

	__asm__ volatile("mov %%cs, %0" : "=r"(v));
	return v;
}

#ifdef __x86_64__
static uintptr_t read_ss(void)
{
	uint16_t v;

	__asm__ volatile("mov %%ss, %0" : "=r"(v));
	return v;
}
#endif

static void handler(struct irq_frame *f)
{
	rec.count++;
	rec.vector = f->vector;
	rec.error = f->error;
	rec.ip = f->ip;
	rec.cs = f->cs;
	rec.flags = f->flags;
	rec.cr2 = read_cr2();
#ifdef __x86_64__
	rec.sp = f->sp;
	rec.ss = f->ss;
	rec.has_sp = true;
	__asm__ volatile("mov %%dr6, %0" : "=r"(rec.dr6));
	__asm__ volatile("mov %0, %%dr6" : : "r"(0xFFFF0FF0ul));
#else
	rec.has_sp = (f->cs & 3) != 0;
	if (rec.has_sp) {
		rec.sp = f->sp;
		rec.ss = f->ss;
	}
	__asm__ volatile("mov %%dr6, %0" : "=r"(rec.dr6));
	__asm__ volatile("mov %0, %%dr6" : : "r"(0xFFFF0FF0ul));
#endif
	if (f->vector == V_MF)
		__asm__ volatile("fnclex");
	if (f->vector == V_XM) {
		uint32_t mx = 0x1F80;

		__asm__ volatile("stmxcsr %0" : "=m"(rec.mxcsr));
		__asm__ volatile("ldmxcsr %0" : : "m"(mx));
	}
	if (f->vector == V_DF)
		idt_set_gate(V_GP, true, 0, 0);	/* undo the #DF set-up */
	if (f->cs & 3)
		user_exit(1);
	/* Resume after the instruction, with TF and NT cleared. */
	f->ip = resume_ip;
	f->flags &= ~(FL_TF | FL_NT);
	if (f->vector == V_DF) {	/* #DF's saved frame is undefined */
		f->cs = read_cs();
		f->flags = flags_at & ~(FL_TF | FL_NT);
#ifdef __x86_64__
		f->sp = sp_at;
		f->ss = read_ss();
#endif
	}
}

static const char *cat(char *dst, const char *a, const char *b, const char *c)
{
	char *q = dst;

	while (*a && q < dst + 40)
		*q++ = *a++;
	*q++ = '.';
	while (*b && q < dst + 90)
		*q++ = *b++;
	*q++ = '.';
	while (*c && q < dst + 110)
		*q++ = *c++;
	*q = 0;
	return dst;
}

#define F_TRAP		(1u << 0)	/* rip = next instruction */
#define F_NO_FRAME	(1u << 1)	/* #DF: vector and error only */
#define F_USER		(1u << 2)	/* taken in ring 3 (values in u_*) */
#define F_CR2		(1u << 3)

/* The ring-3 side: what user_call was given. */
static uintptr_t u_ip, u_sp, u_flags;

/*
 * A documented alternative result (report.h's DEVIATION convention): up to
 * three fields with their alternative values and one explanation. whole: the
 * first field's alternative means the exception never came (or another one
 * did), so the case's other fields are not checked then.
 */
struct dev {
	const char *what;
	bool whole;
	struct {
		const char *field;
		uintptr_t alt;
	} f[3];
};

static bool dev_alt(const struct dev *d, const char *field, uintptr_t *alt)
{
	for (unsigned i = 0; d && i < 3 && d->f[i].field; i++)
		if (!strcmp(d->f[i].field, field)) {
			*alt = d->f[i].alt;
			return true;
		}
	return false;
}

static void chk(const struct dev *d, const char *mn, const char *cname,
		const char *field, uintptr_t got, uintptr_t want)
{
	char n[128];
	uintptr_t alt;

	cat(n, mn, cname, field);
	if (dev_alt(d, field, &alt))
		report_eq_dev(n, got, want, alt, d->what);
	else
		report_eq(n, got, want);
}

/* Checks rec against one expected exception. */
static void expect(const char *cname, unsigned vec, uintptr_t error,
		   unsigned flags, uintptr_t cr2, const struct dev *d)
{
	const char *mn = exc[vec].mn;
	bool user = flags & F_USER;
	uintptr_t ip = user ? u_ip : (flags & F_TRAP) ? resume_ip : fault_ip;
	unsigned before = report_deviation_count();

	printf("-- #%s (%s, vector %u, %s%s): %s\n", mn, exc[vec].name, vec,
	       exc[vec].kind, exc[vec].error_code ? ", error code" : "", cname);

	chk(d, mn, cname, "count", rec.count, 1);
	if (d && d->whole && report_deviation_count() != before)
		return;
	chk(d, mn, cname, "vector", rec.vector, vec);
	if (d && d->whole && report_deviation_count() != before)
		return;
	if (exc[vec].error_code)
		chk(d, mn, cname, "error", rec.error, error);
	if (!(flags & F_NO_FRAME)) {
		chk(d, mn, cname, "rip", rec.ip, ip);
		chk(d, mn, cname, "cs", rec.cs, user ? (SEL_UCODE | 3) : read_cs());
		chk(d, mn, cname, "rflags", rec.flags & ~FL_RF,
		    (user ? u_flags : flags_at) & ~FL_RF);
#ifdef __x86_64__
		chk(d, mn, cname, "ss", rec.ss, user ? (SEL_UDATA | 3) : read_ss());
		chk(d, mn, cname, "rsp", rec.sp, user ? u_sp : sp_at);
#else
		if (user) {	/* pushed on the privilege change only */
			chk(d, mn, cname, "ss", rec.ss, SEL_UDATA | 3);
			chk(d, mn, cname, "esp", rec.sp, u_sp);
		}
#endif
	}
	if (flags & F_CR2)
		chk(d, mn, cname, "cr2", rec.cr2, cr2);
}

static void ok(const char *cname, unsigned vec, uintptr_t error, unsigned flags)
{
	expect(cname, vec, error, flags, 0, NULL);
}

#ifdef __x86_64__
/* QEMU 7.2 (do_interrupt64) puts the IDT byte offset of a 16-byte gate in
 * the error code: vector * 16 + 2, where the SDM's index is the vector. */
#define IDT_ERR_ALT(v) ((v) * 16 + 2)
#define IDT_ERR_WHAT "QEMU 7.2 TCG reports vector*16+2 (the gate's byte offset) " \
	"for an IDT-referencing error code in 64-bit mode; SDM: vector*8+2"
#else
#define IDT_ERR_ALT(v) ((v) * 8 + 2)
#define IDT_ERR_WHAT ""
#endif

/* ---- ring 3 ---- */

static uint8_t user_stack[4096] __attribute__((aligned(16)));

/* Ring-3 snippets: each is one instruction at its own label, then a ud2 that
 * is never reached. Argument in RDI (64-bit) / EAX (32-bit). */
extern const char u_int41[], u_load[], u_store[], u_jump[];
#ifdef __x86_64__
__asm__(".text\n"
	"u_int41: int $0x41\n\tud2\n"
	"u_load: mov (%rdi), %eax\n\tud2\n"
	"u_store: movl $1, (%rdi)\n\tud2\n"
	"u_jump: jmp *%rdi\n\tud2\n");
#else
__asm__(".text\n"
	"u_int41: int $0x41\n\tud2\n"
	"u_load: mov (%eax), %ecx\n\tud2\n"
	"u_store: movl $1, (%eax)\n\tud2\n"
	"u_jump: jmp *%eax\n\tud2\n");
#endif

static void run_user(const char *ip, uintptr_t arg, uintptr_t flags)
{
	u_ip = (uintptr_t)ip;
	u_sp = (uintptr_t)user_stack + sizeof(user_stack);
	u_flags = flags;
	rec.count = 0;
	user_call(u_ip, u_sp, arg, flags);
}

/* ---- the cases ---- */

static void test_de_db_bp_ud(void)
{
	RUN("xor %%ecx, %%ecx\n\tmov $1, %%eax\n\txor %%edx, %%edx\n\tstc",
	    "div %%ecx", "i"(0));
	ok("div_by_zero", V_DE, 0, 0);

	RUN("", ".byte 0xf1", "i"(0));
	{
		struct dev d = { "QEMU 7.2 TCG decodes ICEBP (0xF1) as an invalid "
				 "opcode: #UD at it, not a #DB trap after it",
				 false, { { "vector", V_UD }, { "rip", fault_ip } } };
		expect("icebp", V_DB, 0, F_TRAP, 0, &d);
	}

	RUN("", "int3", "i"(0));
	ok("int3", V_BP, 0, F_TRAP);

	/* TF set by POPF: the trap follows the NOP after it. */
	rec.count = 0;
	__asm__ volatile(SAVE_IPS SAVE_FLAGS
			 "pushf\n\tor" PTRSFX " $0x100, (%%" SPREG ")\n\tpopf\n"
			 "1:\tnop\n2:\n" : : : "eax", "memory", "cc");
	flags_at |= FL_TF;
	ok("tf_single_step", V_DB, 0, F_TRAP);
	report_eq("DB.tf_single_step.dr6_bs", rec.dr6 & 0x4000, 0x4000);

	RUN("", "ud2", "i"(0));
	ok("ud2", V_UD, 0, 0);
}

#ifndef __x86_64__
static int32_t bounds[2] = { 0, 10 };

static void test_of_br(void)
{
	RUN("mov $0x7f, %%al\n\tadd $1, %%al", "into", "i"(0));
	ok("into", V_OF, 0, F_TRAP);
	RUN("mov $20, %%eax", "bound %%eax, %0", "m"(bounds));
	ok("bound", V_BR, 0, 0);
}
#endif

static void test_nm(void)
{
	write_cr0(read_cr0() | (1ul << 3));	/* TS */
	RUN("", "fnop", "i"(0));
	ok("x87_with_ts", V_NM, 0, 0);
	RUN("", "xorps %%xmm0, %%xmm0", "i"(0));
	ok("sse_with_ts", V_NM, 0, 0);
	__asm__ volatile("clts");
}

static void test_mf(void)
{
	uint16_t cw = 0x037B;	/* default 0x37F with ZM (bit 2) clear */

	RUN("fninit\n\tfldcw %0\n\tfldz\n\tfld1\n\tfdiv %%st(1), %%st", "fwait", "m"(cw));
	ok("fwait_after_zero_divide", V_MF, 0, 0);
	__asm__ volatile("fninit");
}

static void test_xm(void)
{
	uint32_t mx = 0x1D80;		/* 0x1F80 with ZM (bit 9) clear */
	uint32_t one = 0x3F800000;	/* 1.0f */

	RUN("ldmxcsr %0\n\txorps %%xmm1, %%xmm1\n\tmovss %1, %%xmm0",
	    "divss %%xmm1, %%xmm0", "m"(mx), "m"(one));
	{
		struct dev d = { "QEMU 7.2 TCG never raises #XM: DIVSS completed "
				 "with MXCSR.ZE set", true, { { "count", 0 } } };
		uint32_t now;

		__asm__ volatile("stmxcsr %0" : "=m"(now));
		if (!rec.count)
			rec.mxcsr = now;
		expect("divss_by_zero", V_XM, 0, 0, 0, &d);
		report_eq("XM.divss_by_zero.mxcsr_ze", rec.mxcsr & 0x4, 0x4);
		mx = 0x1F80;
		__asm__ volatile("ldmxcsr %0" : : "m"(mx));
	}
}

static void test_df(void)
{
	idt_set_gate(V_GP, false, 0, 0);	/* the handler restores it */
	RUN("mov $0x1000, %%eax", "mov %%eax, %%ds", "i"(0));
	ok("gp_through_not_present_gate", V_DF, 0, F_NO_FRAME);
}

static void test_ts(void)
{
#ifdef __x86_64__
	uintptr_t t = (uintptr_t)&tss;

	gdt_set(SEL_TSS2, desc_make((uint32_t)t, 0x23, 0x89, 0));
	gdt_set(SEL_TSS2 + 8, (uint64_t)t >> 32);
	__asm__ volatile("ltr %w0" : : "r"((uint16_t)SEL_TSS2));
	idt_set_gate(VEC_IST_GATE, true, 0, 1);
	RUN("", "int $0x42", "i"(0));
	/* Back to the real TSS: mark it available again, then LTR. */
	gdt_set(SEL_TSS, desc_make((uint32_t)t, sizeof(tss) - 1, 0x89, 0));
	__asm__ volatile("ltr %w0" : : "r"((uint16_t)SEL_TSS));
	ok("ist_slot_beyond_tss_limit", V_TS, SEL_TSS2, 0);
#else
	gdt_set(SEL_TSS2, desc_make(0, 0xFFFFF, 0x92, 0xC));	/* a data segment */
	tss.link = SEL_TSS2;
	RUN("pushf\n\torl $0x4000, (%%esp)\n\tpopf", "iret", "i"(0));
	tss.link = 0;
	ok("iret_nt_link_not_a_tss", V_TS, SEL_TSS2, 0);
#endif
}

static void test_np_ss_gp(void)
{
	gdt_set(SEL_NP_DATA, desc_make(0, 0xFFFFF, 0x12, 0xC));	/* P=0 */
	gdt_set(SEL_NP_STACK, desc_make(0, 0xFFFFF, 0x12, 0xC));
	RUN("mov %0, %%eax", "mov %%eax, %%ds", "i"(SEL_NP_DATA));
	ok("ds_not_present", V_NP, SEL_NP_DATA, 0);
	idt_set_gate(VEC_NP_GATE, false, 0, 0);
	RUN("", "int $0x41", "i"(0));
	{
		struct dev d = { IDT_ERR_WHAT, false,
				 { { "error", IDT_ERR_ALT(VEC_NP_GATE) } } };
		expect("int_gate_not_present", V_NP, VEC_NP_GATE * 8 + 2, 0, 0, &d);
	}
	idt_set_gate(VEC_NP_GATE, true, 0, 0);

	RUN("mov %0, %%eax", "mov %%eax, %%ss", "i"(SEL_NP_STACK));
	ok("ss_not_present", V_SS, SEL_NP_STACK, 0);
	RUN("mov %0, %%eax", "mov %%eax, %%ds", "i"(SEL_BEYOND));
	ok("selector_beyond_gdt_limit", V_GP, SEL_BEYOND, 0);
#ifdef __x86_64__
	RUN("mov %%rbp, saved_bp(%%rip)\n\tmovabs $0x8000000000000000, %%rbp",
	    "mov (%%rbp), %%eax\n2:\tmov saved_bp(%%rip), %%rbp\n3:", "i"(0));
	/* resume_ip (label 2) restores RBP; the instruction is at 1. */
	{
		struct dev d = { "QEMU 7.2 TCG raises #GP(0), not #SS(0), for a "
				 "non-canonical SS-based (RBP) address", false,
				 { { "vector", V_GP } } };
		expect("non_canonical_stack", V_SS, 0, 0, 0, &d);
	}
	RUN("movabs $0x8000000000000000, %%rax", "mov (%%rax), %%eax", "i"(0));
	ok("non_canonical_data", V_GP, 0, 0);
#endif
	/* INT 0x41 from ring 3 through a DPL-0 gate. */
	run_user(u_int41, 0, 0x2);
	{
		struct dev d = { IDT_ERR_WHAT, false,
				 { { "error", IDT_ERR_ALT(VEC_NP_GATE) } } };
		expect("int_dpl0_gate_from_ring3", V_GP, VEC_NP_GATE * 8 + 2,
		       F_USER, 0, &d);
	}
}

static void test_ac(void)
{
	static uint32_t buf[4];

	write_cr0(read_cr0() | CR0_AM);
	run_user(u_load, (uintptr_t)buf + 1, 0x2 | FL_AC);
	{
		/* u_load is one 2-byte load then ud2: a #UD there means the
		 * load completed. */
		struct dev d = { "QEMU 7.2 TCG never raises #AC: the unaligned "
				 "ring-3 load completed (the ud2 after it raised "
				 "#UD)", true, { { "vector", V_UD } } };

		expect("ring3_unaligned_load", V_AC, 0, F_USER, 0,
		       rec.ip == u_ip + 2 ? &d : NULL);
	}
	write_cr0(read_cr0() & ~CR0_AM);
}

/* ---- paging for #PF ---- */

#ifdef __x86_64__
#define TEST_VA 0x8000000000ull
typedef uint64_t pte_t;
static uint8_t pool[8][4096] __attribute__((aligned(4096)));
static unsigned pool_used;

static void *pool_page(void)
{
	return pool_used < 8 ? memset(pool[pool_used++], 0, 4096) : NULL;
}

static pte_t *tpte(unsigned i)
{
	return pt_walk(read_cr3(), TEST_VA + i * PAGE_SIZE, 1, pool_page, PTE_US);
}

static void paging_init(void)
{
	uintptr_t here = (uintptr_t)&paging_init & ~0x1FFFFFul;

	/* The image's 2 MiB pages become user pages too (ring-3 code, stack). */
	for (int l = 4; l >= 2; l--)
		for (uintptr_t a = here; a < here + 0x400000; a += 0x200000)
			*pt_walk(read_cr3(), a, l, NULL, 0) |= PTE_US;
	write_cr3(read_cr3());
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
}
#else
#define TEST_VA 0x40000000u
typedef uint32_t pte_t;
static uint32_t pd32[1024] __attribute__((aligned(4096)));
static uint32_t pt32[1024] __attribute__((aligned(4096)));

static pte_t *tpte(unsigned i)
{
	return &pt32[i];
}

static void paging_init(void)
{
	/* 4 MiB pages (CR4.PSE) identity below 128 MiB, user-accessible. */
	for (unsigned i = 0; i < 32; i++)
		pd32[i] = (i << 22) | PTE_P | PTE_RW | PTE_US | PTE_PS;
	pd32[TEST_VA >> 22] = (uintptr_t)pt32 | PTE_P | PTE_RW | PTE_US;
	write_cr4(read_cr4() | (1ul << 4));
	write_cr3((uintptr_t)pd32);
	write_cr0(read_cr0() | (1ul << 31));
}
#endif

static uint8_t frame[4096] __attribute__((aligned(4096)));

static void test_pf(void)
{
	uintptr_t va[8];

	write_cr0(read_cr0() | CR0_WP);
	for (unsigned i = 0; i < 8; i++)
		va[i] = TEST_VA + i * PAGE_SIZE;
	memset(frame, 0xC3, sizeof(frame));	/* ret, never executed */
	*tpte(0) = 0;
	*tpte(1) = (uintptr_t)frame | PTE_P;
	*tpte(2) = (uintptr_t)frame | PTE_P | PTE_RW;
	*tpte(3) = (uintptr_t)frame | PTE_P | PTE_US;
#ifdef __x86_64__
	*tpte(4) = (uintptr_t)frame | PTE_P | PTE_RW | PTE_NX;
	*tpte(5) = (uintptr_t)frame | PTE_P | PTE_US | PTE_NX;
	*tpte(6) = (uintptr_t)frame | PTE_P | PTE_RW | (1ull << 51);
#endif
	write_cr3(read_cr3());

	RUN("mov %0, %%" AX, "mov (%%" AX "), %%ecx", "r"(va[0] + 0x10));
	expect("not_present_read", V_PF, 0x0, F_CR2, va[0] + 0x10, NULL);
	RUN("mov %0, %%" AX, "movl $1, (%%" AX ")", "r"(va[0] + 0x20));
	expect("not_present_write", V_PF, 0x2, F_CR2, va[0] + 0x20, NULL);
	RUN("mov %0, %%" AX, "movl $1, (%%" AX ")", "r"(va[1] + 0x30));
	expect("supervisor_write_read_only", V_PF, 0x3, F_CR2, va[1] + 0x30,
	       NULL);
	run_user(u_load, va[2] + 0x40, 0x2);
	expect("user_read_supervisor", V_PF, 0x5, F_CR2 | F_USER, va[2] + 0x40,
	       NULL);
	run_user(u_store, va[3] + 0x50, 0x2);
	expect("user_write_read_only", V_PF, 0x7, F_CR2 | F_USER, va[3] + 0x50,
	       NULL);
#ifdef __x86_64__
	/* A fetch fault is reported at the target: RIP = CR2 = va. */
	RUN("mov %0, %%rax", "jmp *%%rax", "r"(va[4] + 0x60));
	fault_ip = va[4] + 0x60;
	expect("supervisor_fetch_nx", V_PF, 0x11, F_CR2, va[4] + 0x60, NULL);
	run_user(u_jump, va[5] + 0x70, 0x2);
	u_ip = va[5] + 0x70;
	expect("user_fetch_nx", V_PF, 0x15, F_CR2 | F_USER, va[5] + 0x70,
	       NULL);
	RUN("mov %0, %%rax", "mov (%%rax), %%ecx", "r"(va[6] + 0x80));
	{
		struct dev d = { "QEMU 7.2 TCG leaves P clear in the error code "
				 "of a reserved-bit #PF (0x8; SDM: P|RSVD, 0x9)",
				 false, { { "error", 0x8 } } };
		expect("reserved_bit", V_PF, 0x9, F_CR2, va[6] + 0x80, &d);
	}
#endif
}

int main(const struct multiboot_info *mbi)
{
	(void)mbi;
	report_strict_from_cmdline();
	printf("exceptions: %u-bit\n", (unsigned)sizeof(void *) * 8);
	desc_init();
	idt_init();
	paging_init();
	for (unsigned v = 0; v < 32; v++)
		if (v != 2)
			idt_set_handler(v, handler);
	/* x87 and SSE usable, with native x87 errors (NE) and #XM. */
	write_cr0((read_cr0() & ~(1ul << 2)) | (1ul << 1) | (1ul << 5));
	write_cr4(read_cr4() | (1ul << 9) | (1ul << 10));
	__asm__ volatile("fninit");

	test_de_db_bp_ud();
#ifndef __x86_64__
	test_of_br();
#endif
	test_nm();
	test_mf();
	test_xm();
	test_df();
	test_ts();
	test_np_ss_gp();
	test_ac();
	test_pf();
	return report_summary();
}
