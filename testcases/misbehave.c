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
 *                | pci_all_ones | ioapic_wild | rtc_pit_storm | fw_cfg_dma
 *                | rep_forever
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
 * Hostile device programming (issue 27, part 4). Each must be survived: the
 * guest checks what the devices did, prints one "misbehave: MODE: ..." line
 * of facts and exits 0 if the machine behaved as its datasheets say, 1 if
 * not:
 *   pci_all_ones   every function on bus 0 (run with -device pci-testdev
 *                  for one with BARs), and device 0 of buses 1-255: all
 *                  ones into every dword of the header after the IDs
 *                  (command, BARs, ROM, interrupt line), then the BARs read
 *                  back as size masks; with decoding on and the BARs at all
 *                  ones, reads where they would point (open bus: all ones);
 *                  then the firmware's BARs and command back, and the
 *                  pci-testdev answers at its address again
 *   ioapic_wild    every I/O APIC entry unmasked toward APIC ID 0xEE, which
 *                  no CPU has, in every delivery mode (the reserved ones
 *                  too), edge and level; the PIT's pin 2 at its fastest
 *                  with vector 5 (illegal, SDM 10.5.2) to this CPU, sti: the
 *                  APIC drops each and logs "receive illegal vector" (ESR
 *                  bit 6); level-triggered, remote IRR stays set until an
 *                  EOI for vector 5 (I/O APIC EOI register) clears it (the
 *                  entry masked first, or the asserted pin sends again)
 *   rtc_pit_storm  100,000 rounds of reprogramming: a PIT control word and
 *                  count (every mode, counts 0, 1 and 2 among them, the
 *                  read-back command) and RTC registers A, B and the
 *                  seconds (SET, every rate and divider, bad BCD) between
 *                  almost every instruction, the PIT's pin routed to nobody
 *                  so its edges are on the timeline; then a sane mode 2
 *                  count must count down and a time set must read back
 *   rep_forever    cli; rep lodsb with ECX = 0xFFFFFFFF: one instruction of
 *                  4 G turns (about half a minute of host time at 7 ns a
 *                  turn, more through open bus); each turn while 2^26 or
 *                  more remain costs an instruction (Unicorn patch 0005), so
 *                  --time-limit ends it: not survived, but bounded
 *   fw_cfg_dma     fw_cfg's ID says "no DMA"; the guest writes the DMA
 *                  address registers (0x514, 0x518) anyway, once with an
 *                  address past RAM and once with its own code's: nothing
 *                  is written, and the legacy interface still reads "QEMU"
 *   pic_storm      the 8259 pair through LINT0 as ExtINT, with the PIT's
 *                  IRQ 0 at its fastest (every 1.7 us): in auto-EOI mode,
 *                  20,000 rounds of reprogramming with interrupts on (ICW
 *                  sequences with and without AEOI, masks, OCW2 EOIs and
 *                  rotations, OCW3 reads, polls, special mask, the ELCR); then
 *                  normal EOI mode with no EOI: the first tick stays in
 *                  service and blocks the rest until the EOI, and ICW1
 *                  forgets what waited
 */
#include "lib/cmdline.h"
#include "lib/idt.h"
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
#define APIC_REG_LVT0		0x350
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

/* PCI configuration mechanism #1 (ports 0xCF8/0xCFC). */
static uint32_t pci_address(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	return 0x80000000u | bus << 16 | dev << 11 | fn << 8 | (reg & 0xFC);
}

static uint32_t pci_read(unsigned bus, unsigned dev, unsigned fn, unsigned reg)
{
	outl(0xCF8, pci_address(bus, dev, fn, reg));
	return inl(0xCFC);
}

static void pci_write(unsigned bus, unsigned dev, unsigned fn, unsigned reg, uint32_t v)
{
	outl(0xCF8, pci_address(bus, dev, fn, reg));
	outl(0xCFC, v);
}

#define PCI_COMMAND		0x04
#define PCI_BAR0		0x10
#define PCI_BARS		6
#define PCI_TESTDEV_ID		0x00051b36u	/* 1b36:0005 */

