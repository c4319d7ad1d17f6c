// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>

#include "lib/acpi.h"
#include "lib/cpuid.h"
#include "lib/apic.h"
#include "lib/idt.h"
#include "lib/io.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/smp.h"
#include "lib/string.h"

/*
 * The SDM's recipe (Vol. 3A 8.4.4.1) waits 10 ms after INIT and 200 us after
 * each STARTUP. With no timer calibrated, these loop counts stand in: they
 * are generous for the INIT (which real hardware needs). The check-in poll
 * ends as soon as the AP is up, so only a dead AP costs the full wait: 10^9
 * TSC ticks, 0.5 s at 2 GHz (0.2 s on a 5 GHz host under QEMU). Work an AP
 * never finishes costs smp_wait_done as much.
 */
#define INIT_DELAY_LOOPS	200000u
#define SIPI_DELAY_LOOPS	20000u
#define CHECKIN_TICKS		1000000000ull
#define RUN_WAIT_TICKS		1000000000ull
#define EARLIER_WORK_LOOPS	200000000u

#define STR(x) #x
#define XSTR(x) STR(x)

struct smp_cpu smp_cpus[SMP_MAX_CPUS];
unsigned smp_ncpus = 1;
unsigned smp_madt_count;
volatile unsigned smp_online = 1;
spinlock_t smp_print_lock = SPINLOCK_INIT;

/* Read by trampoline.S. */
/* Outside the BSS entry.S clears (lib/link.ld .stacks). */
uint8_t smp_ap_stacks[SMP_MAX_CPUS - 1][SMP_STACK_SIZE]
	__attribute__((aligned(16), section(".bss.ap_stacks")));
volatile uint32_t smp_stack_ticket;
uint32_t smp_boot_cr3;

extern const char smp_trampoline_start[], smp_trampoline_end[];
extern const char smp_trampoline_gdtr[];

static void (*ap_main_fn)(unsigned cpu);

void delay_loops(uint32_t n)
{
	while (n--)
		__asm__ volatile("pause" ::: "memory");
}

/*
 * Waits until the byte at p is non-zero or `ticks` of the TSC have passed;
 * true if it became non-zero. One asm block, so that the wait loop is what
 * it says: a load and a compare of *p, RDTSC, a 64-bit subtract and compare
 * against values in memory, PAUSE. No store, no counter: from one
 * iteration to the next only EAX, EDX (RDTSC's) and EFLAGS change, and
 * topolab's spin skipping (emu/pause_loop.h) can jump the clock over the
 * wait instead of running it, as it cannot with a counted loop.
 */
static bool tsc_wait_nonzero8(const volatile uint8_t *p, uint64_t ticks)
{
	uint32_t start_lo, start_hi, lo, hi;
	const uint32_t ticks_lo = (uint32_t)ticks, ticks_hi = (uint32_t)(ticks >> 32);

	__asm__ volatile("rdtsc\n\t"
			 "mov %%eax, %[slo]\n\t"
			 "mov %%edx, %[shi]\n"
			 "1:\tcmpb $0, (%[p])\n\t"
			 "jne 3f\n\t"
			 "rdtsc\n\t"
			 "sub %[slo], %%eax\n\t"
			 "sbb %[shi], %%edx\n\t"
			 "cmp %[thi], %%edx\n\t"
			 "jb 2f\n\t"
			 "ja 3f\n\t"
			 "cmp %[tlo], %%eax\n\t"
			 "jae 3f\n"
			 "2:\tpause\n\t"
			 "jmp 1b\n"
			 "3:"
			 : "=&a"(lo), "=&d"(hi), [slo] "=m"(start_lo), [shi] "=m"(start_hi)
			 : [p] "r"(p), [tlo] "m"(ticks_lo), [thi] "m"(ticks_hi)
			 : "cc", "memory");
	(void)lo;
	(void)hi;
	return *p != 0;
}

/*
 * The loop of wait_until_equal and wait_until_changed, as tsc_wait_nonzero8's
 * (and for the same reason one asm block): compare *p with value, end on
 * `jdone`, else read the TSC, end at the deadline (in memory), PAUSE. Only
 * EAX, EDX and EFLAGS change from one turn to the next.
 */
