// The guest-physical map of the PC topolab builds, as QEMU's pc machine lays
// it out: what the firmware tables, the Multiboot e820 map, the local APIC
// and the machine's RAM limit must agree on, spelled once.
#pragma once

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
// Guest RAM stays below the 32-bit PCI hole and the APIC page.
inline constexpr uint64_t kMaxRamMib = 3 * 1024;

}  // namespace topolab::memory_map