static int pci_all_ones(void)
{
	unsigned functions = 0, masks = 0, open_bus = 0, bad = 0;
	uint32_t testdev_bar = 0, testdev_before = 0, testdev_at_ones = 0, testdev_after = 0;

	for (unsigned bus = 0; bus < 256; bus++) {
		for (unsigned dev = 0; dev < (bus ? 1u : 32u); dev++) {
			for (unsigned fn = 0; fn < 8; fn++) {
				uint32_t id = pci_read(bus, dev, fn, 0);
				uint32_t saved[16];
				uint32_t bars[PCI_BARS];

				for (unsigned r = 1; r < 16; r++)
					saved[r] = pci_read(bus, dev, fn, r * 4);
				if (id == PCI_TESTDEV_ID) {
					testdev_bar = saved[PCI_BAR0 / 4] & ~0xFu;
					testdev_before = *(volatile uint32_t *)(uintptr_t)testdev_bar;
				}
				for (unsigned r = 1; r < 16; r++)
					pci_write(bus, dev, fn, r * 4, 0xFFFFFFFFu);
				if (id == 0xFFFFFFFFu) {
					/* Absent: still nothing there. */
					bad += pci_read(bus, dev, fn, PCI_BAR0) != 0xFFFFFFFFu;
					continue;
				}
				functions++;
				for (unsigned b = 0; b < PCI_BARS; b++) {
					bars[b] = pci_read(bus, dev, fn, PCI_BAR0 + 4 * b);
					if (!bars[b])
						continue;
					masks++;
					/* Decoding on, the BAR at all ones: where it points. */
					if (bars[b] & 1)
						open_bus += inl((uint16_t)(bars[b] & ~3u)) == 0xFFFFFFFFu;
					else
						open_bus += *(volatile uint32_t *)(uintptr_t)(bars[b] & ~0xFu) == 0xFFFFFFFFu;
				}
				if (id == PCI_TESTDEV_ID)
					testdev_at_ones = *(volatile uint32_t *)(uintptr_t)testdev_bar;
				/* The firmware's addresses and command back. */
				for (unsigned r = 15; r >= 1; r--)
					pci_write(bus, dev, fn, r * 4, saved[r]);
				if (id == PCI_TESTDEV_ID)
					testdev_after = *(volatile uint32_t *)(uintptr_t)testdev_bar;
				for (unsigned b = 0; b < PCI_BARS; b++)
					bad += pci_read(bus, dev, fn, PCI_BAR0 + 4 * b) != saved[PCI_BAR0 / 4 + b];
				bad += pci_read(bus, dev, fn, 0) != id;
			}
		}
	}
	if (testdev_bar)
		bad += testdev_at_ones != 0xFFFFFFFFu || testdev_after != testdev_before;
	printf("misbehave: pci_all_ones: %u functions, %u BAR size masks, %u open-bus reads at all ones, "
	       "testdev BAR0 %x reads %x, %x at all ones, %x again; %s\n",
	       functions, masks, open_bus, testdev_bar, testdev_before, testdev_at_ones, testdev_after,
	       bad ? "WRONG" : "ok");
	return bad ? EXIT_FAIL : EXIT_PASS;
}

/* I/O APIC at its pc address: IOREGSEL, IOWIN, and the EOI register of
 * version 0x20 (QEMU's ioapic). */
static void ioapic_write(unsigned reg, uint32_t v)
{
	volatile uint32_t *ioapic = (volatile uint32_t *)(uintptr_t)IOAPIC_BASE;

	ioapic[0] = reg;
	ioapic[4] = v;
}

static uint32_t ioapic_read(unsigned reg)
{
	volatile uint32_t *ioapic = (volatile uint32_t *)(uintptr_t)IOAPIC_BASE;

	ioapic[0] = reg;
	return ioapic[4];
}

#define IOAPIC_PINS		24
#define RTE_LEVEL		(1u << 15)
#define RTE_REMOTE_IRR		(1u << 14)
#define RTE_LOGICAL		(1u << 11)
#define NOBODY			0xEEu	/* an APIC ID no CPU has (not 0xFF: broadcast) */
#define ILLEGAL_VECTOR		0x05

static void spin_a_while(void)
{
	for (int i = 0; i < 20000; i++)
		__asm__ volatile("pause");
}

/* The PIT's channel 0 at its fastest, its pin 2 entry as given. */
static void pit_pin2(uint32_t low, uint32_t dest)
{
	ioapic_write(0x10 + 2 * 2 + 1, dest << 24);
	ioapic_write(0x10 + 2 * 2, low);
}

