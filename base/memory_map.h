// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-physical map of the PC topolab builds, as QEMU's pc machine lays
// it out: what the firmware tables, the Multiboot e820 map, the local APIC
// and the machine's RAM limit must agree on, spelled once.
#pragma once

#include <array>
#include <cstdint>

namespace topolab::memory_map {

// Conventional memory ends where the extended BIOS data area begins.
inline constexpr uint64_t kEbdaBase = 0x9fc00;
inline constexpr uint64_t kEbdaSize = 0x400;
// The BIOS read-only area: reserved in the e820 map, where the ACPI tables go.
inline constexpr uint64_t kBiosAreaBase = 0xe0000;
inline constexpr uint64_t kBiosAreaSize = 0x20000;
inline constexpr uint64_t kFirstMiB = 0x100000;
// The local APIC's page at reset (IA32_APIC_BASE, SDM 10.4.4), also the
// address the MADT gives.
inline constexpr uint64_t kLocalApicBase = 0xfee00000;
// The I/O APIC's page (82093AA default, QEMU's pc), also in the MADT.
inline constexpr uint64_t kIoApicBase = 0xfec00000;
// pc-testdev's 64 KiB of scratch MMIO ("iomem"), as QEMU maps it.
inline constexpr uint64_t kPcTestdevIomemBase = 0xff000000;
// Where SeaBIOS puts pci-testdev's BARs on QEMU's pc (the first 32-bit MMIO
// allocation below the I/O APIC, the first I/O allocation at 0xC000), and
// its slot (the first free one after the PIIX3 at 00:01 with -nodefaults).
inline constexpr uint64_t kPciTestdevMemBar = 0xfebff000;
inline constexpr uint16_t kPciTestdevIoBar = 0xc000;
inline constexpr unsigned kPciTestdevSlot = 2;
// The I/O APIC's ID (also its MADT entry's), as QEMU's ACPI_BUILD_IOAPIC_ID.
inline constexpr uint8_t kIoApicId = 0;

// I/O ports the firmware tables name, where QEMU's pc with SeaBIOS puts them.
// PIIX4 power management: PM1a event block (status, enable), PM1a control
// and the PM timer, at the PM base SeaBIOS programs.
inline constexpr uint16_t kAcpiPmBase = 0x600;
inline constexpr uint16_t kAcpiPm1EvtOffset = 0x0, kAcpiPm1CntOffset = 0x4, kAcpiPmTmrOffset = 0x8;
inline constexpr uint16_t kAcpiPmPortCount = 0xc;
inline constexpr uint8_t kAcpiSciIrq = 9;
// PIIX3's reset control register, the FADT's RESET_REG, and the value
// written to it there (bit 2 resets, bit 1 asks for a hard reset).
inline constexpr uint16_t kResetControlPort = 0xcf9;
inline constexpr uint8_t kResetControlValue = 0x06;

// Guest RAM stays below the 32-bit PCI hole and the APIC page.
inline constexpr uint64_t kMaxRamMib = 3 * 1024;

// The memory map QEMU's e820 table gives a PC, which both the Multiboot
// information block and Linux's boot_params carry (ACPI 6.4 table 15.312:
// type 1 is RAM, 2 reserved).
struct E820Region {
  uint64_t base, length;
  uint32_t type;
};
inline constexpr uint32_t kE820Ram = 1, kE820Reserved = 2;
inline constexpr std::array<E820Region, 4> e820_regions(uint64_t ram_size) {
  return {{{0, kEbdaBase, kE820Ram},
           {kEbdaBase, kEbdaSize, kE820Reserved},
           {kBiosAreaBase, kBiosAreaSize, kE820Reserved},
           {kFirstMiB, ram_size - kFirstMiB, kE820Ram}}};
}

}  // namespace topolab::memory_map
