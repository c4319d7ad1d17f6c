// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The 8254 PIT's channel 0 as IRQ 0 (Intel 8254 data sheet; 82093AA I/O
 * APIC data sheet; ACPI 6.5 5.2.12.5), on the boot CPU:
 *   iso        the MADT's interrupt source override sends ISA IRQ 0 to a
 *              GSI (2 on QEMU's pc machine and topolab), and the MADT
 *              names the I/O APIC that has it
 *   rate       channel 0 in mode 2 (rate generator, as Linux's periodic
 *              tick) interrupts once per count: PERIODS interrupts, each
 *              between HLTs, their mean interval what the counter itself
 *              says a count takes in TSC cycles (read through the latch),
 *              and every interval near the mean
 *   masked     masking the redirection entry stops them (an edge on a
 *              masked pin is lost, 82093AA 3.2.4): none while masked, none
 *              latched for the unmask, and they come back after it
 *   oneshot    mode 0 (interrupt on terminal count, as Linux's one-shot
 *              clockevent) interrupts once, not before its count
 *   stop       a control word for mode 0 with no count stops channel 0
 *              (OUT goes low and stays low): no more interrupts
 * Tolerances: topolab's clocks are virtual and exact, so its intervals
 * must agree to 0.1 %; QEMU's TCG runs the PIT on host time, so there the
 * checks catch gross errors only (a quarter of a period).
 */
#include "lib/acpi.h"
#include "lib/apic.h"
#include "lib/cpuid.h"
#include "lib/div64.h"
#include "lib/idt.h"
#include "lib/io.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/start.h"

#include <stddef.h>

#define PIT_VECTOR	0x30
#define PIT_CH0		0x40
#define PIT_CONTROL	0x43
#define PIT_HZ		1193182u
#define PERIOD_COUNT	11932u		/* 10.000 ms */
#define ONESHOT_COUNT	5966u		/* 5.000 ms */
#define PERIODS		8

#define MADT_ISO	2		/* interrupt source override */
#define IOREGSEL	0x00
#define IOWIN		0x10
#define RTE_MASKED	(1u << 16)

static volatile uint32_t fires;
static volatile uint64_t fire_tsc[PERIODS + 4];
static volatile uint32_t *ioapic;
static unsigned gsi;
static bool exact;

static void pit_handler(struct irq_frame *f)
{
	uint64_t t = rdtsc();
	uint32_t n = fires;

	(void)f;
	if (n < sizeof(fire_tsc) / sizeof(fire_tsc[0]))
		fire_tsc[n] = t;
	fires = n + 1;
	apic_eoi();
}

static void ioapic_write(uint32_t index, uint32_t value)
{
	ioapic[IOREGSEL / 4] = index;
	ioapic[IOWIN / 4] = value;
}

static void route_irq0(bool masked)
{
	ioapic_write(0x10 + 2 * gsi + 1, apic_id() << 24);
	ioapic_write(0x10 + 2 * gsi, PIT_VECTOR | (masked ? RTE_MASKED : 0));
}

static void pit_program(uint8_t mode, uint16_t count)
{
	outb(PIT_CONTROL, (uint8_t)(0x30 | mode << 1));	/* channel 0, LSB then MSB */
	outb(PIT_CH0, (uint8_t)count);
	outb(PIT_CH0, (uint8_t)(count >> 8));
}

static uint16_t pit_latched_count(void)
{
	outb(PIT_CONTROL, 0x00);			/* latch channel 0 */
	uint8_t lo = inb(PIT_CH0);
	return (uint16_t)(lo | inb(PIT_CH0) << 8);
}

/* HLTs with interrupts on until `n` interrupts came or the TSC passes `limit`. */
static bool wait_fires(uint32_t n, uint64_t limit)
{
	while (fires < n && (int64_t)(rdtsc() - limit) < 0)
		__asm__ volatile("sti; hlt; cli" ::: "memory");
	irq_enable();
	return fires >= n;
}

static void spin_for(uint64_t tsc)
{
	uint64_t end = rdtsc() + tsc;

	while ((int64_t)(rdtsc() - end) < 0)
		__asm__ volatile("pause" ::: "memory");
}

static bool find_irq0(void)
{
	const struct acpi_header *madt = acpi_find_table("APIC");
	const uint8_t *p, *end;
	uint32_t ioapic_addr = 0, ioapic_base = 0;
	bool overridden = false;

	if (!report("pit.madt", madt != NULL, "no MADT"))
		return false;
	gsi = 0;
	end = (const uint8_t *)madt + madt->length;
	for (p = (const uint8_t *)madt + 44; p + 2 <= end && p[1] >= 2; p += p[1]) {
		if (p[0] == MADT_IO_APIC && p[1] >= 12 && !ioapic_addr) {
			ioapic_addr = *(const uint32_t *)(p + 4);
			ioapic_base = *(const uint32_t *)(p + 8);
		}
		if (p[0] == MADT_ISO && p[1] >= 10 && p[3] == 0) {
			gsi = *(const uint32_t *)(p + 4);
			overridden = true;
		}
	}
	report("pit.iso.overridden", overridden, "no source override for ISA IRQ 0");
	report_eq("pit.iso.gsi", gsi, 2);
	if (!report("pit.ioapic", ioapic_addr != 0 && ioapic_base == 0,
		    "I/O APIC at %#x, GSI base %u", ioapic_addr, ioapic_base))
		return false;
	ioapic = (volatile uint32_t *)(uintptr_t)ioapic_addr;
	return true;
}

/* TSC cycles per PERIOD_COUNT PIT ticks, read off channel 0's own count
 * over half a period right after an interrupt (no reload in between). */
static uint64_t tsc_per_period(uint64_t mean)
{
	uint32_t n = fires;
	uint64_t t0, t1;
	uint16_t c0, c1;

	wait_fires(n + 1, rdtsc() + 4 * mean);
	irq_disable();
	t0 = rdtsc();
	c0 = pit_latched_count();
	spin_for(mean / 2);
	t1 = rdtsc();
	c1 = pit_latched_count();
	irq_enable();
	if (c1 >= c0)
		return 0;
	return udiv64((t1 - t0) * PERIOD_COUNT, (uint64_t)(c0 - c1));
}

static bool near(uint64_t got, uint64_t want, uint64_t tolerance)
{
	return got + tolerance >= want && got <= want + tolerance;
}

/* Returns the mean period in TSC cycles, 0 if the interrupts did not come. */
static uint64_t test_rate(void)
{
	uint64_t mean, counted, tol;

	fires = 0;
	pit_program(2, PERIOD_COUNT);
	route_irq0(false);
	if (!report("pit.rate.fires", wait_fires(PERIODS + 1, rdtsc() + (1ull << 33)),
		    "%u of %u interrupts", fires, PERIODS + 1))
		return 0;
	mean = udiv64(fire_tsc[PERIODS] - fire_tsc[0], PERIODS);
	tol = exact ? udiv64(mean, 1000) : udiv64(mean, 4);
	for (unsigned k = 1; k <= PERIODS; k++) {
		uint64_t interval = fire_tsc[k] - fire_tsc[k - 1];

		if (!near(interval, mean, tol)) {
			report("pit.rate.even", false, "interval %u is %llu TSC cycles, the mean %llu", k,
			       (unsigned long long)interval, (unsigned long long)mean);
			return mean;
		}
	}
	report("pit.rate.even", true, NULL);
	counted = tsc_per_period(mean);
	report("pit.rate.counter", near(mean, counted, tol),
	       "interrupts every %llu TSC cycles, the counter says a period is %llu",
	       (unsigned long long)mean, (unsigned long long)counted);
	return mean;
}

static void test_masked(uint64_t period)
{
	uint32_t n;

	route_irq0(true);
	n = fires;
	spin_for(4 * period);
	report("pit.masked.none", fires == n, "%u interrupts while masked", fires - n);
	route_irq0(false);
	__asm__ volatile("nop; nop; nop; nop" ::: "memory");
	report("pit.masked.none_latched", fires == n, "%u interrupts at the unmask", fires - n);
	report("pit.masked.back", wait_fires(n + 2, rdtsc() + 4 * period),
	       "no interrupt after the unmask");
}

static void test_oneshot(uint64_t period)
{
	uint64_t t0, want = udiv64(period * ONESHOT_COUNT, PERIOD_COUNT);
	uint32_t n;

	irq_disable();
	t0 = rdtsc();
	pit_program(0, ONESHOT_COUNT);	/* stops the rate generator */
	irq_enable();			/* an interrupt it left pending comes now */
	__asm__ volatile("nop" ::: "memory");
	irq_disable();
	fires = 0;
	n = wait_fires(1, t0 + 4 * want);
	report("pit.oneshot.fires", n, "no interrupt");
	if (!n)
		return;
	report("pit.oneshot.not_early", fire_tsc[0] + (exact ? udiv64(want, 1000) : udiv64(want, 4)) >= t0 + want,
	       "after %llu TSC cycles, programmed for %llu",
	       (unsigned long long)(fire_tsc[0] - t0), (unsigned long long)want);
	spin_for(3 * want);
	report_eq("pit.oneshot.once", fires, 1);
}

static void test_stop(uint64_t period)
{
	outb(PIT_CONTROL, 0x30);	/* mode 0, no count: OUT low until one comes */
	fires = 0;
	spin_for(3 * period);
	report_eq("pit.stop.none", fires, 0);
}

int main(const struct multiboot_info *mbi)
{
	char hv[13];
	uint64_t period;

	(void)mbi;
	cpuid_hypervisor_string(hv);
	exact = cpuid_is_topolab();
	printf("pit_irq: hypervisor \"%s\": %s tolerances\n", hv, exact ? "exact virtual time," : "host time, loose");
	idt_init();
	idt_set_handler(PIT_VECTOR, pit_handler);
	pic_disable();
	apic_sw_enable();
	irq_enable();
	if (!find_irq0())
		return report_summary();
	period = test_rate();
	if (period) {
		test_masked(period);
		test_oneshot(period);
		test_stop(period);
	}
	route_irq0(true);
	return report_summary();
}
