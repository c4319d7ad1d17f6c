// SPDX-License-Identifier: GPL-2.0-or-later
// The ACPI tables (firmware/acpi.h) for a topology the input gives as -smp
// (up to 4,096 vCPUs), optionally with a window ("\nBASE SIZE", hex) other
// than the BIOS area.
// Invariants (ACPI 6.x, and what the header promises):
// - AcpiError is the only refusal, one line, and a refused build writes
//   nothing; the default window always fits;
// - every table lies inside the window and in RAM, on its alignment, none
//   overlapping another; nothing is written outside [RSDP, end);
// - RSDP (5.2.5.3): signature, revision 0, checksum over 20 bytes, RSDT
//   address; RSDT (5.2.7): header checksum and length, exactly the FADT and
//   the MADT; FADT (5.2.9): length 276, checksum, FIRMWARE_CTRL -> FACS and
//   DSDT -> DSDT, SCI 9, the PM blocks at 0x600/0x604/0x608 with their
//   lengths; FACS (5.2.10): length 64, 64-byte aligned; DSDT: checksum and
//   \_S5; MADT (5.2.12): checksum, 0xFEE00000, PCAT_COMPAT, entries whose
//   lengths add up to the table: one per possible vCPU in index order with
//   UID = index and the topology's APIC ID, a local APIC entry up to ID 254
//   and an x2APIC entry above, enabled exactly for the present vCPUs; then
//   the I/O APIC (ID 0, 0xFEC00000, GSI 0) and the overrides (IRQ 0 -> GSI
//   2; 5, 9, 10, 11 level, active high).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/acpi.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

// The BIOS area ends at 1 MiB; a little more lets a custom window end past it.
constexpr uint64_t kRam = (1 << 20) + (64 << 10);

// Whether ram[from, to) is all zero (memcmp: the sanitizers check the range
// once, not every byte).
bool zero(const GuestRam& ram, uint64_t from, uint64_t to) {
  static const std::vector<uint8_t> zeros(kRam);
  return from >= to || std::memcmp(ram.data() + from, zeros.data(), to - from) == 0;
}

uint8_t sum(const GuestRam& ram, uint32_t at, uint32_t length) {
  uint8_t s = 0;
  for (uint8_t b : ram.bytes(at, length)) s = static_cast<uint8_t>(s + b);
  return s;
}

// A table's header: signature, its length within the window, checksum 0.
uint32_t check_table(const GuestRam& ram, uint32_t at, std::string_view signature, const AcpiTables& t) {
  FUZZ_CHECK(at % 4 == 0 && at >= t.rsdp && at + 36 <= t.end, "{} at {:#x} outside [{:#x}, {:#x})", signature, at,
             t.rsdp, t.end);
  FUZZ_CHECK(std::memcmp(ram.data() + at, signature.data(), 4) == 0, "no {} signature at {:#x}", signature, at);
  const uint32_t length = ram.read<uint32_t>(at + 4);
  FUZZ_CHECK(length >= 36 && uint64_t{at} + length <= t.end, "{} length {}", signature, length);
  FUZZ_CHECK(sum(ram, at, length) == 0, "{} checksum", signature);
  return length;
}

struct Range {
  uint32_t start, end;
  const char* name;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static GuestRam ram(kRam);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string smp(input.substr(0, nl));
  AcpiWindow window;
  const bool custom = nl != std::string_view::npos;
  if (custom) {
    const std::string rest(input.substr(nl + 1));
    char* end = nullptr;
    window.base = static_cast<uint32_t>(std::strtoull(rest.c_str(), &end, 16));
    window.size = static_cast<uint32_t>(std::strtoull(end, nullptr, 16));
  }
  std::optional<Topology> parsed;
  try {
    parsed = Topology::parse(smp.empty() ? "1" : smp);
  } catch (const ConfigError&) {
    return 0;
  }
  const Topology& topology = *parsed;

  std::memset(ram.data(), 0, ram.top());
  AcpiTables t;
  try {
    t = build_acpi_tables(ram, topology, {}, window);
  } catch (const AcpiError& e) {
    FUZZ_CHECK(custom, "the default window refused {}: {}", smp, e.what());
    const std::string what = e.what();
    FUZZ_CHECK(!what.empty() && what.find('\n') == std::string::npos, "AcpiError not one line: {}", what);
    FUZZ_CHECK(zero(ram, 0, ram.top()), "a refused build wrote to RAM");
    return 0;
  }