static int ioapic_wild(void)
{
	unsigned bad = 0;
	uint32_t esr, rte_level, rte_after_eoi;

	*apic_reg(APIC_REG_SVR) = 0x1FF;
	*apic_reg(APIC_REG_ESR) = 0;
	(void)*apic_reg(APIC_REG_ESR);
	/* Every pin, every delivery mode (011b and 110b reserved), toward
	 * nobody: physical 0xEE, or logical with an empty destination. */
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		uint32_t mode = pin % 8, low = 0x40 | mode << 8;

		if (pin & 1)
			low |= RTE_LEVEL;
		if (pin & 8)
			low |= RTE_LOGICAL;
		ioapic_write(0x10 + 2 * pin + 1, (pin & 8 ? 0u : NOBODY) << 24);
		ioapic_write(0x10 + 2 * pin, low);
	}
	outb(0x43, 0x34);	/* channel 0, LSB then MSB, mode 2, count 2 */
	outb(0x40, 2);
	outb(0x40, 0);
	/* Edge, vector 5, to this CPU: each edge dropped by the APIC. */
	pit_pin2(ILLEGAL_VECTOR, self_apic_id());
	__asm__ volatile("sti");
	spin_a_while();
	*apic_reg(APIC_REG_ESR) = 0;	/* latch, SDM 10.5.3 */
	esr = *apic_reg(APIC_REG_ESR);
	bad += !(esr & 0x40);
	/* Level: the first message sets remote IRR, and nothing clears it
	 * until an EOI for its vector (none comes from an APIC that dropped
	 * it); the EOI register then clears it. */
	pit_pin2(ILLEGAL_VECTOR | RTE_LEVEL, self_apic_id());
	spin_a_while();
	rte_level = ioapic_read(0x10 + 2 * 2);
	/* Masked first: the PIT's OUT is high nearly all the time in mode 2,
	 * and an EOI to an unmasked entry whose pin is still asserted sends
	 * the interrupt again (82093AA 3.4.2), setting remote IRR again. */
	pit_pin2(ILLEGAL_VECTOR | RTE_LEVEL | (1u << 16), self_apic_id());
	*(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x40) = ILLEGAL_VECTOR;
	rte_after_eoi = ioapic_read(0x10 + 2 * 2);
	__asm__ volatile("cli");
	bad += !(rte_level & RTE_REMOTE_IRR) || (rte_after_eoi & RTE_REMOTE_IRR);
	printf("misbehave: ioapic_wild: ESR 0x%x (receive illegal vector), pin 2 level entry 0x%x, "
	       "0x%x after its EOI; %s\n", esr, rte_level, rte_after_eoi, bad ? "WRONG" : "ok");
	return bad ? EXIT_FAIL : EXIT_PASS;
}