#define TSC_WAIT_U32(jdone, p, value, deadline)                                  \
	do {                                                                     \
		uint32_t lo_, hi_;                                               \
		const uint32_t dlo_ = (uint32_t)(deadline);                      \
		const uint32_t dhi_ = (uint32_t)((deadline) >> 32);              \
		__asm__ volatile("1:\tcmpl %[v], (%[p])\n\t"                     \
				 jdone " 3f\n\t"                                 \
				 "rdtsc\n\t"                                     \
				 "cmp %[dhi], %%edx\n\t"                         \
				 "jb 2f\n\t"                                     \
				 "ja 3f\n\t"                                     \
				 "cmp %[dlo], %%eax\n\t"                         \
				 "jae 3f\n"                                      \
				 "2:\tpause\n\t"                                 \
				 "jmp 1b\n"                                      \
				 "3:"                                            \
				 : "=&a"(lo_), "=&d"(hi_)                        \
				 : [p] "r"(p), [v] "r"(value), [dlo] "m"(dlo_),  \
				   [dhi] "m"(dhi_)                               \
				 : "cc", "memory");                              \
		(void)lo_;                                                       \
		(void)hi_;                                                       \
	} while (0)

uint64_t tsc_after(uint64_t ticks)
{
	return rdtsc() + ticks;
}

bool wait_until_equal(const volatile uint32_t *p, uint32_t value, uint64_t deadline)
{
	TSC_WAIT_U32("je", p, value, deadline);
	return *p == value;
}

bool wait_until_changed(const volatile uint32_t *p, uint32_t from, uint64_t deadline)
{
	TSC_WAIT_U32("jne", p, from, deadline);
	return *p != from;
}

void delay_ticks(uint64_t ticks)
{
	/* A word nobody else can see: the wait can only end at the deadline. */
	const volatile uint32_t never_written = 0;

	wait_until_changed(&never_written, 0, tsc_after(ticks));
}

int smp_printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	spin_lock(&smp_print_lock);
	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	spin_unlock(&smp_print_lock);
	return n;
}

static void wake_handler(struct irq_frame *f)
{
	(void)f;
	apic_eoi();
}

/*
 * APIC IDs above 254 cannot be addressed in xAPIC mode (8-bit destinations,
 * 0xFF broadcast), so then every CPU runs its APIC in x2APIC mode, as Linux
 * does: the BSP switches before it sends anything, each AP first thing.
 */
static bool use_x2apic;

static bool madt_needs_x2apic(const struct madt_cpu *madt, int n)
{
	for (int i = 0; i < n; i++)
		if (madt[i].apic_id > 0xfe)
			return true;
	return false;
}

const char *smp_init(void)
{
	static struct madt_cpu madt[SMP_MAX_CPUS];
	uint32_t bsp;
	int n;

	idt_init();
	idt_set_handler(SMP_WAKE_VECTOR, wake_handler);
	apic_sw_enable();
	n = acpi_madt_cpus(madt, SMP_MAX_CPUS, NULL);
	if (n < 0)
		return "no ACPI MADT found (RSDP in 0xE0000-0xFFFFF -> RSDT -> \"APIC\")";
	if (n <= SMP_MAX_CPUS && madt_needs_x2apic(madt, n)) {
		if (!x2apic_enable())
			return "the MADT lists APIC IDs above 254 but the CPU has no x2APIC";
		use_x2apic = true;
	}
	bsp = apic_id();
	smp_ncpus = 1;
	smp_online = 1;
	smp_cpus[0].apic_id = bsp;
	smp_cpus[0].online = true;
	smp_madt_count = (unsigned)n;
	if (n > SMP_MAX_CPUS)
		return "the MADT lists more CPUs than SMP_MAX_CPUS ("
		       XSTR(SMP_MAX_CPUS) "): raise it in lib/smp.h";
	bool bsp_listed = false;

	for (int i = 0; i < n; i++) {
		if (madt[i].apic_id == bsp) {
			bsp_listed = true;
			continue;
		}
		if (smp_ncpus == SMP_MAX_CPUS)
			return "the MADT lists more CPUs than SMP_MAX_CPUS";
		memset(&smp_cpus[smp_ncpus], 0, sizeof(smp_cpus[0]));
		smp_cpus[smp_ncpus++].apic_id = madt[i].apic_id;
	}
	if (!bsp_listed)
		return "the BSP's APIC ID is not among the MADT's enabled processors";
	return NULL;
}

int smp_cpu_index(void)
{
	uint32_t id = apic_id();

	for (unsigned i = 0; i < smp_ncpus; i++)
		if (smp_cpus[i].apic_id == id)
			return (int)i;
	return -1;
}

static void ap_idle(struct smp_cpu *c)
{
	for (;;) {
		irq_disable();
		if (c->req != c->done) {
			irq_enable();
			c->fn(c->arg);
			__asm__ volatile("" ::: "memory");
			c->done++;
			continue;
		}
		/* STI's one-instruction shadow (SDM Vol. 2B, STI) keeps an IPI
		 * that came after the check pending until HLT, which it ends. */
		__asm__ volatile("sti; hlt" ::: "memory");
	}
}