  // Placement.
  FUZZ_CHECK(t.rsdp % 16 == 0 && t.rsdp >= window.base && t.rsdp - window.base < 16, "RSDP at {:#x}", t.rsdp);
  FUZZ_CHECK(t.end <= uint64_t{window.base} + window.size && t.end <= ram.top(), "tables end at {:#x}", t.end);
  FUZZ_CHECK(zero(ram, 0, t.rsdp) && zero(ram, t.end, ram.top()), "a byte written outside the tables [{:#x}, {:#x})",
             t.rsdp, t.end);

  // RSDP -> RSDT.
  FUZZ_CHECK(std::memcmp(ram.data() + t.rsdp, "RSD PTR ", 8) == 0, "RSDP signature");
  FUZZ_CHECK(sum(ram, t.rsdp, 20) == 0 && ram.read<uint8_t>(t.rsdp + 15) == 0, "RSDP checksum or revision");
  FUZZ_CHECK(ram.read<uint32_t>(t.rsdp + 16) == t.rsdt, "RSDP -> RSDT {:#x}", ram.read<uint32_t>(t.rsdp + 16));
  const uint32_t rsdt_length = check_table(ram, t.rsdt, "RSDT", t);
  FUZZ_CHECK(rsdt_length == 36 + 8, "RSDT length {}", rsdt_length);
  FUZZ_CHECK(ram.read<uint32_t>(t.rsdt + 36) == t.fadt && ram.read<uint32_t>(t.rsdt + 40) == t.madt, "RSDT entries");

  // FADT -> FACS, DSDT.
  const uint32_t fadt_length = check_table(ram, t.fadt, "FACP", t);
  FUZZ_CHECK(fadt_length == 276, "FADT length {}", fadt_length);
  FUZZ_CHECK(ram.read<uint32_t>(t.fadt + 36) == t.facs && ram.read<uint32_t>(t.fadt + 40) == t.dsdt, "FADT pointers");
  const uint64_t x_facs = ram.read<uint64_t>(t.fadt + 132), x_dsdt = ram.read<uint64_t>(t.fadt + 140);
  FUZZ_CHECK((x_facs == 0 || x_facs == t.facs) && (x_dsdt == 0 || x_dsdt == t.dsdt), "FADT X_ pointers");
  FUZZ_CHECK(ram.read<uint16_t>(t.fadt + 46) == 9, "SCI_INT");
  FUZZ_CHECK(ram.read<uint32_t>(t.fadt + 56) == 0x600 && ram.read<uint32_t>(t.fadt + 64) == 0x604 &&
                 ram.read<uint32_t>(t.fadt + 76) == 0x608,
             "PM blocks");
  FUZZ_CHECK(ram.read<uint8_t>(t.fadt + 88) == 4 && ram.read<uint8_t>(t.fadt + 89) == 2 &&
                 ram.read<uint8_t>(t.fadt + 91) == 4,
             "PM block lengths");
  FUZZ_CHECK(t.facs % 64 == 0 && t.facs >= t.rsdp && t.facs + 64 <= t.end, "FACS at {:#x}", t.facs);
  FUZZ_CHECK(std::memcmp(ram.data() + t.facs, "FACS", 4) == 0 && ram.read<uint32_t>(t.facs + 4) == 64, "FACS header");
  const uint32_t dsdt_length = check_table(ram, t.dsdt, "DSDT", t);
  const std::string_view aml(reinterpret_cast<const char*>(ram.data() + t.dsdt + 36), dsdt_length - 36);
  FUZZ_CHECK(aml.find("_S5_") != std::string_view::npos, "no \\_S5 in the DSDT");

