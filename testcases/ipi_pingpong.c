// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * IPI ping-pong benchmark: CPU 0 and CPU 1 bounce a fixed IPI.
 *
 * cmdline: iterations=N (default 100000), x2apic=1 (both CPUs switch to
 * x2APIC mode first; SKIP-free FAIL if the CPU has none)
 *
 * Round trip: CPU 0 sends PING_VECTOR to CPU 1, whose handler EOIs and
 * sends PONG_VECTOR back; CPU 0 waits for it in "sti; hlt" (not a spin:
 * STI's shadow keeps a reply that raced the check pending until HLT), its
 * handler counts and EOIs, and the next ping goes. CPU 1 idles in the
 * library's "sti; hlt" loop between pings. Other CPUs stay idle.
 *
 * The hot path is a bare ICR write (xAPIC: ICR high once, then ICR low per
 * IPI; x2APIC: one WRMSR to 0x830) with no delivery-status polling: each
 * side sends only after the other answered, so the previous IPI has long
 * been delivered. Prints the round trips done and TSC cycles per round
 * trip; exits 0 if all came back. Under topolab the output is the same on
 * every run; under QEMU the TSC is host time.
 */
#include "lib/apic.h"
#include "lib/cmdline.h"
#include "lib/div64.h"
#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"

#define PING_VECTOR		0x60
#define PONG_VECTOR		0x61
#define DEFAULT_ITERATIONS	100000u
#define X2APIC_ICR_MSR		0x830

static bool x2;
static volatile uint32_t *mmio;		/* xAPIC page (the same on every CPU) */
static uint32_t bsp_id, peer_id;
static volatile uint32_t pongs, pings;

static inline void send(uint32_t vector)
{
	if (x2)
		wrmsr(X2APIC_ICR_MSR, (uint64_t)(vector == PING_VECTOR ? peer_id : bsp_id) << 32 |
		      ICR_FIXED | ICR_ASSERT | vector);
	else
		mmio[APIC_ICR_LO / 4] = ICR_FIXED | ICR_ASSERT | vector;
}

static inline void eoi(void)
{
	if (x2)
		wrmsr(0x80B, 0);
	else
		mmio[APIC_EOI / 4] = 0;
}

/* CPU 1. */
static void ping_handler(struct irq_frame *f)
{
	pings++;
	eoi();
	send(PONG_VECTOR);
}

/* CPU 0. */
static void pong_handler(struct irq_frame *f)
{
	pongs++;
	eoi();
}

/* Runs on CPU 1 before the benchmark: its ICR high names CPU 0 for good. */
static void peer_setup(void *arg)
{
	if (x2)
		x2apic_enable();
	else
		mmio[APIC_ICR_HI / 4] = bsp_id << 24;
}

int main(const struct multiboot_info *mbi)
{
	uint32_t n = DEFAULT_ITERATIONS, x2opt = 0;
	const char *why = smp_init();

	(void)mbi;
	if (cmdline_uint("iterations", &n) == CMDLINE_INVALID || n == 0) {
		report("pingpong.cmdline", false, "iterations= wants a number > 0");
		return report_summary();
	}
	cmdline_uint("x2apic", &x2opt);
	if (why) {
		report("smp.init", false, "%s", why);
		return report_summary();
	}
	idt_set_handler(PING_VECTOR, ping_handler);
	idt_set_handler(PONG_VECTOR, pong_handler);
	smp_boot_aps(NULL);
	if (smp_ncpus < 2 || !smp_cpus[1].online) {
		report("pingpong.two_cpus", false, "needs CPU 1 online (-smp 2 or more); "
		       "%u of %u CPUs online", smp_online, smp_ncpus);
		return report_summary();
	}
	x2 = x2opt || apic_x2apic_mode();
	if (x2 && !x2apic_supported()) {
		report("pingpong.x2apic", false, "x2apic=1 but CPUID.1:ECX[21] is clear");
		return report_summary();
	}
	mmio = (volatile uint32_t *)apic_mmio_base();
	bsp_id = smp_cpus[0].apic_id;
	peer_id = smp_cpus[1].apic_id;
	if (!smp_run_on(1, peer_setup, NULL) || !smp_wait_done(1)) {
		report("pingpong.setup", false, "CPU 1 did not run its set-up");
		return report_summary();
	}
	if (x2)
		x2apic_enable();
	else
		mmio[APIC_ICR_HI / 4] = peer_id << 24;

	irq_disable();
	uint64_t t0 = rdtsc();

	for (uint32_t i = 0; i < n; i++) {
		send(PING_VECTOR);
		while (pongs == i)
			__asm__ volatile("sti; hlt; cli" ::: "memory");
	}
	uint64_t t1 = rdtsc();

	irq_enable();
	printf("ipi_pingpong: %s, CPU 0 (APIC ID 0x%x) <-> CPU 1 (APIC ID 0x%x)\n",
	       x2 ? "x2APIC" : "xAPIC", bsp_id, peer_id);
	printf("ipi_pingpong: %u round trips, %llu TSC cycles, %llu TSC cycles "
	       "per round trip\n", pongs, (unsigned long long)(t1 - t0),
	       (unsigned long long)udiv64(t1 - t0, pongs));
	report("pingpong.round_trips", pongs == n && pings == n,
	       "%u pings reached CPU 1, %u pongs CPU 0, expected %u each",
	       pings, pongs, n);
	return report_summary();
}
