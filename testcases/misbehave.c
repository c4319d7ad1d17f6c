// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest that goes wrong on purpose, so the emulator's diagnoses can be
 * tested: the run must end with a clear one-line error and a non-zero
 * status, never a crash of the emulator or a hang.
 *
 * cmdline: mode=halt | spin | ud | divide | unmapped | msr | exit256
 *                | init_self | ipi_nobody | reserved_delivery | no_idt_interrupt
 *                | mwait_no_monitor | mwait_bad_hint | monitor_mmio
 *                | monitor_absent | mwait_forever | tsc_deadline_far
 *                | tsc_deadline_absent | flag | peer_flag | two_blocks
 *                | call_loop | same_branch | pause_forever | sti_spin
 *                | sti_count | count_forever | all_stuck | ends_late
 *                | rtc_wait | tsc_wait | pit_halt | pit_spin | pit_no_idt
 *   halt      cli; hlt: nothing can ever wake the CPU
 *   spin      an endless loop: only the time limit ends it
 *   flag      cli, then a wait for a flag nobody sets (a loop that only
 *             reads memory: topolab proves it endless at once)
 *   peer_flag (-smp 2) CPU 1 halts with interrupts off for ever, and CPU 0
 *             waits with interrupts off for a flag only CPU 1 could set
 * Stuck loops of other shapes (issue 27: each must be diagnosed at once as a
 * hang, never run to the time limit; QEMU 7.2 runs them for ever):
 *   two_blocks    cli; 1: nop; jmp 2f; 2: jmp 1b (a loop over two blocks)
 *   call_loop     cli; 1: call f; jmp 1b with f: ret (stores its return
 *                 address, the same one to the same place, every turn)
 *   same_branch   cli; a loop through a conditional that never changes
 *   pause_forever cli; while (!never_set) pause;
 *   sti_spin      sti, no interrupt source armed (no APIC timer, no other
 *                 CPU), then the two-block loop
 *   sti_count     the same with a register that counts up every turn
 *   count_forever cli; 1: inc eax; jmp 1b (a loop that has no way out)
 *   all_stuck     (-smp 2) CPU 1 loops in the two blocks with interrupts
 *                 off; CPU 0 waits with interrupts off for a flag nobody
 *                 sets
 * And ones that are not stuck and must not be called so (each ends, then
 * says it did not misbehave):
 *   ends_late     cli; a register loop that leaves after 2^26 turns
 *   rtc_wait      cli; polls the CMOS RTC's seconds until they change (a
 *                 device that changes with time)
 *   tsc_wait      cli; rdtsc without PAUSE until 10^7 TSC ticks
 *                 passed (the registers it keeps do not move)
 *   ud        ud2, with no IDT to handle #UD
 *   divide    a division by zero, with no IDT to handle #DE
 *   unmapped  a read far beyond RAM
 *   msr       rdmsr of an MSR that does not exist
 *   exit256   writes 256 to isa-debug-exit: a value no exit status carries
 * The local APIC ones (xAPIC MMIO at IA32_APIC_BASE, software-enabled first;
 * SDM Vol. 3A 10.6.1 for the ICR):
 *   init_self          an INIT IPI to the CPU's own APIC ID: the CPU resets
 *                      into wait-for-SIPI with nobody left to start it
 *                      (topolab: a "guest deadlock" diagnosis, non-zero exit)
 *   ipi_nobody         a fixed IPI (vector 0x40) to physical APIC ID 0x77,
 *                      which no CPU has; prints ESR and exits 0 (the
 *                      emulator drops and counts it as undeliverable)
 *   reserved_delivery  an ICR write with delivery mode 011b (reserved) to
 *                      itself (topolab: a bad-input diagnosis)
 *   no_idt_interrupt   an empty IDT (limit 0), sti, then a self IPI: the
 *                      interrupt, and the #GP and #DF that follow, have no
 *                      usable gate (a triple fault; topolab: a crash
 *                      diagnosis)
 * MONITOR/MWAIT (SDM Vol. 2B; run with -cpu MODEL,+monitor except for
 * monitor_absent):
 *   mwait_no_monitor   cli; MWAIT (EAX=0, ECX=0) with no MONITOR ever armed
 *                      (hardware: a no-op; topolab: a bad-input diagnosis)
 *   mwait_bad_hint     MONITOR on a RAM line, then MWAIT with EAX=0x20 (C3),
 *                      a hint CPUID.5:EDX does not enumerate (topolab: a
 *                      bad-input diagnosis)
 *   monitor_mmio       MONITOR on 0xFEE00000, the local APIC page (topolab:
 *                      a bad-input diagnosis)
 *   monitor_absent     MONITOR on a CPU model without CPUID.1:ECX[3] (e.g.
 *                      plain qemu64): #UD, with no IDT to handle it
 *   mwait_forever      cli; MONITOR; MWAIT (ECX=0) in a loop: no store, and
 *                      no interrupt may break it: the vCPU sleeps for ever
 * The PIT's IRQ 0 at its fastest (channel 0, mode 2, count 2: 596.6 kHz)
 * through the I/O APIC's pin 2, unmasked, to vector 0x30 of APIC 0:
 *   pit_halt    then cli; hlt: its interrupts wait in the IRR, nothing can
 *               take them (topolab: ends at once, halted with interrupts
 *               off, not after 72 million edges)
 *   pit_spin    then cli; jmp .: the same, for a loop
 *   pit_no_idt  then sti with no IDT: the interrupt has no usable gate
 * The APIC timer (run with -cpu MODEL,+tsc-deadline --cost freq_mhz=500):
 *   tsc_deadline_far   LVT timer in TSC-deadline mode, IA32_TSC_DEADLINE =
 *                      0x80000000000003E8 (past 2^64 ns at a 500 MHz TSC),
 *                      sti; hlt: the timer never comes, so the run must end
 *                      at the time limit (topolab once spun here for ever,
 *                      issue 14 F1)
 *   tsc_deadline_absent  wrmsr IA32_TSC_DEADLINE on a model without
 *                      CPUID.1:ECX[24] (e.g. plain qemu64): #GP (SDM), with
 *                      no IDT to handle it (issue 14 F5)
 */
