// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/consumer_views.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace topolab {

namespace {

constexpr uint32_t kVendorAmdEbx = 0x68747541;    // "Auth" of "AuthenticAMD"
constexpr uint32_t kVendorHygonEbx = 0x6f677948;  // "Hygo" of "HygonGenuine"
constexpr uint32_t kLeaf1EdxHtt = 1u << 28;
constexpr uint32_t kLeaf1EcxX2apic = 1u << 21;
constexpr uint32_t kLeaf7EdxHybrid = 1u << 15;
constexpr uint32_t kExt1EcxTopoext = 1u << 22;

enum ExtLevelType : uint32_t { kTypeInvalid = 0, kTypeSmt = 1, kTypeCore = 2, kTypeModule = 3, kTypeTile = 4, kTypeDie = 5 };

uint64_t mask_below(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// The decoders' own working state: per-CPU IDs per level, before grouping.
struct Placement {
  uint32_t apic_id = 0;
  uint64_t package = 0, die = 0, module = 0, core = 0;
};

void add_message(ConsumerView& v, std::string text) {
  if (std::find(v.messages.begin(), v.messages.end(), text) == v.messages.end()) v.messages.push_back(std::move(text));
}

// The APIC ID the local APIC itself reports (what the MADT lists): known for
// topolab's machines; for a foreign dump, the best CPUID witness of it.
uint32_t hardware_apic_id(const RawCpuid& raw, unsigned cpu) {
  if (raw.topology) return raw.topology->apic_id(cpu);
  // Leaf 1's initial APIC ID is what every VMM fills from the APIC; 0xB's
  // EDX is the full ID only while its low byte agrees with it.
  const RawCpuLeaves& l = raw.cpus[cpu];
  uint32_t initial = l.get(1).ebx >> 24;
  if (l.max_basic_leaf() >= 0xB && (l.get(0xB, 0).ebx & 0xffff) != 0 && (l.get(0xB, 0).edx & 0xff) == initial)
    return l.get(0xB, 0).edx;
  return initial;
}

// ---- Linux 6.x --------------------------------------------------------------

// topology_ext.c: the domain shifts a walk of 0xB/0x1F sets. Each level's
// shift also becomes that of every wider domain (topology_set_dom()), and
// 0xB may only name SMT and core (MAX_TYPE_0B).
struct DomainShifts {
  unsigned smt = 0, core = 0, module = 0, tile = 0, die = 0;
};

bool linux6_parse_ext(const RawCpuLeaves& l, uint32_t leaf, DomainShifts& d, ConsumerView& v) {
  auto levels = read_ext_topology(l, leaf, ExtStopRule::CountOrTypeZero);
  if (levels.empty()) return false;
  unsigned* dom[] = {nullptr, &d.smt, &d.core, &d.module, &d.tile, &d.die};
  uint32_t max_type = leaf == 0xB ? kTypeCore : kTypeDie;
  for (const auto& lv : levels) {
    if (lv.x2apic_id != levels.front().x2apic_id)
      add_message(v, fmt::format("[Firmware Bug]: CPUID leaf {:#x} subleaf {} APIC ID mismatch {:x} != {:x}", leaf,
                                 lv.subleaf, levels.front().x2apic_id, lv.x2apic_id));
    if (lv.type > max_type) {
      add_message(v, fmt::format("[Firmware Bug]: Topology: leaf {:#x}:{} Unknown domain type {}", leaf, lv.subleaf, lv.type));
      continue;
    }
    for (uint32_t t = lv.type; t <= kTypeDie; ++t) *dom[t] = lv.shift;
  }
  // "CPUID leaf 0x%x subleaf 0 has shift level 0 but %u CPUs. Fixing it up."
  if (d.smt == 0 && levels.front().type == kTypeSmt && levels.front().count > 1) {
    add_message(v, fmt::format("[Firmware Bug]: CPUID leaf {:#x} subleaf 0 has shift level 0 but {} CPUs. Fixing it up.",
                               leaf, levels.front().count));
    d.smt = bit_width_for_count(levels.front().count);
  }
  return true;
}

Placement place_by_shifts(uint32_t apic, const DomainShifts& d) {
  return {apic, apic >> d.die, apic >> d.tile, apic >> d.core, apic >> d.smt};
}

// parse_legacy(): leaf 4 EAX[31:26] for the cores, leaf 1 EBX[23:16] for
// the logical processors.
DomainShifts linux_legacy_shifts(const RawCpuLeaves& l, const CpuIdentity& id) {
  unsigned cores = id.max_basic >= 4 ? ((l.get(4, 0).eax >> 26) & 0x3f) + 1 : 1;
  unsigned core_shift = bit_width_for_count(cores);
  unsigned smt_shift = 0;
  unsigned nproc_shift = bit_width_for_count((l.get(1).ebx >> 16) & 0xff);
  if (id.htt && nproc_shift >= core_shift) smt_shift = nproc_shift - core_shift;
  DomainShifts d;
  d.smt = smt_shift;
  d.core = d.module = d.tile = d.die = core_shift + smt_shift;
  return d;
}

// topology_amd.c parse_8000_0008(): the core shift from ApicIdCoreIdSize,
// else from the thread count; no SMT.
DomainShifts amd_8000_0008_shifts(const RawCpuLeaves& l) {
  uint32_t ecx = l.get(0x80000008).ecx;
  unsigned shift = (ecx >> 12) & 0xf;
  if (!shift) shift = bit_width_for_count((ecx & 0xff) + 1);
  DomainShifts d;
  d.core = d.module = d.tile = d.die = shift;
  return d;
}

Placement linux6_place(const RawCpuid& raw, unsigned cpu, ConsumerView& v) {
  const RawCpuLeaves& l = raw.cpus[cpu];
  CpuIdentity id = identify(l);
  uint32_t apic = hardware_apic_id(raw, cpu);
  DomainShifts d;
  if (!id.amd) {
    if (id.max_basic >= 0x1F && linux6_parse_ext(l, 0x1F, d, v)) v.topology_source = "leaf 0x1F";
    else if (id.max_basic >= 0xB && linux6_parse_ext(l, 0xB, d, v)) v.topology_source = "leaf 0xB";
    else d = linux_legacy_shifts(l, id), v.topology_source = "leaf 1 EBX[23:16] + leaf 4 EAX[31:26]";
    return place_by_shifts(apic, d);
  }
  // parse_topology_amd(): 0xB with TOPOEXT, else 0x80000008; then
  // 0x8000001E (its EAX is checked against the APIC; Zen's SMT width comes
  // from EBX[15:8] when 0xB was not used).
  bool has_ext = id.topoext && id.max_basic >= 0xB && linux6_parse_ext(l, 0xB, d, v);
  if (has_ext) v.topology_source = "leaf 0xB";
  else if (id.max_extended >= 0x80000008) d = amd_8000_0008_shifts(l), v.topology_source = "leaf 0x80000008";
  if (id.topoext && id.max_extended >= 0x8000001E) {
    CpuidRegs e = l.get(0x8000001E);
    if (e.eax != apic)
      add_message(v, fmt::format("[Firmware Bug]: CPU{:4}: APIC ID mismatch. CPUID: {:#06x} APIC: {:#06x}", cpu, e.eax, apic));
    if (!has_ext && id.family >= 0x17) {
      d.smt = bit_width_for_count(((e.ebx >> 8) & 0xff) + 1);
      v.topology_source += " + 0x8000001E EBX[15:8]";
    }
  }
  return place_by_shifts(apic, d);
}

// ---- Linux 4.x --------------------------------------------------------------

// detect_extended_topology(): subleaf 0 must be SMT with a count; the walk
// goes on until type 0 and takes the core level's shift for the package.
bool linux4_parse_0b(const RawCpuLeaves& l, Placement& p) {
  CpuidRegs sub0 = l.get(0xB, 0);
  if ((sub0.ebx & 0xffff) == 0 || ((sub0.ecx >> 8) & 0xff) != kTypeSmt) return false;
  unsigned ht_width = sub0.eax & 0x1f, core_plus_width = ht_width;
  for (const auto& lv : read_ext_topology(l, 0xB, ExtStopRule::TypeZero))
    if (lv.type == kTypeCore) core_plus_width = lv.shift;
  p.apic_id = sub0.edx;
  p.package = p.die = p.module = p.apic_id >> core_plus_width;
  p.core = p.apic_id >> ht_width;
  return true;
}

Placement linux4_place(const RawCpuLeaves& l, ConsumerView& v) {
  CpuIdentity id = identify(l);
  Placement p;
  p.apic_id = l.get(1).ebx >> 24;  // generic_identify(): initial_apicid
  if (!id.amd) {
    if (id.max_basic >= 0xB && linux4_parse_0b(l, p)) {
      v.topology_source = "leaf 0xB";
      return p;
    }
    v.topology_source = "leaf 1 EBX[23:16] + leaf 4 EAX[31:26]";
    return place_by_shifts(p.apic_id, linux_legacy_shifts(l, id));
  }
  // amd_detect_cmp(): x86_coreid_bits from 0x80000008; every thread is a
  // core unless 0x8000001E or 0xB say otherwise (amd_get_topology()).
  DomainShifts d = id.max_extended >= 0x80000008 ? amd_8000_0008_shifts(l) : DomainShifts{};
  p = place_by_shifts(p.apic_id, d);
  v.topology_source = "leaf 1 EBX[31:24] + 0x80000008";
  if (id.topoext && id.max_extended >= 0x8000001E) {
    if (id.max_basic >= 0xB && linux4_parse_0b(l, p)) {
      v.topology_source = "leaf 0xB";
      return p;
    }
    if (id.family >= 0x17) {
      p.core = (p.package << 8) | (l.get(0x8000001E).ebx & 0xff);
      v.topology_source += " + 0x8000001E EBX[7:0]";
    }
  }
  return p;
}

// ---- hwloc ------------------------------------------------------------------

struct HwlocIds {
  uint32_t apic = 0;
  uint64_t pkg = 0, die = UINT64_MAX, module = UINT64_MAX, core = 0;
  unsigned legacy_max_log_proc = 1;
};

// read_intel_cores_exttopoenum(): every ID is masked to the package
// (apic_packageshift), so dies, modules and cores are numbered per package.
bool hwloc_exttopo(const RawCpuLeaves& l, uint32_t leaf, HwlocIds& h) {
  auto levels = read_ext_topology(l, leaf, ExtStopRule::EaxEbxZero);
  if (levels.empty()) return false;
  unsigned pkg_shift = levels.back().shift, shift = 0;
  for (const auto& lv : levels) {
    uint64_t id = (uint64_t{lv.x2apic_id} >> shift) & mask_below(pkg_shift - std::min(shift, pkg_shift));
    if (lv.type == kTypeCore) h.core = id;
    if (lv.type == kTypeModule) h.module = id;
    if (lv.type == kTypeDie) h.die = id;
    h.apic = lv.x2apic_id;
    shift = lv.shift;
  }
  h.pkg = uint64_t{h.apic} >> shift;
  return true;
}

HwlocIds hwloc_ids(const RawCpuLeaves& l, ConsumerView& v) {
  CpuIdentity id = identify(l);
  HwlocIds h;
  h.apic = l.get(1).ebx >> 24;
  unsigned nproc = (l.get(1).ebx >> 16) & 0xff;
  if (id.htt && nproc > 1) h.legacy_max_log_proc = 1u << bit_width_for_count(nproc);
  h.pkg = h.apic / h.legacy_max_log_proc;
  unsigned log_proc_id = h.apic % h.legacy_max_log_proc;
  v.topology_source = "leaf 1 EBX[23:16]";
  if (!id.amd && id.max_basic >= 4 && (l.get(4, 0).eax & 0x1f)) {
    unsigned max_cores = ((l.get(4, 0).eax >> 26) & 0x3f) + 1;
    unsigned max_threads = h.legacy_max_log_proc / max_cores;
    if (max_threads) h.core = log_proc_id / max_threads;
    v.topology_source += " + leaf 4 EAX[31:26]";
  }
  if (id.amd && id.max_extended >= 0x80000008 && !id.x2apic) {
    // read_amd_cores_legacy(): no SMT on this path.
    uint32_t ecx = l.get(0x80000008).ecx;
    unsigned size = (ecx >> 12) & 0xf;
    unsigned max_cores = size ? 1u << size : (ecx & 0xff) + 1;
    h.pkg = h.apic / max_cores;
    h.core = h.apic % max_cores;
    v.topology_source = "leaf 0x80000008";
  }
  if (id.amd && id.topoext) {
    h.apic = l.get(0x8000001E).eax;
    if (id.family > 0x16) h.core = l.get(0x8000001E).ebx & 0xff;
    v.topology_source += " + 0x8000001E";
  }
  if (!id.amd && id.max_basic >= 0x1F) {
    if (hwloc_exttopo(l, 0x1F, h)) v.topology_source = "leaf 0x1F";
  } else if (id.max_basic >= 0xB && id.x2apic && hwloc_exttopo(l, 0xB, h)) {
    v.topology_source = "leaf 0xB";
  }
  return h;
}

// ---- edk2 -------------------------------------------------------------------

// GetProcessorLocationByApicId(): 0xB's SMT shift and core shift, else
// leaf 1 EBX[23:16] and leaf 4 EAX[31:26].
Placement edk2_location(const RawCpuLeaves& l, uint32_t apic) {
  CpuIdentity id = identify(l);
  unsigned thread_bits = 0, core_bits = 0;
  if (id.max_basic >= 0xB && (l.get(0xB, 0).ebx & 0xffff) != 0) {
    thread_bits = l.get(0xB, 0).eax & 0x1f;
    for (const auto& lv : read_ext_topology(l, 0xB, ExtStopRule::TypeZero))
      if (lv.type == kTypeCore) {
        core_bits = lv.shift - std::min(lv.shift, thread_bits);
        break;
      }
  } else if (id.htt) {
    unsigned logical = (l.get(1).ebx >> 16) & 0xff;
    unsigned cores = id.max_basic >= 4 ? ((l.get(4, 0).eax >> 26) & 0x3f) + 1 : 1;
    thread_bits = bit_width_for_count(std::max(1u, logical / cores));
    core_bits = bit_width_for_count(cores);
  }
  // Both widths come from 5-bit fields: their sum can pass 31.
  uint64_t package = uint64_t{apic} >> std::min(thread_bits + core_bits, 63u);
  return {apic, package, package, package, uint64_t{apic} >> thread_bits};
}

// GetProcessorLocation2ByApicId(): Bits[type] = shift for each subleaf
// until type 0 (asserting subleaf 0 is SMT); a level not reported takes the
// shift of the one below.
Placement edk2_location2(const RawCpuLeaves& l, uint32_t apic, ConsumerView& v) {
  std::array<unsigned, 6> bits{};
  auto levels = read_ext_topology(l, 0x1F, ExtStopRule::TypeZero);
  CpuidRegs sub0 = l.get(0x1F, 0);
  if (((sub0.ecx >> 8) & 0xff) != kTypeSmt)
    add_message(v, "ASSERT BaseXApicX2ApicLib.c: (Index != 0) || (LevelType == CPUID_EXTENDED_TOPOLOGY_LEVEL_TYPE_SMT)");
  for (const auto& lv : levels)
    if (lv.type < bits.size()) bits[lv.type] = lv.shift;
    else add_message(v, "ASSERT BaseXApicX2ApicLib.c: LevelType < ARRAY_SIZE (Bits)");
  for (size_t t = kTypeCore; t < bits.size(); ++t)
    if (bits[t] == 0) bits[t] = bits[t - 1];
  return {apic, uint64_t{apic} >> bits[kTypeDie], uint64_t{apic} >> bits[kTypeTile], uint64_t{apic} >> bits[kTypeCore],
          uint64_t{apic} >> bits[kTypeSmt]};
}

Placement edk2_place(const RawCpuLeaves& l, ConsumerView& v) {
  CpuIdentity id = identify(l);
  // GetInitialApicId(): in x2APIC mode 0xB's EDX, else leaf 1 EBX[31:24].
  bool x2 = id.x2apic && id.max_basic >= 0xB;
  uint32_t apic = x2 ? l.get(0xB, 0).edx : l.get(1).ebx >> 24;
  // Since edk2 PR #4908 (2023-10) leaf 0x1F is used only when
  // its subleaf 0 has a count; older edk2 took it whenever the maximum leaf
  // reached it, and asserted on an empty one (edk2 #9439).
  if (id.max_basic >= 0x1F && (l.get(0x1F, 0).ebx & 0xffff) != 0) {
    v.topology_source = "leaf 0x1F";
    return edk2_location2(l, apic, v);
  }
  if (id.max_basic >= 0x1F)
    add_message(v, "leaf 0x1F is empty: edk2 before 2023-10 (PR #4908) takes it anyway and ASSERTs (edk2 #9439)");
  v.topology_source = id.max_basic >= 0xB && (l.get(0xB, 0).ebx & 0xffff) ? "leaf 0xB" : "leaf 1 + leaf 4";
  return edk2_location(l, apic);
}

}  // namespace

// ---- shared helpers ---------------------------------------------------------

const char* consumer_name(Consumer c) {
  switch (c) {
    case Consumer::Linux6: return "linux-6.x";
    case Consumer::Linux4: return "linux-4.x";
    case Consumer::Hwloc: return "hwloc";
    case Consumer::Edk2: return "edk2";
  }
  return "?";
}

std::optional<Consumer> consumer_named(std::string_view name) {
  for (Consumer c : kConsumers)
    if (name == consumer_name(c)) return c;
  return std::nullopt;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::Package: return "package";
    case Level::Die: return "die";
    case Level::Module: return "module";
    case Level::Core: return "core";
  }
  return "?";
}

