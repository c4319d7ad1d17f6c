// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_report.h"

#include "base/text_buffer.h"

#include <algorithm>
#include <fstream>
#include <string_view>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace topolab {


namespace {

// Lowercase hex, zero-padded to `digits`: the dump has 164K lines at 4,096
// vCPUs, and formatting them by hand keeps it well under 100 ms.
char* put_hex(char* at, uint32_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i, value >>= 4) at[i] = kDigits[value & 0xf];
  return at + digits;
}

char* put_text(char* at, std::string_view text) { return std::copy(text.begin(), text.end(), at); }

}  // namespace

std::string format_cpuid_raw(const CpuidModel& model) {
  std::string out;
  char line[96];
  for (unsigned cpu = 0; cpu < model.topology().cpus(); ++cpu) {
    out += fmt::format("CPU {}:\n", cpu);
    for (const auto& e : model.enumerate(cpu)) {
      // "   0x00000004 0x00: eax=0x1c004121 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000"
      char* at = put_hex(put_text(line, "   0x"), e.leaf, 8);
      at = put_hex(put_text(at, " 0x"), e.subleaf, 2);
      at = put_hex(put_text(at, ": eax=0x"), e.regs.eax, 8);
      at = put_hex(put_text(at, " ebx=0x"), e.regs.ebx, 8);
      at = put_hex(put_text(at, " ecx=0x"), e.regs.ecx, 8);
      at = put_hex(put_text(at, " edx=0x"), e.regs.edx, 8);
      *at++ = '\n';
      out.append(line, at);
    }
  }
  return out;
}

void write_hwloc_cpuid_dir(const CpuidModel& model, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  auto write = [](const std::filesystem::path& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw ConfigError(fmt::format("cannot write {}", path.string()));
  };
  // pu files of an earlier, larger dump would add CPUs that are not there.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 2 && name.starts_with("pu") && name.find_first_not_of("0123456789", 2) == std::string::npos)
      std::filesystem::remove(entry.path(), ec);
  }
  write(dir / "hwloc-cpuid-info", "Architecture: x86\n");
  for (unsigned cpu = 0; cpu < model.topology().cpus(); ++cpu) {
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "# CPUID dump of vCPU {} written by topolab\n", cpu);
    for (const auto& e : model.enumerate(cpu)) {
      // Mask 1: only EAX selects the entry; 5: EAX and ECX (subleaf leaves).
      bool sub = CpuidModel::has_subleaves(e.leaf);
      fmt::format_to(std::back_inserter(out), "{} {:x} 0 {:x} 0 => {:x} {:x} {:x} {:x}\n", sub ? 5 : 1, e.leaf,
                     sub ? e.subleaf : 0, e.regs.eax, e.regs.ebx, e.regs.ecx, e.regs.edx);
    }
    write(dir / fmt::format("pu{}", cpu), fmt::to_string(out));
  }
}

namespace {

uint32_t apic_id_seen_by(const CpuidModel& m, unsigned cpu) {
  // Linux takes the x2APIC ID from 0xB when the leaf exists.
  return m.max_basic_leaf() >= 0xB ? m.query(cpu, 0xB, 0).edx : m.query(cpu, 1, 0).ebx >> 24;
}

std::vector<std::vector<unsigned>> group_by(const CpuidModel& m, unsigned shift) {
  std::map<uint32_t, std::vector<unsigned>> groups;
  for (unsigned cpu = 0; cpu < m.topology().cpus(); ++cpu) groups[apic_id_seen_by(m, cpu) >> shift].push_back(cpu);
  std::vector<std::vector<unsigned>> out;
  for (auto& [id, cpus] : groups) out.push_back(std::move(cpus));
  return out;
}

std::vector<DecodedCache> decode_amd_legacy_caches(const CpuidModel& m) {
  CpuidRegs l1 = m.query(0, 0x80000005, 0), l2l3 = m.query(0, 0x80000006, 0);
  const Topology& t = m.topology();
  auto per_core = group_by(m, t.core_offset());
  auto per_package = group_by(m, t.package_offset());
  std::vector<DecodedCache> caches;
  caches.push_back({1, "d", uint64_t(l1.ecx >> 24) << 10, (l1.ecx >> 16) & 0xff, t.threads_per_core(), per_core, ""});
  caches.push_back({1, "i", uint64_t(l1.edx >> 24) << 10, (l1.edx >> 16) & 0xff, t.threads_per_core(), per_core, ""});
  caches.push_back({2, "", uint64_t(l2l3.ecx >> 16) << 10, 0, t.threads_per_core(), per_core, ""});
  if (l2l3.edx) caches.push_back({3, "", uint64_t(l2l3.edx >> 18) << 19, 0, t.threads_per_package(), per_package, ""});
  return caches;
}

}  // namespace

