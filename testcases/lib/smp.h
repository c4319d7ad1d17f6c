// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * SMP bring-up (SDM Vol. 3A 8.4 "Multiple-Processor (MP) Initialization").
 *
 * smp_init (BSP) reads the CPUs from the MADT: CPU index 0 is the BSP, then
 * the other enabled processors in MADT order. smp_boot_aps copies the
 * trampoline (trampoline.S) to SMP_TRAMPOLINE_ADDR and starts each AP with
 * INIT, STARTUP, STARTUP (SDM 8.4.4.1), one at a time. An AP goes real mode
 * -> protected mode on the BSP's GDT -> (64-bit images) long mode on the
 * BSP's page tables -> its own stack -> C, where it loads the IDT, runs the
 * caller's ap_main(cpu) (with IF clear and its local APIC still as INIT left
 * it: software-disabled), software-enables its local APIC, counts itself
 * online and idles in "sti; hlt", running work posted with smp_run_on.
 *
 * The BSP waits for each AP (bounded) before starting the next, so ap_main
 * calls run one after another, in CPU index order, and output is
 * reproducible. ap_main must therefore not wait for the BSP.
 */
#ifndef LIB_SMP_H
#define LIB_SMP_H

#define SMP_MAX_CPUS		1024	/* 16 MiB of AP stacks: fits the default 128 MiB */
#define SMP_STACK_SIZE		16384	/* per AP */
#define SMP_TRAMPOLINE_ADDR	0x8000	/* below 1 MiB, 4 KiB-aligned */
#define SMP_SIPI_VECTOR		(SMP_TRAMPOLINE_ADDR >> 12)	/* CS = v << 8 */
/* Fixed IPI that wakes an idle AP for smp_run_on (its handler only EOIs). */
#define SMP_WAKE_VECTOR		0xF0

#ifndef __ASSEMBLER__

#include <stdbool.h>
#include <stdint.h>

#include "lib/spinlock.h"

struct smp_cpu {
	uint32_t apic_id;		/* from the MADT */
	volatile bool online;		/* checked in after ap_main */
	/* smp_run_on work: the AP runs fn(arg) while req != done. */
	void (*volatile fn)(void *arg);
	void *volatile arg;
	volatile uint32_t req, done;
};

extern struct smp_cpu smp_cpus[SMP_MAX_CPUS];
extern unsigned smp_ncpus;		/* CPUs listed (BSP included) */
extern unsigned smp_madt_count;		/* enabled CPUs in the MADT */
extern volatile unsigned smp_online;	/* CPUs running (BSP included) */
extern spinlock_t smp_print_lock;

/*
 * BSP: loads the IDT (idt_init), enables its local APIC, reads the MADT.
 * Returns NULL, or why SMP cannot be used: no MADT (smp_ncpus is then 1),
 * the BSP missing from it, or more than SMP_MAX_CPUS CPUs.
 */
const char *smp_init(void);

/*
 * BSP: starts every AP of smp_cpus (INIT, then STARTUP twice), waiting for
 * each to check in within a bounded time; ap_main may be NULL. Returns
 * smp_online. CPUs that never checked in keep online == false.
 */
unsigned smp_boot_aps(void (*ap_main)(unsigned cpu));

/* This CPU's index in smp_cpus (looked up by APIC ID), -1 if not listed. */
int smp_cpu_index(void);

/*
 * Runs fn(arg) on CPU cpu (directly if that is this CPU): posts the work and
 * wakes the AP with a SMP_WAKE_VECTOR IPI; the AP runs it with IF set.
 * smp_run_on waits (bounded) for earlier work on that CPU to finish first;
 * smp_wait_done waits for this one. Both return false on timeout.
 */
bool smp_run_on(unsigned cpu, void (*fn)(void *arg), void *arg);
bool smp_wait_done(unsigned cpu);

/* printf under smp_print_lock, so lines from several CPUs do not mix. */
int smp_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A calibration-free delay: n PAUSE loops (no timer is set up). The boot
 * path's; a test that waits should use the TSC waits below. */
void delay_loops(uint32_t n);

/*
 * Waits on the TSC that an emulator can skip instead of running: each polls
 * one word and the TSC in a loop that stores nothing and changes no register
 * but those RDTSC writes (lib/smp.c says why that matters). A deadline is a
 * TSC value (tsc_after); the waits return whether the word got there.
 */
uint64_t tsc_after(uint64_t ticks);
bool wait_until_equal(const volatile uint32_t *p, uint32_t value, uint64_t deadline);
bool wait_until_changed(const volatile uint32_t *p, uint32_t from, uint64_t deadline);
void delay_ticks(uint64_t ticks);

/* Called from trampoline.S, on the AP's own stack. */
void smp_ap_entry(void);

#endif
#endif