#include "lib/cmdline.h"
#include "lib/io.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

/* Bare xAPIC access: this image links no IDT/APIC library code. */
#define APIC_BASE_ADDR_MASK	0xFFFFFF000ull
#define APIC_REG_ID		0x020
#define APIC_REG_SVR		0x0F0
#define APIC_REG_ESR		0x280
#define APIC_REG_ICR_LO		0x300
#define APIC_REG_ICR_HI		0x310
#define APIC_REG_LVT_TIMER	0x320
#define LVT_TSC_DEADLINE	(2u << 17)
#define APIC_DEFAULT_BASE	0xFEE00000u

/* The PIT's channel 0 at its fastest rate, routed by the I/O APIC's pin 2
 * (ISA IRQ 0 by the MADT's source override on QEMU's pc and topolab). */
#define IOAPIC_BASE		0xFEC00000u
#define PIT_VECTOR		0x30

static void pit_storm(void)
{
	volatile uint32_t *ioapic = (volatile uint32_t *)(uintptr_t)IOAPIC_BASE;

	outb(0x43, 0x34);	/* channel 0, LSB then MSB, mode 2 */
	outb(0x40, 2);
	outb(0x40, 0);
	ioapic[0] = 0x10 + 2 * 2 + 1;	/* pin 2's entry, high half: APIC 0 */
	ioapic[4] = 0;
	ioapic[0] = 0x10 + 2 * 2;	/* low half: unmasked, edge, fixed */
	ioapic[4] = PIT_VECTOR;
}

/* A RAM line for MONITOR to arm. */
static volatile uint32_t monitor_line[16] __attribute__((aligned(64)));

/* MONITOR DS:eAX, ECX = 0 (no extensions), EDX = 0 (no hints). */
static void monitor(uintptr_t addr)
{
	__asm__ volatile("monitor" : : "a"(addr), "c"(0), "d"(0) : "memory");
}

static void mwait(uint32_t hint)
{
	__asm__ volatile("mwait" : : "a"(hint), "c"(0) : "memory");
}

static volatile uint32_t never_set;

/* The loops of the stuck modes, in assembly so that their shape is exact. */
static void two_blocks(void)
{
	__asm__ volatile("1: nop; jmp 2f; 2: jmp 1b");
}

static void call_loop(void)
{
	__asm__ volatile("jmp 1f\n"
			 "2: ret\n"
			 "1: call 2b\n"
			 "jmp 1b" ::: "memory");
}

static void same_branch(void)
{
	/* ECX is 5 every turn: the branch to 2 is always taken. */
	__asm__ volatile("mov $5, %%ecx\n"
			 "1: cmp $5, %%ecx\n"
			 "je 2f\n"
			 "jmp 3f\n"
			 "2: jmp 1b\n"
			 "3:" ::: "ecx", "cc");
}

static void count_forever(void)
{
	__asm__ volatile("1: inc %%eax; jmp 1b" ::: "eax", "cc");
}

/* Leaves after 2^26 turns: its registers move every turn, and it ends. */
static void ends_late(void)
{
	__asm__ volatile("mov $0xFC000000, %%eax\n"
			 "1: add $1, %%eax\n"
			 "jnc 2f\n"
			 "jmp 3f\n"
			 "2: jmp 1b\n"
			 "3:" ::: "eax", "cc");
}