void smp_ap_entry(void)
{
	idt_load();
	if (use_x2apic)
		x2apic_enable();
	int cpu = smp_cpu_index();

	if (cpu <= 0) {
		/* Not in the MADT (or claims the BSP's ID): nothing sane to do. */
		smp_printf("FAIL: smp (an AP with APIC ID %u is not among the "
			   "MADT's APs; it stops)\n", apic_id());
		halt_forever();
	}
	struct smp_cpu *c = &smp_cpus[cpu];

	if (ap_main_fn)
		ap_main_fn((unsigned)cpu);
	apic_sw_enable();
	c->online = true;
	__atomic_fetch_add(&smp_online, 1, __ATOMIC_SEQ_CST);
	ap_idle(c);
}

/*
 * Linux's smp_quirk_init_udelay(): Intel family 6 and AMD family 0xF and
 * later need no 10 ms wait after INIT, and 10 us instead of 300 after each
 * STARTUP. Every model this library meets is one of those; the SDM's full
 * waits remain for anything older.
 */
static bool modern_cpu(void)
{
	uint32_t eax = cpuid(1, 0).eax;
	uint32_t family = bits(eax, 11, 8);

	if (family == 0xf)
		family += bits(eax, 27, 20);
	return cpuid_vendor() == VENDOR_INTEL ? family == 6 : family >= 0xf;
}

static void send_startup(uint32_t apic)
{
	bool modern = modern_cpu();

	apic_write(APIC_ESR, 0);
	/* SDM 8.4.4.1: INIT (level assert), 10 ms, STARTUP, 200 us, STARTUP,
	 * 200 us. A second STARTUP to an AP already running is ignored. */
	apic_send_ipi(apic, ICR_INIT | ICR_ASSERT);
	if (!modern)
		delay_loops(INIT_DELAY_LOOPS);
	for (int i = 0; i < 2; i++) {
		apic_send_ipi(apic, ICR_STARTUP | ICR_ASSERT | SMP_SIPI_VECTOR);
		delay_loops(modern ? SIPI_DELAY_LOOPS / 20 : SIPI_DELAY_LOOPS);
	}
}

unsigned smp_boot_aps(void (*ap_main)(unsigned cpu))
{
	struct {
		uint16_t limit;
		uintptr_t base;
	} __attribute__((packed)) gdtr;
	uint8_t *low = (uint8_t *)(uintptr_t)SMP_TRAMPOLINE_ADDR;
	size_t size = (size_t)(smp_trampoline_end - smp_trampoline_start);
	size_t gdtr_off = (size_t)(smp_trampoline_gdtr - smp_trampoline_start);

	ap_main_fn = ap_main;
	smp_boot_cr3 = (uint32_t)read_cr3();
	memcpy(low, smp_trampoline_start, size);
	/* The real-mode LGDT wants limit + 32-bit base; the GDT is below 4 GiB. */
	__asm__ volatile("sgdt %0" : "=m"(gdtr));
	uint32_t base = (uint32_t)gdtr.base;

	memcpy(low + gdtr_off, &gdtr.limit, 2);
	memcpy(low + gdtr_off + 2, &base, 4);
	__asm__ volatile("" ::: "memory");

	for (unsigned i = 1; i < smp_ncpus; i++) {
		struct smp_cpu *c = &smp_cpus[i];

		send_startup(c->apic_id);
		tsc_wait_nonzero8((const volatile uint8_t *)&c->online, CHECKIN_TICKS);
	}
	return smp_online;
}

/*
 * smp_run_on's check that the AP finished its earlier work, which it almost
 * always has: the counted loop smp_wait_done was before it became a TSC
 * wait, kept so that the sched guest, whose recorded results
 * (docs/results/) move with every instruction it runs, runs the same ones.
 */
static bool earlier_work_done(const struct smp_cpu *c)
{
	for (uint32_t n = 0; n < EARLIER_WORK_LOOPS; n++) {
		if (c->req == c->done)
			return true;
		__asm__ volatile("pause" ::: "memory");
	}
	return c->req == c->done;
}

bool smp_wait_done(unsigned cpu)
{
	struct smp_cpu *c = &smp_cpus[cpu];

	return c->req == c->done ||
	       wait_until_equal(&c->done, c->req, tsc_after(RUN_WAIT_TICKS));
}

bool smp_run_on(unsigned cpu, void (*fn)(void *arg), void *arg)
{
	struct smp_cpu *c = &smp_cpus[cpu];

	if (cpu >= smp_ncpus)
		return false;
	if ((int)cpu == smp_cpu_index()) {
		fn(arg);
		return true;
	}
	if (!c->online || !earlier_work_done(c))
		return false;
	c->fn = fn;
	c->arg = arg;
	__asm__ volatile("" ::: "memory");	/* fn/arg before req (SDM 9.2.2) */
	c->req++;
	return apic_send_ipi(c->apic_id, ICR_FIXED | ICR_ASSERT | SMP_WAKE_VECTOR);
}
