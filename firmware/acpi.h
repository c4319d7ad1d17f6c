// SPDX-License-Identifier: GPL-2.0-or-later
// The ACPI tables a guest finds at boot: RSDP -> RSDT -> {FADT -> {FACS,
// DSDT}, MADT}, all inside the BIOS area 0xE0000-0xFFFFF that the Multiboot
// memory map reserves for firmware. Guests find the RSDP by scanning that
// area on 16-byte boundaries (ACPI 6.x §5.2.5.1), exactly as under QEMU
// -kernel.
//
// What the tables say (ACPI 6.x section numbers):
// - RSDP (§5.2.5.3): revision 0 (ACPI 1.0, 20 bytes), RSDT only, as
//   SeaBIOS gives QEMU's pc machine. Everything sits below 4 GiB, so an
//   XSDT would add nothing.
// - RSDT (§5.2.7): the FADT and the MADT.
// - FADT (§5.2.9): revision 6.0, a full (not hardware-reduced) PC as
//   QEMU's pc with PIIX4 power management: SCI on IRQ 9, no SMI command
//   port (ACPI mode is always on), the PM1a event block at 0x600, PM1a
//   control at 0x604 and the 24-bit PM timer at 0x608
//   (devices/acpi_pm.h), the reset register at I/O port 0xCF9 (value 6),
//   FIRMWARE_CTRL to the FACS and DSDT to the DSDT (the X_ forms stay 0:
//   both are below 4 GiB), no C2/C3, no GPE block, no fixed power or sleep
//   button.
// - FACS (§5.2.10): version 2, 64 bytes on a 64-byte boundary, waking
//   vectors and global lock 0. The guest writes firmware_waking_vector
//   before S3; the machine resumes there in real mode (kFacsWakingVector).
// - DSDT (§5.2.11.1): `Name (\_S5, Package (4) {0, 0, 0, 0})`, the soft-off
//   type, and nothing else. There are no processor device objects, which
//   the spec asks for beside x2APIC entries (§5.2.12.12); OSes that only
//   read the MADT (Linux, every testcase) do not need them.
// - MADT (§5.2.12): local APIC address 0xFEE00000, PCAT_COMPAT, one entry
//   per possible CPU in index order with ACPI processor UID = CPU index:
//   a Processor Local APIC entry (§5.2.12.2) for APIC IDs up to 254 and a
//   Processor Local x2APIC entry (§5.2.12.12) from 255 on, as QEMU's
//   pc_madt_cpu_entry does. CPUs beyond -smp cpus (up to maxcpus) are
//   listed with flags 0 (not enabled) like QEMU 7.2: revision 3 predates
//   the Online Capable bit (ACPI 6.3), and under it Linux counts disabled
//   entries as hot-pluggable. Then the I/O APIC (ID 0, 0xFEC00000, GSI base
//   0) and QEMU's interrupt source overrides: ISA IRQ 0 to GSI 2, and IRQs
//   5, 9, 10 and 11 (the PCI interrupt lines) level triggered, active high.
//
// - SRAT (§5.2.16) and SLIT (§5.2.17), with -numa only, as QEMU's pc
//   builds them (firmware/acpi.cc says where QEMU's quirks are kept).
// - HMAT (ACPI 6.3 §5.2.27), with -numa and -machine hmat=on, revision 2,
//   after the SLIT as QEMU 7.2's: a Memory Proximity Domain Attributes
//   structure per node, a System Locality Latency and Bandwidth
//   Information structure per (hierarchy, data type) given by -numa
//   hmat-lb, and a Memory Side Cache Information structure per -numa
//   hmat-cache.
//
// Not provided: local APIC NMI entries (nothing raises LINT1), HPET,
// MCFG, MP tables.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/guest_ram.h"
#include "base/memory_map.h"
#include "model/numa.h"
#include "model/topology.h"

namespace topolab {

// The tables do not fit where they must go. One line, no newline.
class AcpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where the tables may go. The default is the BIOS read-only area the
// Multiboot e820 map marks reserved; the RSDP must lie there for a guest to
// find it, and the largest MADT (4,096 x2APIC entries, 64 KiB + 44 bytes)
// fits with room to spare beside the fixed tables (under 512 bytes).
struct AcpiWindow {
  static constexpr uint32_t kBiosAreaBase = memory_map::kBiosAreaBase;
  static constexpr uint32_t kBiosAreaSize = memory_map::kBiosAreaSize;
  uint32_t base = kBiosAreaBase;
  uint32_t size = kBiosAreaSize;
};

// The FACS's 32-bit firmware_waking_vector (§5.2.10, Table 5.14): where the
// firmware resumes the OS from S3, in real mode at vector >> 4 : vector & 0xF.
inline constexpr uint32_t kFacsWakingVector = 12;

// Guest-physical addresses of what build_acpi_tables wrote.
struct AcpiTables {
  uint32_t rsdp = 0, rsdt = 0, fadt = 0, dsdt = 0, madt = 0, facs = 0;
  uint32_t srat = 0, slit = 0, hmat = 0;  // 0: not built
  uint32_t end = 0;  // first byte past the last table
};

// Writes the tables into `ram` inside `window`, RSDP first at the window's
// base (rounded up to 16 bytes). Throws AcpiError when they do not fit or
// the window is not in RAM.
AcpiTables build_acpi_tables(GuestRam& ram, const Topology& topology, const NumaConfig& numa = {},
                             AcpiWindow window = {});

// One table as `acpidump -b` writes it: the file name it would give it
// (lower-case signature, the FADT as "facp", the RSDP as "rsdp") and its
// bytes, so that `iasl -d` and other decoders read topolab's tables as
// they read a real machine's.
struct AcpiTableFile {
  std::string name;  // "apic.dat"
  std::vector<uint8_t> bytes;
};

// The tables build_acpi_tables wrote, in the RSDT's order after the RSDP,
// RSDT, DSDT and FACS; their lengths come from what is in RAM.
std::vector<AcpiTableFile> acpi_table_files(const GuestRam& ram, const AcpiTables& tables);

}  // namespace topolab