CpuGroups group_by_key(const std::vector<uint64_t>& keys) {
  std::map<uint64_t, size_t> index;
  CpuGroups groups;
  for (unsigned cpu = 0; cpu < keys.size(); ++cpu) {
    auto [it, added] = index.try_emplace(keys[cpu], groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(cpu);
  }
  return groups;
}

std::string CacheView::name() const {
  return kind == 'u' ? fmt::format("L{}", level) : fmt::format("L{}{}", level, kind);
}

unsigned ConsumerView::threads_per_core() const {
  size_t widest = 0;
  for (const auto& g : groups(Level::Core)) widest = std::max(widest, g.size());
  return static_cast<unsigned>(widest);
}

const CacheView* ConsumerView::cache(unsigned level, char kind) const {
  for (const auto& c : caches)
    if (c.level == level && c.kind == kind) return &c;
  return nullptr;
}

CpuIdentity identify(const RawCpuLeaves& l) {
  CpuIdentity id;
  id.amd = l.get(0).ebx == kVendorAmdEbx || l.get(0).ebx == kVendorHygonEbx;
  uint32_t eax1 = l.get(1).eax;
  unsigned base_family = (eax1 >> 8) & 0xf, base_model = (eax1 >> 4) & 0xf;
  id.family = base_family == 0xf ? base_family + ((eax1 >> 20) & 0xff) : base_family;
  id.model = base_family == 0xf || (!id.amd && base_family == 6) ? base_model | ((eax1 >> 16) & 0xf) << 4 : base_model;
  id.max_basic = l.max_basic_leaf();
  id.max_extended = l.max_extended_leaf();
  id.htt = l.get(1).edx & kLeaf1EdxHtt;
  id.x2apic = l.get(1).ecx & kLeaf1EcxX2apic;
  id.topoext = id.max_extended >= 0x80000001 && (l.get(0x80000001).ecx & kExt1EcxTopoext);
  id.hybrid = id.max_basic >= 7 && (l.get(7, 0).edx & kLeaf7EdxHybrid);
  return id;
}

std::vector<ExtTopologyLevel> read_ext_topology(const RawCpuLeaves& l, uint32_t leaf, ExtStopRule rule) {
  std::vector<ExtTopologyLevel> levels;
  for (uint32_t sub = 0; sub < kMaxExtSubleaves; ++sub) {
    CpuidRegs r = l.get(leaf, sub);
    ExtTopologyLevel lv{sub, (r.ecx >> 8) & 0xff, r.eax & 0x1f, r.ebx & 0xffff, r.edx};
    bool stop = false;
    switch (rule) {
      case ExtStopRule::CountOrTypeZero: stop = lv.count == 0 || lv.type == kTypeInvalid; break;
      case ExtStopRule::TypeZero: stop = lv.type == kTypeInvalid; break;
      case ExtStopRule::EaxEbxZero: stop = r.eax == 0 && r.ebx == 0; break;
    }
    if (stop) break;
    levels.push_back(lv);
  }
  return levels;
}

// ---- caches and the LLC (consumer_caches.cc) --------------------------------

void decode_caches(const RawCpuid& raw, ConsumerView& v);

ConsumerView decode_as(Consumer consumer, const RawCpuid& raw) {
  ConsumerView v;
  v.consumer = consumer;
  std::vector<Placement> places(raw.cpus.size());
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) {
    const RawCpuLeaves& l = raw.cpus[cpu];
    switch (consumer) {
      case Consumer::Linux6: places[cpu] = linux6_place(raw, cpu, v); break;
      case Consumer::Linux4: places[cpu] = linux4_place(l, v); break;
      case Consumer::Edk2: places[cpu] = edk2_place(l, v); break;
      case Consumer::Hwloc: {
        HwlocIds h = hwloc_ids(l, v);
        // hwloc_x86_add_groups(): objects are (package, ID) pairs; a level
        // without IDs is not created (one per parent).
        uint64_t die = h.die == UINT64_MAX ? 0 : h.die + 1;
        uint64_t module = h.module == UINT64_MAX ? 0 : h.module + 1;
        places[cpu] = {h.apic, h.pkg, h.pkg << 16 | die, (h.pkg << 16 | die) << 16 | module, h.pkg << 24 | h.core};
        break;
      }
    }
  }
  for (const Placement& p : places) {
    v.apic_ids.push_back(p.apic_id);
    v.keys[0].push_back(p.package);
    v.keys[1].push_back(p.die);
    v.keys[2].push_back(p.module);
    v.keys[3].push_back(p.core);
  }
  // hwloc's x86 backend gives up on the topology when APIC IDs repeat
  // (data->apicid_unique = 0): only the OS backend's view is left.
  if (consumer == Consumer::Hwloc && std::set<uint32_t>(v.apic_ids.begin(), v.apic_ids.end()).size() != v.apic_ids.size())
    add_message(v, "hwloc: APIC IDs are not unique: the x86 backend drops the topology it read (apicid_unique = 0)");
  decode_caches(raw, v);
  return v;
}

}  // namespace topolab