std::vector<DecodedCache> decode_caches_as_linux(const CpuidModel& m) {
  bool amd = m.cpu().vendor() == Vendor::Amd;
  if (amd && !m.has_topoext()) {
    if (m.max_extended_leaf() < 0x80000006) return {};
    return decode_amd_legacy_caches(m);
  }
  uint32_t leaf = amd ? 0x8000001D : 0x4;
  // A leaf past the maximum answers with other data: there is none to read.
  if (amd ? m.max_extended_leaf() < leaf : m.max_basic_leaf() < leaf) return {};
  // Linux reads the leaf on every CPU (a hybrid part's core types report
  // different caches); caches of one geometry and sharing are one entry,
  // its instances the CPUs whose `apicid >> ceil_log2(n)` is equal.
  std::vector<DecodedCache> caches;
  std::vector<std::map<uint32_t, size_t>> instances;  // per entry: cache id -> group
  for (unsigned cpu = 0; cpu < m.topology().cpus(); ++cpu) {
    uint32_t apic_id = apic_id_seen_by(m, cpu);
    for (uint32_t sub = 0; sub < 16; ++sub) {
      CpuidRegs r = m.query(cpu, leaf, sub);
      unsigned type = r.eax & 0x1f;
      if (type == 0) break;
      DecodedCache c;
      c.level = (r.eax >> 5) & 7;
      c.kind = type == 1 ? "d" : type == 2 ? "i" : "";
      c.ways = (r.ebx >> 22) + 1;
      c.size = uint64_t(c.ways) * (((r.ebx >> 12) & 0x3ff) + 1) * ((r.ebx & 0xfff) + 1) * (uint64_t(r.ecx) + 1);
      c.sharing_ids = ((r.eax >> 14) & 0xfff) + 1;
      auto same = [&](const DecodedCache& o) {
        return o.level == c.level && o.kind == c.kind && o.size == c.size && o.ways == c.ways &&
               o.sharing_ids == c.sharing_ids;
      };
      size_t entry = std::find_if(caches.begin(), caches.end(), same) - caches.begin();
      if (entry == caches.size()) {
        caches.push_back(std::move(c));
        instances.emplace_back();
      }
      DecodedCache& e = caches[entry];
      std::string letter = kind_letter(m.topology().core_type(cpu));
      if (m.is_hybrid() && e.core_kinds.find(letter) == std::string::npos) e.core_kinds += e.core_kinds.empty() ? letter : "+" + letter;
      uint32_t id = apic_id >> bit_width_for_count(e.sharing_ids);
      auto [it, fresh] = instances[entry].try_emplace(id, e.groups.size());
      if (fresh) e.groups.emplace_back();
      e.groups[it->second].push_back(cpu);
    }
  }
  // Leaf order, with the core types' caches of one level side by side.
  auto rank = [](const DecodedCache& c) { return c.level * 4 + (c.kind == "d" ? 0 : c.kind == "i" ? 1 : 2); };
  std::stable_sort(caches.begin(), caches.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return caches;
}

LlcView linux_llc(const CpuidModel& m, const std::vector<DecodedCache>& caches) {
  auto find = [&](unsigned level) -> const DecodedCache* {
    for (const auto& c : caches)
      if (c.level == level && c.kind != "i") return &c;
    return nullptr;
  };
  // Without an LLC ID, Linux's match_llc() falls back to the die.
  LlcView fallback{group_by(m, m.topology().package_offset() > m.topology().die_offset() ? m.topology().die_offset()
                                                                                          : m.topology().package_offset()),
                   "the die: no LLC reported"};
  const CpuModelDef& model = m.cpu().model;
  if (m.cpu().vendor() == Vendor::Amd) {
    // cacheinfo_amd_init_llc_id(): nothing without an L3 in 0x80000006; the
    // node before family 0x17; Zen 1 hard-codes the 8-thread core complex
    // (APIC ID bit 3 up); later families read the L3 of 0x8000001D.
    if (m.max_extended_leaf() < 0x80000006 || m.query(0, 0x80000006, 0).edx == 0) return fallback;
    if (model.family < 0x17) return {fallback.groups, "the node (die): AMD before family 0x17"};
    if (model.family == 0x17 && model.model <= 0x1f) return {group_by(m, 3), "the core complex (APIC ID >> 3): Zen 1"};
    if (const DecodedCache* l3 = find(3)) return {l3->groups, "the L3 of leaf 0x8000001D"};
    return fallback;
  }
  // Each CPU's LLC is its own highest cache: a hybrid part's P-cores and
  // E-cores may report different ones at the same level.
  auto level_groups = [&](unsigned level) {
    std::vector<std::vector<unsigned>> groups;
    for (const auto& c : caches)
      if (c.level == level && c.kind != "i") groups.insert(groups.end(), c.groups.begin(), c.groups.end());
    std::sort(groups.begin(), groups.end());
    return groups;
  };
  if (find(3)) return {level_groups(3), "the L3 of leaf 4"};
  if (find(2)) return {level_groups(2), "the L2 of leaf 4 (no L3 reported)"};
  return fallback;
}

namespace {

std::string human_size(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} KiB", bytes >> 10);
}

constexpr unsigned kTreeCpuLimit = 64;  // past this the tree is a wall of text
constexpr size_t kGroupsShown = 8;
constexpr size_t kGroupsPerLine = 4;

// "package[7:4] core[3:1] thread[0]": the bits each level owns.
std::string apic_id_layout(const Topology& t) {
  struct Field {
    const char* name;
    unsigned lo, hi;  // [lo, hi)
  };
  const Field fields[] = {{"package", t.package_offset(), 32},
                          {"die", t.die_offset(), t.package_offset()},
                          {"module", t.module_offset(), t.die_offset()},
                          {"core", t.core_offset(), t.module_offset()},
                          {"thread", 0, t.core_offset()}};
  std::vector<std::string> parts;
  for (const Field& f : fields) {
    if (f.hi == f.lo) continue;
    if (f.hi == 32) parts.push_back(fmt::format("{}[31:{}]", f.name, f.lo));
    else if (f.hi - f.lo == 1) parts.push_back(fmt::format("{}[{}]", f.name, f.lo));
    else parts.push_back(fmt::format("{}[{}:{}]", f.name, f.hi - 1, f.lo));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

void append_tree(fmt::memory_buffer& out, const Topology& t) {
  const auto& n = t.counts();
  for (unsigned cpu = 0; cpu < t.cpus(); ++cpu) {
    CpuCoords c = t.coords_of(cpu);
    if (c.thread == 0 && c.core == 0 && c.module == 0 && c.die == 0) appendf(out, "  package {}\n", c.package);
    if (n.dies > 1 && c.thread == 0 && c.core == 0 && c.module == 0) appendf(out, "    die {}\n", c.die);
    if (n.modules > 1 && c.thread == 0 && c.core == 0) {
      appendf(out, "      module {}", c.module);
      if (t.is_hybrid()) appendf(out, " ({}-module)", kind_letter(t.core_type(cpu)));
      appendf(out, "\n");
    }
    if (c.thread == 0) appendf(out, "        core {}:", c.core);
    appendf(out, "{} cpu {} (APIC {:#x})", c.thread == 0 ? "" : ",", cpu, t.apic_id(cpu));
    if (c.thread + 1 == t.kind_of(cpu).threads || cpu + 1 == t.cpus()) appendf(out, "\n");
  }
}

// "core types  P (leaf 0x1A 0x40 Core, native model 0x1): CPUs 0-15, ..."
void append_core_types(fmt::memory_buffer& out, const CpuidModel& m) {
  const Topology& t = m.topology();
  std::map<CoreType, std::vector<unsigned>> cpus_of;
  for (unsigned cpu = 0; cpu < t.cpus(); ++cpu) cpus_of[t.core_type(cpu)].push_back(cpu);
  const char* label = "core types";
  for (CoreType type : {CoreType::Core, CoreType::Atom}) {
    if (!cpus_of.count(type)) continue;
    uint32_t leaf1a = m.query(cpus_of[type].front(), 0x1A, 0).eax;
    appendf(out, "{:<11}{}-cores: leaf 0x1A EAX {:#010x} ({}, native model {:#x}): CPUs {}\n", label,
            kind_letter(type), leaf1a, type == CoreType::Core ? "Core" : "Atom", leaf1a & 0xffffff,
            format_cpu_list(cpus_of[type]));
    label = "";
  }
}

// Linux's cluster domain (CLS) is the L2 sharing: cpu_clustergroup_mask()
// is cpu_l2c_shared_mask().
void append_clusters(fmt::memory_buffer& out, const std::vector<DecodedCache>& caches) {
  std::vector<std::string> parts;
  for (const auto& c : caches)
    if (c.level == 2 && c.kind != "i")
      parts.push_back(fmt::format("{} of {} CPU{} ({}-cores)", c.groups.size(), c.groups.front().size(),
                                  c.groups.front().size() == 1 ? "" : "s", c.core_kinds));
  if (!parts.empty()) appendf(out, "\nscheduler clusters (Linux CLS: the CPUs sharing an L2): {}\n", fmt::join(parts, ", "));
}

}  // namespace

std::string format_topology_table(const CpuidModel& m) {
  const Topology& t = m.topology();
  const CpuConfig& cpu = m.cpu();
  fmt::memory_buffer out;
  appendf(out, "CPU model  {} ({}, family {} model {} stepping {}), l3-cache={}\n", cpu.model.name, cpu.model.vendor_id,
      cpu.model.family, cpu.model.model, cpu.model.stepping, cpu.l3_cache ? "on" : "off");
  appendf(out, "topology   {} = {} CPUs   (-smp {})\n", t.describe(), t.cpus(), t.to_smp_arg());
  appendf(out, "APIC IDs   {}; highest {:#x}{}\n", apic_id_layout(t), t.max_apic_id(),
          t.needs_x2apic() ? " (needs x2APIC)" : "");
  appendf(out, "CPUID      max basic leaf {:#x}, max extended leaf {:#x}{}\n", m.max_basic_leaf(), m.max_extended_leaf(),
      m.reports_leaf_1f() ? ", leaf 0x1F reports the dies/modules" : "");
  if (m.is_hybrid()) append_core_types(out, m);
  appendf(out, "\n");
  if (t.cpus() <= kTreeCpuLimit) {
    append_tree(out, t);
  } else {
    appendf(out, "  (the per-CPU tree is left out above {} CPUs; --format raw lists every vCPU)\n", kTreeCpuLimit);
  }

  auto caches = decode_caches_as_linux(m);
  bool amd = cpu.vendor() == Vendor::Amd;
  appendf(out, "\ncaches as Linux decodes {}:\n",
          !amd ? "leaf 4" : m.has_topoext() ? "leaf 0x8000001D" : "AMD 0x80000005/6 (no TOPOEXT)");
  if (caches.empty()) appendf(out, "  none: the leaf is beyond the maximum CPUID leaf\n");
  for (const auto& c : caches) {
    std::string name = fmt::format("L{}{}", c.level, c.kind);
    appendf(out, "  {:<4}{:>7}", name, human_size(c.size));
    if (c.ways) appendf(out, " {:>2}-way", c.ways);
    appendf(out, ", {} instance{} of {} CPU{}", c.groups.size(), c.groups.size() == 1 ? "" : "s",
            c.groups.front().size(), c.groups.front().size() == 1 ? "" : "s");
    if (!c.core_kinds.empty()) appendf(out, " ({}-cores)", c.core_kinds);
    appendf(out, "\n");
    std::string line;
    auto flush = [&] {
      line.erase(line.find_last_not_of(' ') + 1);
      appendf(out, "      {}\n", line);
      line.clear();
    };
    for (size_t g = 0; g < c.groups.size() && g < kGroupsShown; ++g) {
      if (g % kGroupsPerLine == 0 && g) flush();
      line += fmt::format("{:<22}", fmt::format("{} #{}: CPUs {}", name, g, format_cpu_list(c.groups[g])));
    }
    if (c.groups.size() > kGroupsShown) line += fmt::format("... and {} more", c.groups.size() - kGroupsShown);
    flush();
  }
  if (m.is_hybrid()) append_clusters(out, caches);
  LlcView llc = linux_llc(m, caches);
  size_t widest = 0;
  for (const auto& g : llc.groups) widest = std::max(widest, g.size());
  appendf(out, "\nscheduler LLC (Linux cpus_share_cache): {}; {} group{} of up to {} CPU{}\n", llc.rule, llc.groups.size(),
      llc.groups.size() == 1 ? "" : "s", widest, widest == 1 ? "" : "s");
  if (widest > 1)
    appendf(out, "  CPUs in one group wake each other's tasks by writing the runqueue directly (no reschedule IPI)\n"
        "  and wakeups spread to idle CPUs of the group.\n");
  else
    appendf(out, "  every cross-CPU wakeup goes through the wake list and a reschedule IPI.\n");
  return fmt::to_string(out);
}

}  // namespace topolab