static uint8_t cmos_read(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static void cmos_write(uint8_t reg, uint8_t v)
{
	outb(0x70, reg);
	outb(0x71, v);
}

/* Channel 0's count, latched (counter latch command). */
static uint16_t pit_count0(void)
{
	uint8_t lo, hi;

	outb(0x43, 0x00);
	lo = inb(0x40);
	hi = inb(0x40);
	return (uint16_t)(lo | hi << 8);
}

static int rtc_pit_storm(void)
{
	unsigned bad = 0;
	uint16_t first, second;
	uint8_t hours, minutes;

	/* The PIT's pin to nobody, unmasked: its edges go on the timeline. */
	pit_pin2(0x40, NOBODY);
	for (uint32_t i = 0; i < 100000; i++) {
		uint8_t channel = (i % 3 == 1) ? 2 : 0;	/* 1 is the refresh timer */

		outb(0x43, (uint8_t)(channel << 6 | 0x30 | (i % 6) << 1 | (i & 8 ? 1 : 0)));
		outb((uint16_t)(0x40 + channel), (uint8_t)(i % 5 < 3 ? i % 5 : i));
		outb((uint16_t)(0x40 + channel), (uint8_t)(i % 5 < 3 ? 0 : i >> 8));
		if (i % 7 == 0)
			outb(0x43, (uint8_t)(0xC0 | (i & 0x3E)));	/* read-back */
		outb(0x61, (uint8_t)i);
		(void)inb((uint16_t)(0x40 + channel));
		cmos_write(0x0A, (uint8_t)(i * 13));
		cmos_write(0x0B, (uint8_t)(i * 7));
		cmos_write(0x00, (uint8_t)(i * 31));
		(void)cmos_read(0x0C);
	}
	/* Sane again: mode 2, count 0x8000; it counts down. */
	outb(0x43, 0x34);
	outb(0x40, 0x00);
	outb(0x40, 0x80);
	first = pit_count0();
	for (int i = 0; i < 1000; i++)
		__asm__ volatile("pause");
	second = pit_count0();
	bad += !(second < first && first <= 0x8000);
	/* The RTC: running (divider 010b), 24-hour BCD, 12:34:00 set. */
	cmos_write(0x0A, 0x26);
	cmos_write(0x0B, 0x82);
	cmos_write(0x04, 0x12);
	cmos_write(0x02, 0x34);
	cmos_write(0x00, 0x00);
	cmos_write(0x0B, 0x02);
	hours = cmos_read(0x04);
	minutes = cmos_read(0x02);
	bad += hours != 0x12 || minutes != 0x34;
	printf("misbehave: rtc_pit_storm: 100000 rounds; PIT counts 0x%x then 0x%x; RTC %x:%x; %s\n",
	       first, second, hours, minutes, bad ? "WRONG" : "ok");
	return bad ? EXIT_FAIL : EXIT_PASS;
}

/* The 8259 pair at vector bases 0x20 and 0x28, the slave on IR2, in
 * auto-EOI mode or not (ICW4 bit 1). */
static void pic_setup(bool auto_eoi)
{
	outb(0x20, 0x11);
	outb(0x21, 0x20);
	outb(0x21, 0x04);
	outb(0x21, auto_eoi ? 0x03 : 0x01);
	outb(0xA0, 0x11);
	outb(0xA1, 0x28);
	outb(0xA1, 0x02);
	outb(0xA1, auto_eoi ? 0x03 : 0x01);
}

static volatile uint32_t pic_interrupts;

static void pic_interrupt(struct irq_frame *f)
{
	(void)f;
	pic_interrupts++;
}

/* Interrupts on until `count` of them came (or a long while: the count
 * says which), then a while more, for one that should not come. QEMU's PIT
 * runs on host time: the first wait is as long as its ticks need. */
static void pic_wait_for(uint32_t count)
{
	__asm__ volatile("sti");
	for (uint32_t i = 0; i < 10000000 && pic_interrupts < count; i++)
		__asm__ volatile("pause");
	spin_a_while();
	__asm__ volatile("cli");
}

static int pic_storm(void)
{
	unsigned bad = 0;
	uint32_t during_storm, in_service, after_eoi;
	uint8_t isr;

	idt_init();
	for (unsigned v = 0x20; v < 0x30; v++)
		idt_set_handler(v, pic_interrupt);
	*apic_reg(APIC_REG_SVR) = 0x1FF;
	*apic_reg(APIC_REG_LVT0) = 0x700;	/* ExtINT, unmasked */
	pic_setup(true);
	outb(0xA1, 0xFF);
	outb(0x21, 0xFE);			/* IRQ 0 only */
	outb(0x43, 0x34);			/* channel 0, mode 2, count 2 */
	outb(0x40, 2);
	outb(0x40, 0);
	__asm__ volatile("sti");
	for (uint32_t i = 0; i < 20000; i++) {
		switch (i % 8) {
		case 0: pic_setup(i & 8); outb(0xA1, 0xFF); outb(0x21, (uint8_t)(0xFE & ~(i >> 4 & 0x04))); break;
		case 1: outb(0x20, (uint8_t)(0x20 | (i >> 3 & 0xE0) | (i & 7))); break;	/* OCW2, every command */
		case 2: outb(0x20, (uint8_t)(0x08 | (i >> 3 & 3))); (void)inb(0x20); break;	/* OCW3 read IRR/ISR */
		case 3: outb(0x20, 0x0C); (void)inb(0x20); break;	/* poll */
		case 4: outb(0x20, (uint8_t)(0x48 | (i >> 4 & 0x20))); break;	/* special mask on/off */
		case 5: outb(0x21, (uint8_t)(i >> 3)); outb(0x21, 0xFE); break;	/* masks */
		case 6: outb(0x4D0, (uint8_t)i); outb(0x4D0, 0); break;	/* ELCR */
		default: outb(0x20, 0x20); outb(0xA0, 0x20); break;	/* EOIs */
		}
	}
	__asm__ volatile("cli");
	during_storm = pic_interrupts;
	/* Normal EOI mode, IRQ 0 open, no EOI: one tick in service blocks the rest. */
	pic_setup(false);
	outb(0xA1, 0xFF);
	outb(0x21, 0xFE);
	pic_interrupts = 0;
	pic_wait_for(1);
	in_service = pic_interrupts;
	outb(0x20, 0x0B);			/* OCW3: read ISR */
	isr = inb(0x20);
	outb(0x20, 0x0A);
	outb(0x20, 0x20);			/* the EOI: the next tick comes */
	pic_wait_for(2);
	after_eoi = pic_interrupts;
	outb(0x21, 0xFF);
	*apic_reg(APIC_REG_LVT0) = 0x10700;
	bad += in_service != 1 || isr != 0x01 || after_eoi != 2;
	printf("misbehave: pic_storm: 20000 rounds, %u interrupts through ExtINT; without EOI %u, ISR 0x%x; after "
	       "the EOI %u; %s\n",
	       during_storm, in_service, isr, after_eoi, bad ? "WRONG" : "ok");
	return bad ? EXIT_FAIL : EXIT_PASS;
}

/* fw_cfg's legacy interface (0x510 selector, 0x511 data) and the DMA
 * address registers a DMA-capable fw_cfg has (0x514 high, 0x518 low, each
 * big-endian). */
static void fw_cfg_select(uint16_t key)
{
	outw(0x510, key);
}

static uint32_t fw_cfg_read32(void)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)inb(0x511) << (8 * i);
	return v;
}

