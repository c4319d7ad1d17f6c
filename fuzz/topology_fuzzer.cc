// SPDX-License-Identifier: GPL-2.0-or-later
// -smp and -cpu parsing, the APIC-ID layout and CPUID enumeration.
// Input: "SMP\nCPU" (a missing line means "1" / "qemu64").
// Invariants:
// - a ConfigError is the only way to refuse an argument;
// - to_smp_arg() parses back to the same topology;
// - index -> coordinates -> index and coordinates -> APIC ID -> coordinates
//   agree for every CPU up to maxcpus, APIC ID -> index for the present
//   ones (and for no hot-pluggable one), and APIC IDs grow
//   with the index (consumers enumerate, but QEMU's layout is monotonic);
// - CpuidModel::enumerate() lists exactly what query() answers, on the
//   first, a middle and the last vCPU, and leaf 1 / 0xB carry its APIC ID.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/cpuid.h"
#include "fuzz/fuzz_check.h"

using namespace topolab;

namespace {

void check_topology(const Topology& t) {
  Topology again = Topology::parse(t.to_smp_arg());
  FUZZ_CHECK(again.cpus() == t.cpus() && again.max_cpus() == t.max_cpus(), "{} round trip", t.to_smp_arg());
  FUZZ_CHECK(again.to_smp_arg() == t.to_smp_arg(), "{} vs {}", again.to_smp_arg(), t.to_smp_arg());
  FUZZ_CHECK(t.cpus() >= 1 && t.cpus() <= t.max_cpus() && t.max_cpus() <= Topology::kMaxCpus, "{}", t.to_smp_arg());
  uint32_t previous = 0;
  for (unsigned i = 0; i < t.max_cpus(); ++i) {
    CpuCoords c = t.coords_of(i);
    FUZZ_CHECK(t.index_of(c) == i, "index {}", i);
    uint32_t id = t.apic_id_of(c);
    FUZZ_CHECK(t.coords_of_apic_id(id) == c, "APIC ID {:#x} of index {}", id, i);
    // Only present CPUs have an index by APIC ID; hot-pluggable ones do not.
    const std::optional<unsigned> index = t.index_of_apic_id(id);
    FUZZ_CHECK(i < t.cpus() ? index == i : !index, "APIC ID {:#x} of index {} ({} present)", id, i, t.cpus());
    FUZZ_CHECK(i == 0 || id > previous, "APIC ID {:#x} after {:#x}", id, previous);
    previous = id;
  }
  // An ID in a gap or past the hierarchy maps to nothing.
  FUZZ_CHECK(!t.index_of_apic_id(previous + 1), "APIC ID past the last one");
}

void check_cpuid(const CpuidModel& m, unsigned cpu) {
  const uint32_t apic_id = m.topology().apic_id(cpu);
  for (const CpuidModel::Entry& e : m.enumerate(cpu)) {
    FUZZ_CHECK(m.query(cpu, e.leaf, e.subleaf) == e.regs, "cpu {} leaf {:#x}.{}", cpu, e.leaf, e.subleaf);
    if (e.leaf == 1) FUZZ_CHECK(e.regs.ebx >> 24 == (apic_id & 0xff), "cpu {} CPUID.01H:EBX[31:24]", cpu);
    if (e.leaf == 0xb) FUZZ_CHECK(e.regs.edx == apic_id, "cpu {} CPUID.0BH:EDX (x2APIC ID)", cpu);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nl = input.find('\n');
  std::string smp(input.substr(0, nl));
  std::string cpu = nl == std::string_view::npos ? "qemu64" : std::string(input.substr(nl + 1));
  if (smp.empty()) smp = "1";
  try {
    Topology t = Topology::parse(smp);
    check_topology(t);
    CpuidModel m(t, parse_cpu(cpu));
    check_cpuid(m, 0);
    check_cpuid(m, t.cpus() / 2);
    check_cpuid(m, t.cpus() - 1);
  } catch (const ConfigError&) {
  }
  return 0;
}
