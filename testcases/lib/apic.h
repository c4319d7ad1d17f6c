// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Local APIC access (SDM Vol. 3A chapter 10 in older editions, 11 in newer:
 * "Advanced Programmable Interrupt Controller").
 *
 * xAPIC: 4 KiB of MMIO at the base in IA32_APIC_BASE, one 32-bit register
 * every 16 bytes. x2APIC: MSR 0x800 + offset/16 (SDM Table 10-6), enabled by
 * IA32_APIC_BASE.EXTD with EN, present when CPUID.1:ECX[21] is set (QEMU 7.2's
 * TCG has no x2APIC). apic_read/apic_write/apic_send_ipi follow the mode
 * this CPU is in, so tests can run one body in both modes. Register numbers
 * are the xAPIC MMIO offsets throughout.
 */
#ifndef LIB_APIC_H
#define LIB_APIC_H

#include <stdbool.h>
#include <stdint.h>

/* Registers (offsets into the xAPIC page). */
#define APIC_ID		0x020
#define APIC_VERSION	0x030
#define APIC_TPR	0x080
#define APIC_APR	0x090
#define APIC_PPR	0x0A0
#define APIC_EOI	0x0B0
#define APIC_LDR	0x0D0
#define APIC_DFR	0x0E0	/* xAPIC only */
#define APIC_SVR	0x0F0
#define APIC_ISR	0x100	/* 8 registers, 0x100-0x170 */
#define APIC_TMR	0x180
#define APIC_IRR	0x200
#define APIC_ESR	0x280
#define APIC_LVT_CMCI	0x2F0
#define APIC_ICR_LO	0x300
#define APIC_ICR_HI	0x310	/* xAPIC only: x2APIC's ICR is one 64-bit MSR */
#define APIC_LVT_TIMER	0x320
#define APIC_LVT_THERMAL 0x330
#define APIC_LVT_PERF	0x340
#define APIC_LVT_LINT0	0x350
#define APIC_LVT_LINT1	0x360
#define APIC_LVT_ERROR	0x370
#define APIC_TIMER_ICR	0x380
#define APIC_TIMER_CCR	0x390
#define APIC_TIMER_DCR	0x3E0
#define APIC_SELF_IPI	0x3F0	/* x2APIC only */

/* IA32_APIC_BASE (MSR 0x1B) bits. */
#define APIC_BASE_BSP	(1u << 8)
#define APIC_BASE_EXTD	(1u << 10)
#define APIC_BASE_EN	(1u << 11)
#define APIC_BASE_ADDR_MASK 0xFFFFFF000ull

/* ICR low dword (SDM Figure 10-12). */
#define ICR_VECTOR(v)	((uint32_t)(v) & 0xFF)
#define ICR_FIXED	(0u << 8)
#define ICR_LOWEST	(1u << 8)
#define ICR_SMI		(2u << 8)
#define ICR_NMI		(4u << 8)
#define ICR_INIT	(5u << 8)
#define ICR_STARTUP	(6u << 8)
#define ICR_LOGICAL	(1u << 11)
#define ICR_BUSY	(1u << 12)	/* delivery status, xAPIC only */
#define ICR_ASSERT	(1u << 14)
#define ICR_LEVEL	(1u << 15)
#define ICR_SELF	(1u << 18)
#define ICR_ALL		(2u << 18)
#define ICR_OTHERS	(3u << 18)

/* SVR, LVT and ESR bits. */
#define SVR_ENABLE	(1u << 8)
#define SVR_FOCUS_OFF	(1u << 9)
#define LVT_MASKED	(1u << 16)
#define ESR_SEND_CHECKSUM	(1u << 0)
#define ESR_RECV_CHECKSUM	(1u << 1)
#define ESR_SEND_ACCEPT		(1u << 2)
#define ESR_RECV_ACCEPT		(1u << 3)
#define ESR_REDIRECTABLE_IPI	(1u << 4)
#define ESR_SEND_ILLEGAL_VECTOR	(1u << 5)
#define ESR_RECV_ILLEGAL_VECTOR	(1u << 6)
#define ESR_ILLEGAL_REGISTER	(1u << 7)

/* The spurious-interrupt vector apic_sw_enable programs; its low 4 bits must
 * be 1s on P6/Pentium (SDM 10.9), 0xFF is the reset value anyway. */
#define APIC_SPURIOUS_VECTOR 0xFF

#define CPUID_1_ECX_X2APIC (1u << 21)

uint64_t apic_base_msr(void);
uintptr_t apic_mmio_base(void);
bool apic_is_bsp(void);
bool apic_x2apic_mode(void);		/* this CPU has EXTD set */

/* xAPIC MMIO access (valid only while this CPU is in xAPIC mode). */
uint32_t xapic_read(uint32_t reg);
void xapic_write(uint32_t reg, uint32_t v);

/* x2APIC MSR access: reg is the xAPIC offset. */
bool x2apic_supported(void);		/* CPUID.1:ECX[21] */
uint64_t x2apic_read(uint32_t reg);
void x2apic_write(uint32_t reg, uint64_t v);
/* xAPIC -> x2APIC on this CPU (SDM 10.12.5: EN stays set, EXTD is added);
 * false, changing nothing, without CPUID.1:ECX[21]. */
bool x2apic_enable(void);

/* In this CPU's current mode. */
uint32_t apic_read(uint32_t reg);
void apic_write(uint32_t reg, uint32_t v);
/* The APIC ID: xAPIC ID[31:24], or the 32-bit x2APIC ID. */
uint32_t apic_id(void);
void apic_eoi(void);
/* SVR = enabled | APIC_SPURIOUS_VECTOR; installs a no-op handler for the
 * spurious vector (it needs no EOI: SDM 10.9) unless one is registered. */
void apic_sw_enable(void);
void apic_sw_disable(void);

/* Waits, bounded, for xAPIC ICR delivery status to clear (SDM 10.6.1: the
 * sender must not write the ICR while it is set). Always true in x2APIC. */
bool apic_icr_wait_idle(void);
/*
 * Sends an IPI: icr_lo is delivery mode | shorthand | flags | vector, dest
 * an APIC ID (physical) or a logical destination. xAPIC: ICR high then low,
 * then waits for delivery status to clear; x2APIC: one 64-bit ICR write
 * (SDM 10.12.9). Returns false if delivery status stayed set.
 */
bool apic_send_ipi(uint32_t dest, uint32_t icr_lo);

/* ESR is write-then-read (SDM 10.5.3): the write latches errors seen since
 * the previous write and clears them. Returns the latched value. */
uint32_t apic_read_esr(void);

#endif