  // MADT.
  const uint32_t madt_length = check_table(ram, t.madt, "APIC", t);
  FUZZ_CHECK(ram.read<uint32_t>(t.madt + 36) == 0xfee00000 && (ram.read<uint32_t>(t.madt + 40) & 1), "MADT header");
  uint32_t at = t.madt + 44;
  const uint32_t madt_end = t.madt + madt_length;
  unsigned cpu = 0, ioapics = 0, overrides = 0;
  while (at < madt_end) {
    FUZZ_CHECK(at + 2 <= madt_end, "MADT entry header past the end");
    const uint8_t type = ram.read<uint8_t>(at), length = ram.read<uint8_t>(at + 1);
    FUZZ_CHECK(length >= 2 && at + length <= madt_end, "MADT entry of type {} length {} at {:#x}", type, length, at);
    if (type == 0 || type == 9) {
      FUZZ_CHECK(cpu < topology.max_cpus() && ioapics == 0, "a processor entry for CPU {} of {}", cpu, topology.max_cpus());
      const uint32_t apic_id = topology.apic_id(cpu);
      uint32_t uid, id, flags;
      if (type == 0) {
        FUZZ_CHECK(length == 8, "local APIC entry length {}", length);
        uid = ram.read<uint8_t>(at + 2), id = ram.read<uint8_t>(at + 3), flags = ram.read<uint32_t>(at + 4);
        FUZZ_CHECK(apic_id <= 254, "CPU {} (APIC ID {:#x}) has a local APIC entry", cpu, apic_id);
      } else {
        FUZZ_CHECK(length == 16, "x2APIC entry length {}", length);
        id = ram.read<uint32_t>(at + 4), flags = ram.read<uint32_t>(at + 8), uid = ram.read<uint32_t>(at + 12);
        FUZZ_CHECK(apic_id > 254, "CPU {} (APIC ID {:#x}) has an x2APIC entry", cpu, apic_id);
      }
      FUZZ_CHECK(uid == (type == 0 ? (cpu & 0xff) : cpu) && id == apic_id, "CPU {}: UID {}, APIC ID {:#x} (expected {:#x})",
                 cpu, uid, id, apic_id);
      FUZZ_CHECK((flags & 1) == (cpu < topology.cpus() ? 1u : 0u), "CPU {} of {} present: flags {:#x}", cpu,
                 topology.cpus(), flags);
      ++cpu;
    } else if (type == 1) {
      FUZZ_CHECK(length == 12 && ram.read<uint8_t>(at + 2) == 0 && ram.read<uint32_t>(at + 4) == 0xfec00000 &&
                     ram.read<uint32_t>(at + 8) == 0,
                 "I/O APIC entry");
      ++ioapics;
    } else if (type == 2) {
      FUZZ_CHECK(length == 10 && ram.read<uint8_t>(at + 2) == 0, "interrupt source override");
      const uint8_t irq = ram.read<uint8_t>(at + 3);
      const uint32_t gsi = ram.read<uint32_t>(at + 4);
      const uint16_t flags = ram.read<uint16_t>(at + 8);
      if (irq == 0) FUZZ_CHECK(gsi == 2, "IRQ 0 -> GSI {}", gsi);
      else FUZZ_CHECK((irq == 5 || irq == 9 || irq == 10 || irq == 11) && gsi == irq && (flags & 0xf) == 0xd,
                      "override IRQ {} -> GSI {}, flags {:#x}", irq, gsi, flags);
      ++overrides;
    } else {
      FUZZ_CHECK(false, "MADT entry type {}", type);
    }
    at += length;
  }
  FUZZ_CHECK(at == madt_end, "MADT entries end at {:#x}, the table at {:#x}", at, madt_end);
  FUZZ_CHECK(cpu == topology.max_cpus() && ioapics == 1 && overrides == 5, "{} CPUs of {}, {} I/O APICs, {} overrides",
             cpu, topology.max_cpus(), ioapics, overrides);

  // No two tables overlap.
  const Range ranges[] = {{t.rsdp, t.rsdp + 20, "RSDP"},
                          {t.rsdt, t.rsdt + rsdt_length, "RSDT"},
                          {t.fadt, t.fadt + fadt_length, "FADT"},
                          {t.facs, t.facs + 64, "FACS"},
                          {t.dsdt, t.dsdt + dsdt_length, "DSDT"},
                          {t.madt, madt_end, "MADT"}};
  for (const Range& a : ranges)
    for (const Range& b : ranges)
      if (&a != &b) FUZZ_CHECK(a.end <= b.start || b.end <= a.start, "{} overlaps {}", a.name, b.name);
  return 0;
}