static void stuck_with_interrupts_off(void *arg)
{
	(void)arg;
	__asm__ volatile("cli");
	two_blocks();
}

static void halt_for_ever(void *arg);

/*
 * (-smp 2) CPU 1 runs fn; CPU 0 waits with interrupts off for a flag nobody
 * sets. False, having said why, without a second CPU.
 */
static bool flag_wait_beside_cpu1(const char *mode, void (*fn)(void *))
{
	const char *why = smp_init();

	if (!why)
		smp_boot_aps(NULL);
	if (why || smp_online < 2) {
		printf("misbehave: %s needs a second CPU (-smp 2): %s\n", mode, why ? why : "none online");
		return false;
	}
	smp_run_on(1, fn, NULL);
	__asm__ volatile("cli");
	while (!never_set)
		;
	return true;
}

static void pause_forever(void)
{
	while (!never_set)
		__asm__ volatile("pause");
}

/* Polls the CMOS RTC's seconds until they change. */
static void rtc_wait(void)
{
	uint8_t first;

	outb(0x70, 0x00);
	first = inb(0x71);
	while (inb(0x71) == first)
		;
}

/* No TSC frequency is known here: 10^7 ticks, 5 ms at 2 GHz. */
static void tsc_wait(void)
{
	const uint64_t end = rdtsc() + 10000000ull;

	while (rdtsc() < end)
		;
}

/* The loop modes of one CPU: each with interrupts on or off (see the top). */
static const struct {
	const char *mode;
	bool interrupts;
	void (*loop)(void);
} loop_modes[] = {
	{ "two_blocks", false, two_blocks },
	{ "call_loop", false, call_loop },
	{ "same_branch", false, same_branch },
	{ "pause_forever", false, pause_forever },
	{ "sti_spin", true, two_blocks },
	{ "sti_count", true, count_forever },
	{ "count_forever", false, count_forever },
	{ "ends_late", false, ends_late },
	{ "rtc_wait", false, rtc_wait },
	{ "tsc_wait", false, tsc_wait },
};

/* The loop modes: true if `mode` is one (it returns only if it is not stuck). */
static bool stuck_loop(const char *mode)
{
	if (!strcmp(mode, "all_stuck")) {
		flag_wait_beside_cpu1(mode, stuck_with_interrupts_off);
		return true;
	}
	for (unsigned i = 0; i < sizeof(loop_modes) / sizeof(loop_modes[0]); i++) {
		if (strcmp(mode, loop_modes[i].mode))
			continue;
		if (loop_modes[i].interrupts)
			__asm__ volatile("sti");
		else
			__asm__ volatile("cli");
		loop_modes[i].loop();
		return true;
	}
	return false;
}

static void halt_for_ever(void *arg)
{
	(void)arg;
	for (;;)
		__asm__ volatile("cli; hlt");
}

static volatile uint32_t *apic_reg(uint32_t off)
{
	return (volatile uint32_t *)(uintptr_t)
		((rdmsr(MSR_IA32_APIC_BASE) & APIC_BASE_ADDR_MASK) + off);
}

static uint32_t self_apic_id(void)
{
	return *apic_reg(APIC_REG_ID) >> 24;
}

/* Software-enable (SVR bit 8, spurious vector 0xFF), then ICR high, low. */
static void send_ipi(uint32_t dest, uint32_t icr_lo)
{
	*apic_reg(APIC_REG_SVR) = 0x1FF;
	*apic_reg(APIC_REG_ICR_HI) = dest << 24;
	*apic_reg(APIC_REG_ICR_LO) = icr_lo;
}

