// SPDX-License-Identifier: GPL-2.0-or-later
#include "lib/apic.h"
#include "lib/cpuid.h"
#include "lib/idt.h"
#include "lib/msr.h"

/* How long apic_icr_wait_idle polls: far longer than any delivery takes. */
#define ICR_IDLE_POLLS 10000000u

#define X2APIC_MSR_BASE	0x800
#define X2APIC_ICR_MSR	0x830

uint64_t apic_base_msr(void)
{
	return rdmsr(MSR_IA32_APIC_BASE);
}

uintptr_t apic_mmio_base(void)
{
	return (uintptr_t)(apic_base_msr() & APIC_BASE_ADDR_MASK);
}

bool apic_is_bsp(void)
{
	return apic_base_msr() & APIC_BASE_BSP;
}

bool apic_x2apic_mode(void)
{
	return apic_base_msr() & APIC_BASE_EXTD;
}

uint32_t xapic_read(uint32_t reg)
{
	return *(volatile uint32_t *)(apic_mmio_base() + reg);
}

void xapic_write(uint32_t reg, uint32_t v)
{
	*(volatile uint32_t *)(apic_mmio_base() + reg) = v;
}

bool x2apic_supported(void)
{
	return cpuid(1, 0).ecx & CPUID_1_ECX_X2APIC;
}

uint64_t x2apic_read(uint32_t reg)
{
	return rdmsr(X2APIC_MSR_BASE + (reg >> 4));
}

void x2apic_write(uint32_t reg, uint64_t v)
{
	wrmsr(X2APIC_MSR_BASE + (reg >> 4), v);
}

bool x2apic_enable(void)
{
	if (!x2apic_supported())
		return false;
	wrmsr(MSR_IA32_APIC_BASE, apic_base_msr() | APIC_BASE_EN | APIC_BASE_EXTD);
	return true;
}

uint32_t apic_read(uint32_t reg)
{
	return apic_x2apic_mode() ? (uint32_t)x2apic_read(reg) : xapic_read(reg);
}

void apic_write(uint32_t reg, uint32_t v)
{
	if (apic_x2apic_mode())
		x2apic_write(reg, v);
	else
		xapic_write(reg, v);
}

uint32_t apic_id(void)
{
	if (apic_x2apic_mode())
		return (uint32_t)x2apic_read(APIC_ID);
	return xapic_read(APIC_ID) >> 24;
}

void apic_eoi(void)
{
	apic_write(APIC_EOI, 0);
}

static void spurious(struct irq_frame *f)
{
	(void)f;
}

void apic_sw_enable(void)
{
	if (!idt_get_handler(APIC_SPURIOUS_VECTOR))
		idt_set_handler(APIC_SPURIOUS_VECTOR, spurious);
	apic_write(APIC_SVR, SVR_ENABLE | APIC_SPURIOUS_VECTOR);
}

void apic_sw_disable(void)
{
	apic_write(APIC_SVR, apic_read(APIC_SVR) & ~SVR_ENABLE);
}

bool apic_icr_wait_idle(void)
{
	if (apic_x2apic_mode())
		return true;	/* x2APIC has no delivery status bit */
	for (uint32_t i = 0; i < ICR_IDLE_POLLS; i++) {
		if (!(xapic_read(APIC_ICR_LO) & ICR_BUSY))
			return true;
		__asm__ volatile("pause");
	}
	return false;
}

bool apic_send_ipi(uint32_t dest, uint32_t icr_lo)
{
	if (apic_x2apic_mode()) {
		x2apic_write(APIC_ICR_LO, (uint64_t)dest << 32 | icr_lo);
		return true;
	}
	if (!apic_icr_wait_idle())
		return false;
	/* The write to the low dword sends (SDM 10.6.1), so high goes first. */
	xapic_write(APIC_ICR_HI, dest << 24);
	xapic_write(APIC_ICR_LO, icr_lo);
	return apic_icr_wait_idle();
}

uint32_t apic_read_esr(void)
{
	apic_write(APIC_ESR, 0);	/* x2APIC: only 0 may be written */
	return apic_read(APIC_ESR);
}