static uint32_t bswap32(uint32_t v)
{
	return __builtin_bswap32(v);
}

/* A DMA control structure (docs/specs/fw_cfg.txt): read item 0 (the
 * signature) into `address`. */
static struct {
	uint32_t control, length;
	uint64_t address;
} __attribute__((packed, aligned(8))) fw_cfg_dma_access;

static uint32_t checksum(const volatile uint8_t *p, unsigned n)
{
	uint32_t s = 0;

	for (unsigned i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

static int fw_cfg_dma(void)
{
	unsigned bad = 0;
	uint32_t id, signature, code_before, code_after;
	const volatile uint8_t *code = (const volatile uint8_t *)(uintptr_t)0x100000;

	fw_cfg_select(0x01);
	id = fw_cfg_read32();
	code_before = checksum(code, 4096);
	/* Past RAM, then over this image's own code (loaded at 1 MiB). */
	fw_cfg_dma_access.control = bswap32((0u << 16) | 0x02 | 0x08);	/* select 0, read */
	fw_cfg_dma_access.length = bswap32(4096);
	fw_cfg_dma_access.address = 0xF0000000F0000000ull;
	outl(0x514, 0);
	outl(0x518, bswap32((uint32_t)(uintptr_t)&fw_cfg_dma_access));
	fw_cfg_dma_access.address = __builtin_bswap64(0x100000);
	outl(0x514, bswap32(0xFFFFFFFFu));
	outl(0x518, bswap32(0xF0000000u));
	outl(0x514, 0);
	outl(0x518, bswap32((uint32_t)(uintptr_t)&fw_cfg_dma_access));
	code_after = checksum(code, 4096);
	fw_cfg_select(0x00);
	signature = fw_cfg_read32();
	bad += (id & 2) != 0 || code_after != code_before || signature != 0x554D4551u /* "QEMU" */;
	printf("misbehave: fw_cfg_dma: ID 0x%x (no DMA), DMA requests past RAM and over the code "
	       "changed %s, signature %c%c%c%c; %s\n", id, code_after == code_before ? "nothing" : "the code",
	       signature & 0xFF, signature >> 8 & 0xFF, signature >> 16 & 0xFF, signature >> 24,
	       bad ? "WRONG" : "ok");
	return bad ? EXIT_FAIL : EXIT_PASS;
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
		       "rtc_wait|tsc_wait|pit_halt|pit_spin|pit_no_idt|pci_all_ones|"
		       "ioapic_wild|rtc_pit_storm|fw_cfg_dma|pic_storm|rep_forever\n");
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
	} else if (!strcmp(mode, "rep_forever")) {
		__asm__ volatile("cli; cld; rep lodsb"
				 : : "S"(0x100000), "c"(0xFFFFFFFFu) : "eax", "memory");
	} else if (!strcmp(mode, "pci_all_ones")) {
		return pci_all_ones();
	} else if (!strcmp(mode, "ioapic_wild")) {
		return ioapic_wild();
	} else if (!strcmp(mode, "rtc_pit_storm")) {
		return rtc_pit_storm();
	} else if (!strcmp(mode, "fw_cfg_dma")) {
		return fw_cfg_dma();
	} else if (!strcmp(mode, "pic_storm")) {
		return pic_storm();
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
