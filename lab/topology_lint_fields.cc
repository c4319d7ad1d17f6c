// SPDX-License-Identifier: GPL-2.0-or-later
// The lint's count-field, AMD and hybrid patterns: fields that restate the
// APIC-ID layout of leaf 0xB/0x1F (leaf 1 EBX[23:16], leaf 4 EAX[31:26] and
// [25:14]) must agree with it, since consumers without 0xB use them instead.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lab/topology_lint.h"

namespace topolab {

namespace {

enum : uint32_t { kTypeSmt = 1 };

// The APIC-ID layout the leaves claim: Linux 6.x's walk of 0x1F, else 0xB.
struct Layout {
  uint32_t leaf = 0;
  std::vector<ExtTopologyLevel> levels;
  unsigned smt_shift() const { return levels.front().type == kTypeSmt ? levels.front().shift : 0; }
  unsigned package_shift() const { return levels.back().shift; }
};

std::optional<Layout> layout_of(const RawCpuLeaves& l) {
  for (uint32_t leaf : {0x1Fu, 0xBu}) {
    if (l.max_basic_leaf() < leaf) continue;
    auto levels = read_ext_topology(l, leaf, ExtStopRule::CountOrTypeZero);
    if (!levels.empty()) return Layout{leaf, levels};
  }
  return std::nullopt;
}

unsigned lay_smt_shift(const std::optional<Layout>& lay) { return lay ? lay->smt_shift() : 0; }

std::string views_line(const ConsumerView& v) { return summarize_topology(v); }

Finding make(std::string id, std::string title, std::vector<std::string> leaves, std::string detail, const LintInput& in) {
  Finding f = new_finding(std::move(id), std::move(title), std::move(leaves));
  f.detail = std::move(detail);
  for (const auto& v : in.views) f.inferences.push_back({consumer_name(v.consumer), views_line(v)});
  return f;
}

// A field that saturated (all ones) is as good as hardware with that many
// CPUs can do; software must read 0xB/0x1F then.
bool saturated_ok(unsigned value, unsigned field_max, unsigned want_bits) {
  return value == field_max && want_bits >= bit_width_for_count(field_max);
}

void check_leaf1_count(const LintInput& in, const Layout& lay, std::vector<Finding>& out) {
  const RawCpuLeaves& l = in.raw->cpus[0];
  unsigned logical = (l.get(1).ebx >> 16) & 0xff;
  bool htt = l.get(1).edx & (1u << 28);
  unsigned want = lay.package_shift();
  bool bad = htt ? bit_width_for_count(logical) != want && !saturated_ok(logical, 0xff, want) : want > 0;
  if (!bad) return;
  Finding f = make("leaf1-logical-count", "leaf 1 EBX[23:16] does not match the APIC-ID layout of leaf 0xB/0x1F",
                   {"CPUID.01H:EBX[23:16]", "CPUID.01H:EDX[28]", fmt::format("CPUID.{:02X}H", lay.leaf)},
                   fmt::format("EBX[23:16] = {} with HTT {} spans {} APIC-ID bits; leaf {:#x} puts the package at bit {}",
                               logical, htt ? "set" : "clear", htt ? bit_width_for_count(logical) : 0, lay.leaf, want),
                   in);
  f.symptom = "consumers without 0xB place packages by leaf 1: hwloc's legacy_max_log_proc, Linux's parse_legacy() "
              "and edk2's GetProcessorLocationByApicId() cut the APIC ID at the wrong bit";
  f.seen_in = "cloud-hypervisor PR #6146 (HTT clear: lstopo crashed); QEMU fixed the field in 10.1";
  out.push_back(std::move(f));
}

void check_leaf4_counts(const LintInput& in, const Layout& lay, std::vector<Finding>& out) {
  const RawCpuLeaves& l = in.raw->cpus[0];
  CpuIdentity id = identify(l);
  uint32_t leaf = id.amd ? 0x8000001D : 0x4;
  if (id.amd ? !id.topoext : id.max_basic < 4) return;
  std::set<unsigned> boundaries{0};
  for (const auto& lv : lay.levels) boundaries.insert(lv.shift);
  // AMD has no 0x1F: its nodes (dies) are in 0x8000001E ECX[10:8], each a
  // power-of-two slice of the package's APIC-ID field.
  if (id.amd && id.max_extended >= 0x8000001E) {
    unsigned node_bits = bit_width_for_count(((l.get(0x8000001E).ecx >> 8) & 7) + 1);
    boundaries.insert(lay.package_shift() - std::min(node_bits, lay.package_shift()));
  }
  std::vector<std::string> problems;
  for (uint32_t sub = 0; sub < 16; ++sub) {
    uint32_t eax = l.get(leaf, sub).eax;
    if ((eax & 0x1f) == 0) break;
    unsigned sharing = ((eax >> 14) & 0xfff) + 1, cores = ((eax >> 26) & 0x3f) + 1;
    unsigned core_bits = lay.package_shift() - std::min(lay.smt_shift(), lay.package_shift());
    if (!id.amd && bit_width_for_count(cores) != core_bits && !saturated_ok(cores - 1, 0x3f, core_bits) && sub == 0)
      problems.push_back(fmt::format("EAX[31:26] + 1 = {} core IDs ({} bits), the layout has {} core bits", cores,
                                     bit_width_for_count(cores), core_bits));
    if (!boundaries.count(bit_width_for_count(sharing)))
      problems.push_back(fmt::format("subleaf {} (L{}) EAX[25:14] + 1 = {} sharers ({} bits) ends at no level of the layout "
                                     "(levels end at bits {})", sub, (eax >> 5) & 7, sharing, bit_width_for_count(sharing),
                                     fmt::join(boundaries, ", ")));
  }
  if (problems.empty()) return;
  Finding f = make("leaf4-counts", fmt::format("leaf {:#x} counts do not match the APIC-ID layout", leaf),
                   {fmt::format("CPUID.{:02X}H:EAX[31:26]", leaf), fmt::format("CPUID.{:02X}H:EAX[25:14]", leaf),
                    fmt::format("CPUID.{:02X}H", lay.leaf)},
                   fmt::format("{}", fmt::join(problems, "; ")), in);
  f.symptom = "Linux and hwloc take the cache's sharers from EAX[25:14] and, without 0xB, the cores from EAX[31:26]: "
              "a count that ends inside a level splits cores or packages between caches";
  f.seen_in = "QEMU before 9.1 used real counts here (docs/deviations.md)";
  out.push_back(std::move(f));
}

// Every instance of a level must hold no more CPUs than its count says; a
// VMM that numbers CPUs densely when a count is not a power of two packs
// two sockets' CPUs into one field.
// Both leaves are checked: Linux 4.x and edk2 read 0xB even where 0x1F exists.
void check_id_gaps(const LintInput& in, const Layout& lay, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  std::vector<std::string> problems;
  std::vector<Layout> layouts{lay};
  if (lay.leaf == 0x1F) {
    auto b = read_ext_topology(raw.cpus[0], 0xB, ExtStopRule::CountOrTypeZero);
    if (!b.empty()) layouts.push_back({0xB, b});
  }
  for (const Layout& one : layouts)
    for (const auto& lv : one.levels) {
      std::map<uint64_t, unsigned> members;
      for (const auto& cpu : raw.cpus) ++members[cpu.get(one.leaf, 0).edx >> lv.shift];
      for (auto [instance, n] : members)
        if (n > lv.count) {
          problems.push_back(fmt::format("leaf {:#x}: APIC IDs >> {} = {:#x} hold {} CPUs, but subleaf {} counts {}",
                                         one.leaf, lv.shift, instance, n, lv.subleaf, lv.count));
          break;
        }
    }
  if (problems.empty()) return;
  bool non_power = std::any_of(lay.levels.begin(), lay.levels.end(), [](const auto& lv) { return lv.count & (lv.count - 1); });
  Finding f = make("apic-id-layout", non_power ? "a non-power-of-two count without the APIC-ID gaps it needs"
                                               : "leaf 0xB/0x1F counts fewer CPUs than its APIC-ID fields hold",
                   {"CPUID.0BH/1FH:EAX[4:0]", "CPUID.0BH/1FH:EBX[15:0]"},
                   fmt::format("{}", fmt::join(problems, "; ")), in);
  f.symptom = "every consumer cuts APIC IDs at the shifts: CPUs of one socket land in another, or a level's count "
              "(Linux's __max_threads_per_core, hwloc's) is wrong";
  f.seen_in = "the issue's list (non-power-of-two counts need gaps); QEMU 7.2 counts one die in 0xB (docs/deviations.md)";
  out.push_back(std::move(f));
}

}  // namespace

void check_count_fields(const LintInput& in, std::vector<Finding>& out) {
  auto lay = layout_of(in.raw->cpus[0]);
  if (!lay) return;
  check_leaf1_count(in, *lay, out);
  check_leaf4_counts(in, *lay, out);
  check_id_gaps(in, *lay, out);
}

void check_amd_patterns(const LintInput& in, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  CpuIdentity id = identify(raw.cpus[0]);
  if (!id.amd || raw.cpus.size() < 2) return;
  auto lay = layout_of(raw.cpus[0]);
  unsigned smt_from_b = lay && lay->levels.front().type == kTypeSmt ? lay->levels.front().count : 1;
  unsigned smt_wanted = raw.topology ? raw.topology->threads_per_core() : smt_from_b;
  if (!id.topoext) {
    if (smt_wanted < 2) return;
    Finding f = make("amd-without-topoext", "an AMD CPU with SMT threads but without TOPOEXT",
                     {"CPUID.80000001H:ECX[22]", "CPUID.8000001EH", "CPUID.0BH"},
                     fmt::format("{} threads per core, but without TOPOEXT Linux reads neither 0x8000001E nor 0xB", smt_wanted), in);
    f.symptom = "Linux and hwloc see every thread as a core (no SMT domain); with leaf 1 HTT clear, one socket per vCPU";
    f.seen_in = "kubevirt #1994; oxidecomputer/propolis #940; QEMU 7.2's TCG drops TOPOEXT from EPYC (docs/deviations.md)";
    out.push_back(std::move(f));
    return;
  }
  // With TOPOEXT, 0x8000001E must carry each CPU's APIC ID, core ID and
  // threads per core; past core 255 the 8-bit core ID must not wrap.
  std::vector<std::string> problems;
  bool past_255 = false;
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> core_of;  // (package, EBX[7:0]) -> Linux's core
  const ConsumerView* linux6 = nullptr;
  for (const auto& v : in.views)
    if (v.consumer == Consumer::Linux6) linux6 = &v;
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
    CpuidRegs e = id.max_extended >= 0x8000001E ? raw.cpus[cpu].get(0x8000001E) : CpuidRegs{};
    auto own = layout_of(raw.cpus[cpu]);
    uint32_t apic = raw.topology ? raw.topology->apic_id(cpu) : own ? own->levels.front().x2apic_id : raw.cpus[cpu].get(1).ebx >> 24;
    if (e.eax != apic) problems.push_back(fmt::format("CPU {}: EAX {:#x}, APIC ID {:#x}", cpu, e.eax, apic));
    if (((e.ebx >> 8) & 0xff) + 1 < smt_wanted)
      problems.push_back(fmt::format("CPU {}: EBX[15:8] + 1 = {} threads per core, {} wanted", cpu, ((e.ebx >> 8) & 0xff) + 1, smt_wanted));
    if (linux6) {
      uint64_t pkg = linux6->keys[0][cpu], core = linux6->keys[3][cpu];
      auto [it, added] = core_of.try_emplace({pkg, e.ebx & 0xff}, core);
      if (!added && it->second != core) {
        problems.push_back(fmt::format("CPU {}: core ID EBX[7:0] = {} repeats another core of its package", cpu, e.ebx & 0xff));
        // An 8-bit core ID can only wrap once the package has 256 cores.
        past_255 |= (apic >> lay_smt_shift(lay)) > 0xff;
      }
    }
  }
  if (problems.empty()) return;
  Finding f = make(past_255 ? "amd-8000001e-wraps" : "amd-topoext-bad-8000001e",
                   past_255 ? "0x8000001E core IDs repeat within a package (zeroed or wrapped past core 255)"
                            : "an AMD CPU with TOPOEXT but a zero or wrong 0x8000001E",
                   {"CPUID.80000001H:ECX[22]", "CPUID.8000001EH:EAX", "CPUID.8000001EH:EBX[7:0]", "CPUID.8000001EH:EBX[15:8]"},
                   fmt::format("{}{}", problems.front(), problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : ""),
                   in);
  f.symptom = "Linux 6.x: [Firmware Bug]: CPU N: APIC ID mismatch. CPUID: ... APIC: ...; without 0xB SMT is lost "
              "(threads per core 1); hwloc and Linux 4.x merge cores that share a core ID";
  f.seen_in = "oxidecomputer/propolis #940; kubevirt #1994; the issue's list (0x8000001E zeroed past core 255)";
  out.push_back(std::move(f));
}

void check_hybrid(const LintInput& in, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  CpuIdentity id = identify(raw.cpus[0]);
  if (!id.hybrid) return;
  std::vector<unsigned> missing;
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu)
    if (id.max_basic < 0x1A || (raw.cpus[cpu].get(0x1A).eax >> 24) == 0) missing.push_back(cpu);
  if (missing.empty()) return;
  Finding f = make("hybrid-without-1a", "a hybrid part (CPUID.07H:EDX[15]) without a core type in leaf 0x1A",
                   {"CPUID.07H:EDX[15]", "CPUID.1AH:EAX[31:24]", "CPUID.00H:EAX"},
                   fmt::format("max basic leaf {:#x}; {} of {} CPUs have no core type", id.max_basic, missing.size(), raw.cpus.size()), in);
  f.symptom = "Linux reads no core type (topo.cpu_type 0): hybrid perf PMUs and ITMT do not know P- from E-cores; "
              "hwloc builds no CPU kinds (lstopo shows one kind)";
  f.seen_in = "projectacrn/acrn-hypervisor #8608 (the per-core-type leaves)";
  out.push_back(std::move(f));
}

}  // namespace topolab