int main(const struct multiboot_info *mbi)
{
	char mode[32];

	(void)mbi;
	if (!cmdline_str("mode", mode, sizeof(mode))) {
		printf("misbehave: give mode=halt|spin|ud|divide|unmapped|msr|exit256|"
		       "init_self|ipi_nobody|reserved_delivery|no_idt_interrupt|"
		       "mwait_no_monitor|mwait_bad_hint|monitor_mmio|monitor_absent|"
		       "mwait_forever|tsc_deadline_far|tsc_deadline_absent|flag|"
		       "peer_flag|two_blocks|call_loop|same_branch|pause_forever|"
		       "sti_spin|sti_count|count_forever|all_stuck|ends_late|"
		       "rtc_wait|tsc_wait\n");
		return EXIT_FAIL;
	}
	printf("misbehave: mode=%s\n", mode);
	if (stuck_loop(mode)) {
		/* only a mode that is not stuck gets here */
	} else if (!strcmp(mode, "halt")) {
		for (;;)
			__asm__ volatile("cli; hlt");
	} else if (!strcmp(mode, "spin")) {
		for (;;)
			__asm__ volatile("" ::: "memory");
	} else if (!strcmp(mode, "ud")) {
		__asm__ volatile("ud2");
	} else if (!strcmp(mode, "divide")) {
		/* In assembly: the compiler turns 1 / x into a comparison. */
		__asm__ volatile("xor %%ecx, %%ecx; div %%ecx" : : "a"(1), "d"(0) : "ecx");
	} else if (!strcmp(mode, "unmapped")) {
		printf("%x\n", *(volatile uint32_t *)0xf0000000u);
	} else if (!strcmp(mode, "exit256")) {
		outl(0xf4, 256);
	} else if (!strcmp(mode, "msr")) {
		uint32_t lo, hi;

		__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(0x4b564dffu));
		printf("%x %x\n", lo, hi);
	} else if (!strcmp(mode, "init_self")) {
		/* INIT, level assert, physical destination = our own ID. */
		send_ipi(self_apic_id(), (5u << 8) | (1u << 14));
		for (;;)
			__asm__ volatile("pause");
	} else if (!strcmp(mode, "ipi_nobody")) {
		/* Fixed, level assert, vector 0x40, to APIC ID 0x77. */
		send_ipi(0x77, (1u << 14) | 0x40);
		for (int i = 0; i < 100000; i++)	/* let it (not) arrive */
			__asm__ volatile("pause");
		*apic_reg(APIC_REG_ESR) = 0;		/* latch, SDM 10.5.3 */
		printf("misbehave: IPI to APIC ID 0x77 sent, ESR 0x%x\n",
		       *apic_reg(APIC_REG_ESR));
		return EXIT_PASS;
	} else if (!strcmp(mode, "reserved_delivery")) {
		/* Delivery mode 011b is reserved (SDM Figure 10-12). */
		send_ipi(self_apic_id(), (3u << 8) | (1u << 14) | 0x40);
		for (int i = 0; i < 100000; i++)
			__asm__ volatile("pause");
	} else if (!strcmp(mode, "no_idt_interrupt")) {
		struct {
			uint16_t limit;
			uintptr_t base;
		} __attribute__((packed)) empty = { 0, 0 };

		__asm__ volatile("lidt %0" : : "m"(empty));
		/* Fixed, level assert, shorthand self, vector 0x40. */
		send_ipi(0, (1u << 18) | (1u << 14) | 0x40);
		for (int i = 0; i < 100000; i++)
			__asm__ volatile("sti; hlt");
	} else if (!strcmp(mode, "mwait_no_monitor")) {
		__asm__ volatile("cli");
		mwait(0);
	} else if (!strcmp(mode, "mwait_bad_hint")) {
		__asm__ volatile("cli");
		monitor((uintptr_t)monitor_line);
		mwait(0x20);	/* EAX[7:4] = 2: C3 */
	} else if (!strcmp(mode, "monitor_mmio")) {
		monitor(APIC_DEFAULT_BASE);
	} else if (!strcmp(mode, "monitor_absent")) {
		monitor((uintptr_t)monitor_line);
	} else if (!strcmp(mode, "mwait_forever")) {
		__asm__ volatile("cli");
		for (;;) {
			monitor((uintptr_t)monitor_line);
			mwait(0);
		}
	} else if (!strcmp(mode, "tsc_deadline_far")) {
		*apic_reg(APIC_REG_SVR) = 0x1FF;
		*apic_reg(APIC_REG_LVT_TIMER) = LVT_TSC_DEADLINE | 0x40;
		/* SDM 10.5.4.1: order the LVT write before the MSR write. */
		__asm__ volatile("mfence" ::: "memory");
		wrmsr(MSR_IA32_TSC_DEADLINE, 0x80000000000003E8ull);
		/* No IDT: the timer must never fire (if it did, a crash). */
		__asm__ volatile("sti; hlt");
	} else if (!strcmp(mode, "tsc_deadline_absent")) {
		wrmsr(MSR_IA32_TSC_DEADLINE, 0x1000);
	} else if (!strcmp(mode, "pit_halt")) {
		pit_storm();
		__asm__ volatile("cli; hlt");
	} else if (!strcmp(mode, "pit_spin")) {
		pit_storm();
		__asm__ volatile("cli; 1: jmp 1b");
	} else if (!strcmp(mode, "pit_no_idt")) {
		*apic_reg(APIC_REG_SVR) = 0x1FF;	/* software-enabled */
		pit_storm();
		__asm__ volatile("sti; 1: hlt; jmp 1b");
	} else if (!strcmp(mode, "flag")) {
		__asm__ volatile("cli");
		while (!never_set)
			;
	} else if (!strcmp(mode, "peer_flag")) {
		if (!flag_wait_beside_cpu1(mode, halt_for_ever))
			return EXIT_FAIL;
	}
	printf("misbehave: mode %s did not misbehave\n", mode);
	return EXIT_FAIL;
}
