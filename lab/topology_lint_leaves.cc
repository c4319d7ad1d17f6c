// SPDX-License-Identifier: GPL-2.0-or-later
// The lint's leaf-consistency patterns: APIC IDs, the count fields, the AMD
// topology extension and the hybrid leaf. Each compares leaves with each
// other, so it works on a foreign dump as well as on topolab's leaves.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lab/topology_lint.h"

namespace topolab {

namespace {

constexpr uint32_t kMaxXApicId = 0xFE;

void add_views(Finding& f, const LintInput& in, std::string (*describe)(const ConsumerView&)) {
  for (const auto& v : in.views) f.inferences.push_back({consumer_name(v.consumer), describe(v)});
}

std::string topology_of(const ConsumerView& v) { return summarize_topology(v); }

// The extended-topology leaf Linux 6.x walks (0x1F, else 0xB), with the
// levels it accepts; empty when neither exists.
struct ExtLeaf {
  uint32_t leaf = 0;
  std::vector<ExtTopologyLevel> levels;
};
ExtLeaf ext_leaf_of(const RawCpuLeaves& l) {
  uint32_t max = l.max_basic_leaf();
  for (uint32_t leaf : {0x1Fu, 0xBu}) {
    if (max < leaf) continue;
    auto levels = read_ext_topology(l, leaf, ExtStopRule::CountOrTypeZero);
    if (!levels.empty()) return {leaf, levels};
  }
  return {};
}

std::string hex_leaf(uint32_t leaf) { return fmt::format("CPUID.{:02X}H", leaf); }

// The x2APIC ID each CPU's leaves carry, checked against each other and
// against the APIC itself when topolab built the machine.
void check_x2apic_ids(const LintInput& in, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  std::vector<std::string> problems;
  std::map<uint32_t, unsigned> first_cpu_of;
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
    const RawCpuLeaves& l = raw.cpus[cpu];
    ExtLeaf ext = ext_leaf_of(l);
    if (ext.levels.empty()) continue;
    uint32_t id = ext.levels.front().x2apic_id;
    for (const auto& lv : ext.levels)
      if (lv.x2apic_id != id)
        problems.push_back(fmt::format("CPU {}: {} subleaf {} EDX {:#x}, subleaf 0 {:#x}", cpu, hex_leaf(ext.leaf), lv.subleaf, lv.x2apic_id, id));
    if (ext.leaf == 0x1F && l.get(0xB, 0).edx != id)
      problems.push_back(fmt::format("CPU {}: CPUID.0BH EDX {:#x}, CPUID.1FH EDX {:#x}", cpu, l.get(0xB, 0).edx, id));
    if ((id & 0xff) != l.get(1).ebx >> 24)
      problems.push_back(fmt::format("CPU {}: EDX {:#x}, CPUID.01H:EBX[31:24] {:#x}", cpu, id, l.get(1).ebx >> 24));
    if (raw.topology && raw.topology->apic_id(cpu) != id)
      problems.push_back(fmt::format("CPU {}: EDX {:#x}, its APIC (MADT) {:#x}", cpu, id, raw.topology->apic_id(cpu)));
    if (auto [it, added] = first_cpu_of.try_emplace(id, cpu); !added)
      problems.push_back(fmt::format("CPU {} and CPU {} both report x2APIC ID {:#x}", it->second, cpu, id));
  }
  if (problems.empty()) return;
  Finding f = new_finding("x2apic-id-mismatch", "leaf 0xB/0x1F EDX is not the CPU's x2APIC ID",
            {"CPUID.0BH:EDX", "CPUID.1FH:EDX", "CPUID.01H:EBX[31:24]"});
  f.detail = fmt::format("{}{}", problems.front(), problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : "");
  add_views(f, in, topology_of);
  f.symptom = "Linux 6.x: [Firmware Bug]: CPUID leaf 0xb subleaf N APIC ID mismatch, and CPU N: APIC ID mismatch. "
              "CPUID: ... APIC: ...; Linux 4.x places the CPU by the wrong ID; hwloc drops its x86 topology when "
              "two IDs repeat";
  f.seen_in = "cloud-hypervisor #7087; oxidecomputer/propolis #939 (leaf 0xB EDX left 0)";
  out.push_back(std::move(f));
}

// The three ways consumers end the walk of 0xB/0x1F must end it at the same
// subleaf (SDM: the first invalid level has type 0 and EAX = EBX = 0).
void check_stop_rules(const LintInput& in, std::vector<Finding>& out) {
  const RawCpuLeaves& l = in.raw->cpus[0];
  for (uint32_t leaf : {0xBu, 0x1Fu}) {
    if (l.max_basic_leaf() < leaf) continue;
    size_t linux6 = read_ext_topology(l, leaf, ExtStopRule::CountOrTypeZero).size();
    size_t by_type = read_ext_topology(l, leaf, ExtStopRule::TypeZero).size();
    size_t hwloc = read_ext_topology(l, leaf, ExtStopRule::EaxEbxZero).size();
    bool smt_first = ((l.get(leaf, 0).ecx >> 8) & 0xff) == 1;
    bool empty_1f = leaf == 0x1F && linux6 == 0 && by_type == 0 && hwloc == 0;
    bool differ = linux6 != by_type || by_type != hwloc;
    if (!empty_1f && !differ && (by_type == 0 || smt_first)) continue;
    Finding f = new_finding(empty_1f ? "empty-leaf-1f" : "ext-topology-stop-rules",
              empty_1f ? "the maximum leaf reaches 0x1F but leaf 0x1F is empty"
                       : fmt::format("consumers stop walking leaf {:#x} at different subleaves", leaf),
              {hex_leaf(leaf) + ":EAX/EBX/ECX[15:8]", "CPUID.00H:EAX"});
    f.detail = empty_1f ? "subleaf 0 has type 0 and count 0: there is no SMT level to start from"
                        : fmt::format("subleaf 0 type {}; levels accepted: Linux 6.x {}, Linux 4.x/edk2 {}, hwloc {}",
                                      (l.get(leaf, 0).ecx >> 8) & 0xff, linux6, by_type, hwloc);
    f.inferences = {{"linux-6.x", fmt::format("{} levels (stops on a zero count or type)", linux6)},
                    {"linux-4.x", leaf == 0xB ? fmt::format("{} levels (stops on type 0)", by_type) : "does not read 0x1F"},
                    {"hwloc", fmt::format("{} levels (stops on EAX = EBX = 0)", hwloc)},
                    {"edk2", fmt::format("{} levels (stops on type 0; asserts subleaf 0 is SMT)", by_type)}};
    f.symptom = empty_1f ? "edk2 before PR #4908: ASSERT (Index != 0) || (LevelType == 0x01) in "
                           "GetProcessorLocation2ByApicId; hwloc takes 0x1F, finds nothing and falls back to leaf 1/4"
                         : "each consumer builds a different hierarchy from the same leaf; edk2 ASSERTs when subleaf 0 is not SMT";
    f.seen_in = "edk2 #7797; edk2 #9439 (Bugzilla 4598)";
    out.push_back(std::move(f));
  }
}

// More than 255 CPUs, or an APIC ID above 254, needs x2APIC: CPUID must
// say so, and the MADT must list those CPUs as x2APIC entries (type 9),
// since the local APIC entry has a one-byte ID. The MADT is not CPUID; this
// checks CPUID's half.
void check_x2apic_needed(const LintInput& in, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  uint32_t highest = 0;
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
    ExtLeaf ext = ext_leaf_of(raw.cpus[cpu]);
    uint32_t id = raw.topology ? raw.topology->apic_id(cpu) : ext.levels.empty() ? cpu : ext.levels.front().x2apic_id;
    highest = std::max({highest, id, cpu});
  }
  const RawCpuLeaves& l = raw.cpus[0];
  CpuIdentity id = identify(l);
  bool leaf_b = id.max_basic >= 0xB && (l.get(0xB, 0).ebx & 0xffff) != 0;
  if (highest <= kMaxXApicId || (id.x2apic && leaf_b)) return;
  Finding f = new_finding("x2apic-needed", "APIC IDs above 254 without x2APIC in CPUID", {"CPUID.01H:ECX[21]", "CPUID.0BH", "ACPI MADT type 9"});
  f.detail = fmt::format("{} CPUs, highest APIC ID {:#x}; CPUID.01H:ECX[21] x2APIC {}, leaf 0xB {}", raw.cpus.size(), highest,
                         id.x2apic ? "set" : "clear", leaf_b ? "present" : "missing");
  add_views(f, in, topology_of);
  f.symptom = "CPUID.01H:EBX[31:24] wraps at 256, so consumers reading it merge CPUs; Linux cannot bring up CPUs it "
              "cannot address in xAPIC mode, and needs x2APIC MADT entries for them";
  f.seen_in = "the issue's list: more than 255 vCPUs without x2APIC MADT entries";
  out.push_back(std::move(f));
}

}  // namespace

void check_apic_id_patterns(const LintInput& in, std::vector<Finding>& out) {
  check_x2apic_ids(in, out);
  check_stop_rules(in, out);
  check_x2apic_needed(in, out);
}

}  // namespace topolab
