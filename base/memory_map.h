// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-physical map of the PC topolab builds, as QEMU's pc machine lays
// it out: what the firmware tables, the Multiboot e820 map, the local APIC
// and the machine's RAM limit must agree on, spelled once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

// --- Where RAM goes -----------------------------------------------------------
// QEMU 7.2's pc (i440FX) machine splits -m between RAM from 0 up and RAM
// from 4 GiB up (hw/i386/pc_piix.c, pc_init1): below max-ram-below-4g
// (default 0xE0000000, 3.5 GiB) all RAM is low; at or above it the split
// moves down to 3 GiB (gigabyte_align, every machine type since 1.7), and the
// rest goes above 4 GiB. The gap keeps the 32-bit PCI hole, the I/O APIC,
// the local APIC and the BIOS ROM free.
inline constexpr uint64_t k4GiB = uint64_t{1} << 32;
inline constexpr uint64_t kMaxRamBelow4g = 0xe0000000;
inline constexpr uint64_t kGigabyteAlignedRamBelow4g = 0xc0000000;
// i440FX's pci-hole64-size (I440FX_PCI_HOST_HOLE64_SIZE_DEFAULT): the 64-bit
// PCI window QEMU puts after the RAM above 4 GiB, from the next GiB, which
// its phys-bits check counts (hw/i386/pc.c, pc_max_used_gpa).
inline constexpr uint64_t kPciHole64Bytes = uint64_t{2} << 30;
// The engine's physical address width (QEMU's TCG_PHYS_ADDR_BITS for
// x86-64): a guest-physical address at or above 1 TiB is beyond its reach
// whatever phys-bits the guest is told.
inline constexpr unsigned kEnginePhysBits = 40;
// The largest -m whose RAM still ends within the engine's reach.
inline constexpr uint64_t kMaxRamMib = ((uint64_t{1} << kEnginePhysBits) - k4GiB + kGigabyteAlignedRamBelow4g) >> 20;

// One range of guest-physical RAM.
struct RamRegion {
  uint64_t base, size;
  uint64_t end() const { return base + size; }
  friend bool operator==(const RamRegion&, const RamRegion&) = default;
};

// RAM below 4 GiB and from 4 GiB up, as QEMU's pc machine splits `ram_bytes`.
struct RamSplit {
  uint64_t below_4g, above_4g;
  friend bool operator==(const RamSplit&, const RamSplit&) = default;
};
RamSplit pc_ram_split(uint64_t ram_bytes);
// The split as regions: [0, below_4g), and [4 GiB, 4 GiB + above_4g) when
// there is RAM above 4 GiB.
std::vector<RamRegion> pc_ram_regions(uint64_t ram_bytes);
// The highest guest-physical address QEMU 7.2's pc machine uses for
// `ram_bytes` when phys-bits is above 32: the end of the 64-bit PCI window
// that starts at the first GiB boundary at or after the end of RAM above
// 4 GiB (4 GiB itself with none).
uint64_t pc_max_used_address(uint64_t ram_bytes);
// Why a pc machine cannot have `ram_mib` MiB of RAM with CPUID's physical
// address width `phys_bits` (CPUID.80000008H:EAX[7:0]), in one line that
// starts with "-m"; empty when it can. QEMU 7.2's rule (pc_memory_init:
// "Address space limit ... phys-bits too low") for phys-bits above 32; at
// 32, where QEMU 7.2 checks nothing, the RAM itself must end within 4 GiB;
// and the RAM must end within the engine's kEnginePhysBits.
std::string ram_size_problem(uint64_t ram_mib, unsigned phys_bits);

// The memory map QEMU's e820 table gives a PC, which the Multiboot
// information block, Linux's boot_params and PVH's start_info carry (ACPI
// 6.4 table 15.312: type 1 is RAM, 2 reserved): the first RAM region (from
// 0, past 1 MiB) less the EBDA and the BIOS area, then each other region
// whole. A layout of one region gives what topolab always gave.
struct E820Region {
  uint64_t base, length;
  uint32_t type;
  friend bool operator==(const E820Region&, const E820Region&) = default;
};
inline constexpr uint32_t kE820Ram = 1, kE820Reserved = 2;
std::vector<E820Region> e820_regions(std::span<const RamRegion> ram);

}  // namespace topolab::memory_map
