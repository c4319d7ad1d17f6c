// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cpuid.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace topolab {

namespace {

// ---- the SDM fields the model writes -------------------------------------
constexpr CpuidField kL1ApicId{0x1, 'b', 31, 24, "initial APIC ID"};
constexpr CpuidField kL1LogicalCount{0x1, 'b', 23, 16, "max addressable logical processor IDs in the package"};
constexpr CpuidField kL1ClflushSize{0x1, 'b', 15, 8, "CLFLUSH line size in quadwords"};
constexpr CpuidField kL1Stepping{0x1, 'a', 3, 0, "stepping ID"};
constexpr CpuidField kL1Model{0x1, 'a', 7, 4, "model"};
constexpr CpuidField kL1Family{0x1, 'a', 11, 8, "family ID"};
constexpr CpuidField kL1ExtModel{0x1, 'a', 19, 16, "extended model ID"};
constexpr CpuidField kL1ExtFamily{0x1, 'a', 27, 20, "extended family ID"};

constexpr CpuidField kL4Type{0x4, 'a', 4, 0, "cache type"};
constexpr CpuidField kL4Level{0x4, 'a', 7, 5, "cache level"};
constexpr CpuidField kL4SharingIds{0x4, 'a', 25, 14, "max addressable IDs for logical processors sharing this cache"};
constexpr CpuidField kL4CoreIds{0x4, 'a', 31, 26, "max addressable core IDs in the package"};
constexpr CpuidField kL4LineSize{0x4, 'b', 11, 0, "system coherency line size - 1"};
constexpr CpuidField kL4Partitions{0x4, 'b', 21, 12, "physical line partitions - 1"};
constexpr CpuidField kL4Ways{0x4, 'b', 31, 22, "ways of associativity - 1"};
constexpr CpuidField kL4Sets{0x4, 'c', 31, 0, "number of sets - 1"};

constexpr CpuidField kHybridCoreType{0x1A, 'a', 31, 24, "core type"};
constexpr CpuidField kHybridNativeModelId{0x1A, 'a', 23, 0, "native model ID"};

constexpr CpuidField kTopoShift{0xB, 'a', 4, 0, "bits to shift right on x2APIC ID to get the next level's ID"};
constexpr CpuidField kTopoCount{0xB, 'b', 15, 0, "logical processors at this level type"};
constexpr CpuidField kTopoLevelNumber{0xB, 'c', 7, 0, "level number"};
constexpr CpuidField kTopoLevelType{0xB, 'c', 15, 8, "level type"};

constexpr CpuidField kAmdL1Size{0x80000005, 'c', 31, 24, "L1 cache size in KiB"};
constexpr CpuidField kAmdL1Assoc{0x80000005, 'c', 23, 16, "L1 cache associativity"};
constexpr CpuidField kAmdL1LinesPerTag{0x80000005, 'c', 15, 8, "L1 cache lines per tag"};
constexpr CpuidField kAmdL1LineSize{0x80000005, 'c', 7, 0, "L1 cache line size"};
constexpr CpuidField kAmdL2Size{0x80000006, 'c', 31, 16, "L2 cache size in KiB"};
constexpr CpuidField kAmdL2Assoc{0x80000006, 'c', 15, 12, "L2 cache associativity (encoded)"};
constexpr CpuidField kAmdL2LinesPerTag{0x80000006, 'c', 11, 8, "L2 cache lines per tag"};
constexpr CpuidField kAmdL2LineSize{0x80000006, 'c', 7, 0, "L2 cache line size"};
constexpr CpuidField kAmdL3Size{0x80000006, 'd', 31, 18, "L3 cache size in 512 KiB units"};
constexpr CpuidField kAmdL3Assoc{0x80000006, 'd', 15, 12, "L3 cache associativity (encoded)"};
constexpr CpuidField kAmdL3LinesPerTag{0x80000006, 'd', 11, 8, "L3 cache lines per tag"};
constexpr CpuidField kAmdL3LineSize{0x80000006, 'd', 7, 0, "L3 cache line size"};

constexpr CpuidField kAmdApicIdSize{0x80000008, 'c', 15, 12, "APIC ID size (bits of thread ID in the package)"};
constexpr CpuidField kAmdThreadsInPackage{0x80000008, 'c', 7, 0, "number of threads in the package - 1"};
constexpr CpuidField kAmdCoreId{0x8000001E, 'b', 7, 0, "core ID"};
constexpr CpuidField kAmdThreadsPerCore{0x8000001E, 'b', 15, 8, "threads per core - 1"};
constexpr CpuidField kAmdNodeId{0x8000001E, 'c', 7, 0, "node ID"};
constexpr CpuidField kAmdNodesPerPackage{0x8000001E, 'c', 10, 8, "nodes per processor - 1"};

enum TopologyLevelType : uint32_t { kLevelInvalid = 0, kLevelSmt = 1, kLevelCore = 2, kLevelModule = 3, kLevelDie = 5 };

// Leaf 7 EDX[15]: the processor is a hybrid part (leaf 1AH exists).
constexpr uint32_t kLeaf7EdxHybrid = 1u << 15;
// Leaf 2: AL is the count of CPUID(2) calls needed; descriptor FFH says
// "no cache descriptors here, use leaf 4" (SDM table 3-12).
constexpr uint32_t kLeaf2CallCount = 1;
constexpr uint32_t kLeaf2DescUseLeaf4 = 0xff;
// Leaf 1 EDX[28]: more than one logical processor ID in the package.
constexpr uint32_t kLeaf1EdxHtt = 1u << 28;
// CPUID.07H.0:ECX[4] OSPKE, which mirrors CR4.PKE where PKU is (SDM vol. 2A).
constexpr uint32_t kLeaf7EcxOspke = 1u << 4;
// The hypervisor range 0x40000000.. (Intel SDM: "reserved for software").
constexpr uint32_t kHypervisorBase = 0x40000000;
constexpr uint32_t kHypervisorMax = 0x40000001;
constexpr uint32_t kKvmFeatureMsiExtDestId = 1u << KVM_FEATURE_MSI_EXT_DEST_ID;
constexpr uint32_t kExt1EcxTopoext = 1u << 22;
constexpr uint32_t kExt1EcxSvm = 1u << 2;
constexpr uint32_t kExt1EcxCmpLegacy = 1u << 1;
constexpr uint32_t kExt1EdxLongMode = 1u << 29;

// Leaf 5 ECX: MWAIT extensions enumerated, interrupts break MWAIT with IF=0.
constexpr uint32_t kMwaitEmx = 1u << 0;
constexpr uint32_t kMwaitIbe = 1u << 1;
constexpr uint32_t kMonitorLineSize = 64;

// TLB geometry QEMU reports in 0x80000005/6 (target/i386/cpu.c).
constexpr uint32_t kAmdL1Tlb2M = 0x01ff01ff;  // 1-way, 255 entries (D and I)
constexpr uint32_t kAmdL1Tlb4K = 0x01ff01ff;
constexpr uint32_t kAmdL2Tlb2M = 0;           // no L2 TLB for 2M pages
constexpr uint32_t kAmdL2Tlb4K = 0x42004200;  // 4-way, 512 entries (D and I)

// The linear address width: 48 bits, as no model advertises LA57. The
// physical width is the CpuConfig's phys-bits (QEMU's TCG default 40).
constexpr uint32_t kVirtAddrBits = 48;

// The subleaf terminator of the extended-topology leaves (SDM: level type 0,
// EAX = EBX = 0, ECX[7:0] echoes the subleaf). Linux stops on the type or a
// zero count, hwloc on EAX = EBX = 0, edk2 on the type: all stop here.
CpuidRegs topology_terminator(uint32_t subleaf) { return {0, 0, subleaf & 0xff, 0}; }

// The leaves whose fields carry the vCPU's APIC ID (patch_for_cpu): each
// vCPU keeps its own entries of these.
bool carries_apic_id(uint32_t leaf) { return leaf == 0x1 || leaf == 0xB || leaf == 0x1F || leaf == 0x8000001E; }

bool key_less(const CpuidModel::Entry& e, std::pair<uint32_t, uint32_t> key) {
  return std::pair{e.leaf, e.subleaf} < key;
}

// The entry for (leaf, subleaf) in a table in ascending key order, or nullptr.
const CpuidRegs* find_entry(std::span<const CpuidModel::Entry> table, uint32_t leaf, uint32_t subleaf) {
  auto it = std::lower_bound(table.begin(), table.end(), std::pair{leaf, subleaf}, key_less);
  return it != table.end() && it->leaf == leaf && it->subleaf == subleaf ? &it->regs : nullptr;
}

uint32_t pack4(const char* s) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}

// AMD APM encoding of L2/L3 associativity in 0x80000006.
uint32_t amd_encoded_ways(unsigned ways, bool fully_associative) {
  if (fully_associative) return 0xF;
  switch (ways) {
    case 0: case 1: return ways;
    case 2: return 0x2;
    case 4: return 0x4;
    case 8: return 0x6;
    case 16: return 0x8;
    case 32: return 0xA;
    case 48: return 0xB;
    case 64: return 0xC;
    case 96: return 0xD;
    case 128: return 0xE;
    default: throw CpuidFieldError(fmt::format("CPUID.80000006H: {} ways has no AMD associativity encoding", ways));
  }
}

uint32_t cache_size_kib(const CacheInfo& c) { return c.size / 1024; }

}  // namespace

void put_field(uint32_t& reg, const CpuidField& f, uint64_t value) {
  unsigned width = f.hi - f.lo + 1;
  uint64_t max = width == 32 ? 0xffffffffull : (uint64_t{1} << width) - 1;
  if (value > max)
    throw CpuidFieldError(fmt::format("CPUID.{:02X}H:E{}X[{}:{}] ({}) overflow: {}", f.leaf,
                                      static_cast<char>(f.reg - 'a' + 'A'), f.hi, f.lo, f.meaning, value));
  uint32_t mask = static_cast<uint32_t>(max << f.lo);
  reg = (reg & ~mask) | (static_cast<uint32_t>(value << f.lo) & mask);
}

void put_field_saturated(uint32_t& reg, const CpuidField& f, uint64_t value) {
  unsigned width = f.hi - f.lo + 1;
  uint64_t max = width == 32 ? 0xffffffffull : (uint64_t{1} << width) - 1;
  put_field(reg, f, std::min(value, max));
}

CpuidModel::CpuidModel(Topology topology, CpuConfig cpu, MachineOptions machine)
    : topology_(std::move(topology)), cpu_(std::move(cpu)), machine_(std::move(machine)) {
  if (topology_.needs_x2apic() && !cpu_.has(CpuFeature::X2apic))
    throw ConfigError(fmt::format(
        "{} CPUs reach APIC ID {}, above the xAPIC limit of {}: add +x2apic to -cpu", topology_.cpus(),
        topology_.max_apic_id(), Topology::kMaxXApicId));
  if (topology_.is_hybrid() && !cpu_.model.hybrid)
    throw ConfigError(fmt::format("-smp: a hybrid topology needs a hybrid CPU model (AlderLake); -cpu {} has one core type",
                                  cpu_.model.name));
  core_caches_ = cpu_.model.caches;
  atom_caches_ = cpu_.model.hybrid ? cpu_.model.hybrid->atom_caches : cpu_.model.caches;
  apply_machine_cache_levels();
  level_ = cpu_.model.level;
  xlevel_ = cpu_.model.xlevel;
  has_topoext_ = feature(FeatureWord::Ext1Ecx) & kExt1EcxTopoext;
  // Leaf 0x1F describes modules and dies, and TOPOEXT's leaves must be
  // reachable: raise the levels to reach them, as QEMU does with its
  // automatic minimum levels. A level set explicitly with level=/xlevel= is
  // kept, as in QEMU; the guest then falls back to leaf 0xB.
  if (reports_leaf_1f() && !cpu_.level_explicit) level_ = std::max<uint32_t>(level_, 0x1F);
  if (has_topoext_ && !cpu_.xlevel_explicit) xlevel_ = std::max<uint32_t>(xlevel_, 0x8000001E);
  // QEMU's x86_cpu_adjust_feat_level: a feature word that is not empty
  // raises the level to its leaf (e.g. +smep on Opteron_G1, level 5), and
  // SVM raises xlevel to 0x8000000A.
  struct FeatureLeaf {
    FeatureWord word;
    uint32_t leaf;
  };
  for (auto [word, leaf] : {FeatureLeaf{FeatureWord::Leaf6Eax, 0x6}, FeatureLeaf{FeatureWord::Leaf7Ebx, 0x7},
                            FeatureLeaf{FeatureWord::Leaf7Ecx, 0x7}, FeatureLeaf{FeatureWord::Leaf7Edx, 0x7},
                            FeatureLeaf{FeatureWord::Ext1Edx, 0x80000001}, FeatureLeaf{FeatureWord::Ext1Ecx, 0x80000001},
                            FeatureLeaf{FeatureWord::Ext7Edx, 0x80000007}, FeatureLeaf{FeatureWord::Ext8Ebx, 0x80000008}}) {
    if (!feature(word)) continue;
    if (leaf < 0x80000000 && !cpu_.level_explicit) level_ = std::max(level_, leaf);
    if (leaf >= 0x80000000 && !cpu_.xlevel_explicit) xlevel_ = std::max(xlevel_, leaf);
  }
  if ((feature(FeatureWord::Ext1Ecx) & kExt1EcxSvm) && !cpu_.xlevel_explicit) xlevel_ = std::max<uint32_t>(xlevel_, 0x8000000A);
  if (topology_.has_core_type(CoreType::Core)) core_entries_ = build_enumeration(CoreType::Core);
  if (topology_.has_core_type(CoreType::Atom)) atom_entries_ = build_enumeration(CoreType::Atom);
  build_cpu_entries();
}

// Each vCPU's own entries: its core type's entries of the leaves that carry
// the APIC ID, with its APIC ID written in.
void CpuidModel::build_cpu_entries() {
  auto own_count = [](const std::vector<Entry>& entries) {
    return std::count_if(entries.begin(), entries.end(), [](const Entry& e) { return carries_apic_id(e.leaf); });
  };
  cpu_entries_.reserve(topology_.cpus() * std::max(own_count(core_entries_), own_count(atom_entries_)));
  cpu_begin_.reserve(topology_.cpus() + 1);
  cpu_begin_.push_back(0);
  for (unsigned cpu = 0; cpu < topology_.cpus(); ++cpu) {
    const uint32_t apic_id = topology_.apic_id(cpu);
    for (const Entry& e : type_entries(cpu)) {
      if (!carries_apic_id(e.leaf)) continue;
      cpu_entries_.push_back(e);
      patch_for_cpu(apic_id, e.leaf, cpu_entries_.back().regs);
    }
    cpu_begin_.push_back(static_cast<uint32_t>(cpu_entries_.size()));
  }
}

const std::vector<CpuidModel::Entry>& CpuidModel::type_entries(unsigned cpu_index) const {
  return topology_.core_type(cpu_index) == CoreType::Atom ? atom_entries_ : core_entries_;
}

std::span<const CpuidModel::Entry> CpuidModel::cpu_entries(unsigned cpu_index) const {
  const uint32_t begin = cpu_begin_.at(cpu_index), end = cpu_begin_.at(cpu_index + 1);
  return std::span(cpu_entries_).subspan(begin, end - begin);
}

void CpuidModel::apply_machine_cache_levels() {
  for (CacheSet* set : {&core_caches_, &atom_caches_}) {
    CacheInfo* caches[kSmpCacheCount] = {&set->l1d, &set->l1i, &set->l2, &set->l3};
    for (size_t i = 0; i < kSmpCacheCount; ++i)
      if (machine_.cache_scope[i]) caches[i]->scope = *machine_.cache_scope[i];
    // machine_check_smp_cache() (QEMU 10.0), once "default" has become the
    // CPU model's own level: no cache may be shared more narrowly than the
    // level below it.
    if (set->l1d.scope > set->l2.scope || set->l1i.scope > set->l2.scope)
      throw ConfigError("-machine: invalid smp cache topology. L2 cache topology level shouldn't be lower than L1 cache");
    if (set->l2.scope > set->l3.scope)
      throw ConfigError("-machine: invalid smp cache topology. L3 cache topology level shouldn't be lower than L2 cache");
  }
}

bool CpuidModel::reports_leaf_1f() const {
  // AMD CPUs of these generations have no leaf 0x1F; they give the node
  // count in 0x8000001E instead (QEMU raises the level for Intel only, too).
  // x-force-cpuid-0x1f (QEMU 10.1) reports it for any topology.
  return cpu_.vendor() == Vendor::Intel &&
         (cpu_.force_cpuid_0x1f || topology_.counts().dies > 1 || topology_.counts().modules > 1) &&
         (level_ >= 0x1F || !cpu_.level_explicit);
}

bool CpuidModel::has_subleaves(uint32_t leaf) {
  switch (leaf) {
    case 0x4: case 0x7: case 0xB: case 0xD: case 0x1F: case 0x8000001D: return true;
    default: return false;
  }
}

uint32_t CpuidModel::feature(FeatureWord w) const {
  auto it = cpu_.model.features.find(w);
  return it == cpu_.model.features.end() ? 0 : it->second;
}

uint32_t CpuidModel::answering_leaf(uint32_t leaf) const {
  // SDM: "If a value entered for CPUID.EAX is higher than the maximum input
  // value for basic or extended function ... the data for the highest basic
  // information leaf is returned."
  uint32_t limit = leaf >= 0x80000000 ? xlevel_ : leaf >= kHypervisorBase ? kHypervisorMax : level_;
  return leaf > limit ? level_ : leaf;
}

CpuidRegs CpuidModel::query(unsigned cpu_index, uint32_t leaf, uint32_t subleaf, CpuidDynamic dynamic) const {
  leaf = answering_leaf(leaf);
  if (!has_subleaves(leaf)) subleaf = 0;  // ECX is ignored
  CpuidRegs r = lookup(cpu_index, leaf, subleaf);
  // The guest-state bits apply to the leaf that answers, as hardware
  // answers an out-of-range leaf with the highest basic leaf as it is now.
  if (leaf == 0x7 && subleaf == 0 && (r.ecx & feature_bit(CpuFeature::Pku).mask()) && dynamic.cr4_pke)
    r.ecx |= kLeaf7EcxOspke;
  // SDM vol. 3A 10.4.3: with IA32_APIC_BASE.EN clear, "the CPUID feature
  // flag for the APIC ... is also set to 0".
  if (leaf == 0x1 && !dynamic.apic_enabled) r.edx &= ~feature_bit(CpuFeature::Apic).mask();
  return r;
}

CpuidRegs CpuidModel::lookup(unsigned cpu_index, uint32_t leaf, uint32_t subleaf) const {
  std::span<const Entry> table = carries_apic_id(leaf) ? cpu_entries(cpu_index) : type_entries(cpu_index);
  if (const CpuidRegs* regs = find_entry(table, leaf, subleaf)) return *regs;
  // No table lists subleaves past a list's terminator, nor the hypervisor
  // leaves without the hypervisor bit: those read zeros, except that the
  // extended-topology leaves go on answering "invalid level" with ECX[7:0]
  // the subleaf and EDX the x2APIC ID (SDM vol. 2A, leaves 0BH and 1FH).
  if (leaf != 0xB && leaf != 0x1F) return {};
  CpuidRegs r = topology_terminator(subleaf);
  r.edx = topology_.apic_id(cpu_index);
  return r;
}

CpuidRegs CpuidModel::base_leaf(uint32_t leaf, uint32_t subleaf, CoreType type) const {
  switch (leaf) {
    case 0x0: return leaf0();
    case 0x1: return leaf1();
    case 0x2: return leaf2();
    case 0x4: return leaf4(subleaf, type);
    case 0x5: return leaf5();
    case 0x6: return leaf6();
    case 0x7: return leaf7(subleaf);
    // Leaf 0xA: no architectural PMU, with pmu=on or off, as QEMU 7.2's TCG
    // reports (its leaf 0xA is host data under KVM only).
    case 0xA: return {};
    case 0xB: return leafB(subleaf, type);
    case 0x1A: return leaf1A(type);
    case 0x1F: return leaf1F(subleaf, type);
    case 0x80000000: return ext0();
    case 0x80000001: return ext1();
    case 0x80000002: case 0x80000003: case 0x80000004: return brand(leaf);
    case 0x80000005: return ext5();
    case 0x80000006: return ext6();
    case 0x80000007: return ext7();
    case 0x80000008: return ext8();
    case 0x8000000A: return extA();
    case kHypervisorBase: case kHypervisorMax: return hypervisor(leaf);
    case 0x8000001D: return ext1D(subleaf);
    case 0x8000001E: return ext1E();
    default: return {};
  }
}

// The fields that differ between vCPUs: each carries the vCPU's APIC ID.
void CpuidModel::patch_for_cpu(uint32_t apic_id, uint32_t leaf, CpuidRegs& r) const {
  switch (leaf) {
    case 0x1:
      // Only the low 8 bits fit; past 255 the x2APIC ID is in 0xB/0x1F.
      put_field(r.ebx, kL1ApicId, apic_id & 0xff);
      break;
    case 0xB:
    case 0x1F:
      r.edx = apic_id;  // every subleaf, the terminator included
      break;
    case 0x8000001E:
      if (has_topoext_) {
        // The core's bits of the APIC ID, unique in the package as on real
        // EPYCs (QEMU 7.2 numbers cores within a die, which makes hwloc and
        // Linux merge the cores of different dies).
        r.eax = apic_id;
        put_field(r.ebx, kAmdCoreId, (apic_id >> topology_.core_offset()) & 0xff);
        put_field(r.ecx, kAmdNodeId, (apic_id >> topology_.die_offset()) & 0xff);
      }
      break;
    default:
      break;
  }
}

CpuidRegs CpuidModel::leaf0() const {
  const std::string& v = cpu_.model.vendor_id;
  return {level_, pack4(v.data()), pack4(v.data() + 8), pack4(v.data() + 4)};
}

CpuidRegs CpuidModel::leaf1() const {
  const CpuModelDef& m = cpu_.model;
  CpuidRegs r;
  // SDM "Processor Version Information": families above 0xF go into the
  // extended family field with the base family saturated at 0xF.
  put_field(r.eax, kL1Stepping, m.stepping);
  put_field(r.eax, kL1Model, m.model & 0xf);
  put_field(r.eax, kL1ExtModel, m.model >> 4);
  put_field(r.eax, kL1Family, std::min(m.family, 0xfu));
  put_field(r.eax, kL1ExtFamily, m.family > 0xf ? m.family - 0xf : 0);
  put_field(r.ebx, kL1ClflushSize, 8);
  r.ecx = feature(FeatureWord::Leaf1Ecx);
  r.edx = feature(FeatureWord::Leaf1Edx);
  // Intel (SDM): addressable IDs, a power of two; AMD (APM): the count.
  uint32_t logical = cpu_.vendor() == Vendor::Intel ? 1u << topology_.package_offset() : topology_.threads_per_package();
  if (logical > 1) {
    put_field_saturated(r.ebx, kL1LogicalCount, logical);
    r.edx |= kLeaf1EdxHtt;
  }
  return r;
}

CpuidRegs CpuidModel::leaf2() const {
  // Leaf 2 is Intel's; QEMU's vendor-cpuid-only leaves it empty on AMD.
  if (cpu_.vendor() == Vendor::Amd) return {};
  const CpuModelDef& m = cpu_.model;
  CpuidRegs r;
  r.eax = kLeaf2CallCount;
  if (m.leaf2.use_leaf4) {
    r.eax |= kLeaf2DescUseLeaf4 << 8;
    return r;
  }
  r.ecx = cpu_.l3_cache ? m.leaf2.l3 : 0;
  r.edx = uint32_t{m.leaf2.l1d} << 16 | uint32_t{m.leaf2.l1i} << 8 | m.leaf2.l2;
  return r;
}

std::vector<const CacheInfo*> CpuidModel::deterministic_caches(CoreType type) const {
  const CacheSet& set = caches_of(type);
  std::vector<const CacheInfo*> caches{&set.l1d, &set.l1i, &set.l2};
  if (cpu_.l3_cache) caches.push_back(&set.l3);
  return caches;
}

unsigned CpuidModel::sharing_offset(CacheScope scope) const {
  switch (scope) {
    case CacheScope::Core: return topology_.core_offset();
    case CacheScope::Module: return topology_.module_offset();
    case CacheScope::Die: return topology_.die_offset();
    case CacheScope::Package: return topology_.package_offset();
  }
  return topology_.package_offset();
}

namespace {

// The leaf 4 / 0x8000001D register layout, shared by both leaves.
CpuidRegs encode_deterministic_cache(const CacheInfo& c, uint32_t sharing_ids, uint32_t core_ids) {
  CpuidRegs r;
  put_field(r.eax, kL4Type, static_cast<uint32_t>(c.type));
  put_field(r.eax, kL4Level, c.level);
  if (c.self_init) r.eax |= 1u << 8;
  put_field(r.eax, kL4SharingIds, sharing_ids - 1);
  if (core_ids) put_field_saturated(r.eax, kL4CoreIds, core_ids - 1);
  put_field(r.ebx, kL4LineSize, c.line_size - 1);
  put_field(r.ebx, kL4Partitions, c.partitions - 1);
  put_field(r.ebx, kL4Ways, c.ways - 1);
  put_field(r.ecx, kL4Sets, c.sets - 1);
  r.edx = (c.no_invd_sharing ? 1u : 0) | (c.inclusive ? 2u : 0) | (c.complex_indexing ? 4u : 0);
  return r;
}

}  // namespace

CpuidRegs CpuidModel::leaf4(uint32_t subleaf, CoreType type) const {
  if (cpu_.vendor() == Vendor::Amd) return {};
  // Each core type reports its own caches; an E-module's L2 is shared at
  // the module level (SDM: EAX[25:14] counts the IDs sharing it).
  auto caches = deterministic_caches(type);
  if (subleaf >= caches.size()) return {};  // type 0: no more caches
  const CacheInfo& c = *caches[subleaf];
  // SDM: both counts are "maximum addressable IDs", i.e. the span of the
  // APIC-ID field, a power of two (QEMU >= 9.0 encodes them this way too).
  uint32_t sharing = 1u << sharing_offset(c.scope);
  uint32_t cores = 1u << (topology_.package_offset() - topology_.core_offset());
  return encode_deterministic_cache(c, sharing, cores);
}

CpuidRegs CpuidModel::leaf5() const {
  // The monitor line is 64 bytes when MONITOR exists (QEMU reports 0 even
  // then); no C-state sub-states are enumerated.
  uint32_t line = cpu_.has(CpuFeature::Monitor) ? kMonitorLineSize : 0;
  return {line, line, kMwaitEmx | kMwaitIbe, 0};
}

CpuidRegs CpuidModel::leaf6() const { return {feature(FeatureWord::Leaf6Eax), 0, 0, 0}; }

CpuidRegs CpuidModel::leaf7(uint32_t subleaf) const {
  if (subleaf != 0) return {};
  uint32_t edx = feature(FeatureWord::Leaf7Edx) | (topology_.is_hybrid() ? kLeaf7EdxHybrid : 0);
  return {0, feature(FeatureWord::Leaf7Ebx), feature(FeatureWord::Leaf7Ecx), edx};
}

CpuidRegs CpuidModel::leaf1A(CoreType type) const {
  // SDM vol. 2A "Hybrid Information Enumeration Leaf": zero on a part that
  // is not hybrid.
  if (!topology_.is_hybrid()) return {};
  const HybridDef& h = *cpu_.model.hybrid;
  CpuidRegs r;
  put_field(r.eax, kHybridCoreType, static_cast<uint32_t>(type));
  put_field(r.eax, kHybridNativeModelId, type == CoreType::Core ? h.core_native_model_id : h.atom_native_model_id);
  return r;
}

CpuidRegs CpuidModel::leafB(uint32_t subleaf, CoreType type) const {
  // Leaf 0xB knows only SMT and core; the core level's shift reaches the
  // package ID, so dies and modules fold into it. The shifts are the
  // package's layout; the SMT count is this core's (a hybrid part's E-cores
  // report 1, its P-cores 2).
  CpuidRegs r;
  switch (subleaf) {
    case 0:
      put_field(r.eax, kTopoShift, topology_.core_offset());
      put_field(r.ebx, kTopoCount, topology_.kind_of_type(type).threads);
      put_field(r.ecx, kTopoLevelType, kLevelSmt);
      break;
    case 1:
      put_field(r.eax, kTopoShift, topology_.package_offset());
      put_field(r.ebx, kTopoCount, topology_.threads_per_package());
      put_field(r.ecx, kTopoLevelType, kLevelCore);
      break;
    default:
      return topology_terminator(subleaf);
  }
  put_field(r.ecx, kTopoLevelNumber, subleaf);
  return r;
}

CpuidRegs CpuidModel::leaf1F(uint32_t subleaf, CoreType type) const {
  // In range but not reported (level= set past it): no level at all.
  if (!reports_leaf_1f()) return topology_terminator(subleaf);
  // The levels that exist, from SMT up; each one's shift is the APIC-ID
  // offset of its parent's field and its count the CPUs in one parent. A
  // level of count 1 has a zero-width field, so skipping it needs no
  // adjustment: the next offset and count already cover it. The counts below
  // the die are this core type's own module's.
  struct Level {
    uint32_t type;
    unsigned shift;
    unsigned count;
  };
  const Topology& t = topology_;
  const ModuleKind& kind = t.kind_of_type(type);
  std::vector<Level> levels{{kLevelSmt, t.core_offset(), kind.threads},
                            {kLevelCore, t.module_offset(), kind.threads_per_module()}};
  if (t.counts().modules > 1) levels.push_back({kLevelModule, t.die_offset(), t.threads_per_die()});
  if (t.counts().dies > 1) levels.push_back({kLevelDie, t.package_offset(), t.threads_per_package()});
  if (subleaf >= levels.size()) return topology_terminator(subleaf);
  CpuidRegs r;
  put_field(r.eax, kTopoShift, levels[subleaf].shift);
  put_field(r.ebx, kTopoCount, levels[subleaf].count);
  put_field(r.ecx, kTopoLevelNumber, subleaf);
  put_field(r.ecx, kTopoLevelType, levels[subleaf].type);
  return r;
}

CpuidRegs CpuidModel::ext0() const {
  // QEMU repeats the vendor here for every vendor; Intel CPUs return zeros.
  const std::string& v = cpu_.model.vendor_id;
  return {xlevel_, pack4(v.data()), pack4(v.data() + 8), pack4(v.data() + 4)};
}

CpuidRegs CpuidModel::ext1() const {
  CpuidRegs r = leaf1();
  uint32_t ecx = feature(FeatureWord::Ext1Ecx);
  // AMD's CmpLegacy: more than one core, HTT must not be read as SMT.
  if (cpu_.vendor() == Vendor::Amd && topology_.threads_per_package() > 1) ecx |= kExt1EcxCmpLegacy;
  return {r.eax, 0, ecx, feature(FeatureWord::Ext1Edx)};
}

CpuidRegs CpuidModel::brand(uint32_t leaf) const {
  char text[48] = {};
  std::copy_n(cpu_.model.brand.data(), std::min<size_t>(cpu_.model.brand.size(), 47), text);
  const char* part = text + (leaf - 0x80000002) * 16;
  return {pack4(part), pack4(part + 4), pack4(part + 8), pack4(part + 12)};
}

CpuidRegs CpuidModel::ext5() const {
  const CpuModelDef& m = cpu_.model;
  auto l1 = [](const CacheInfo& c) {
    uint32_t reg = 0;
    put_field(reg, kAmdL1Size, cache_size_kib(c));
    put_field(reg, kAmdL1Assoc, c.ways);
    put_field(reg, kAmdL1LinesPerTag, c.lines_per_tag);
    put_field(reg, kAmdL1LineSize, c.line_size);
    return reg;
  };
  return {kAmdL1Tlb2M, kAmdL1Tlb4K, l1(m.amd_caches.l1d), l1(m.amd_caches.l1i)};
}

CpuidRegs CpuidModel::ext6() const {
  const CpuModelDef& m = cpu_.model;
  CpuidRegs r{kAmdL2Tlb2M, kAmdL2Tlb4K, 0, 0};
  put_field(r.ecx, kAmdL2Size, cache_size_kib(m.amd_caches.l2));
  put_field(r.ecx, kAmdL2Assoc, amd_encoded_ways(m.amd_caches.l2.ways, false));
  put_field(r.ecx, kAmdL2LinesPerTag, m.amd_caches.l2.lines_per_tag);
  put_field(r.ecx, kAmdL2LineSize, m.amd_caches.l2.line_size);
  if (cpu_.l3_cache) {
    put_field(r.edx, kAmdL3Size, m.amd_caches.l3.size / (512 * 1024));
    put_field(r.edx, kAmdL3Assoc, amd_encoded_ways(m.amd_caches.l3.ways, false));
    put_field(r.edx, kAmdL3LinesPerTag, m.amd_caches.l3.lines_per_tag);
    put_field(r.edx, kAmdL3LineSize, m.amd_caches.l3.line_size);
  }
  return r;
}

CpuidRegs CpuidModel::ext7() const { return {0, 0, 0, feature(FeatureWord::Ext7Edx)}; }

CpuidRegs CpuidModel::ext8() const {
  CpuidRegs r;
  r.eax = cpu_.phys_bits;
  if (feature(FeatureWord::Ext1Edx) & kExt1EdxLongMode) r.eax |= kVirtAddrBits << 8;
  r.ebx = feature(FeatureWord::Ext8Ebx);
  // ECX is AMD's (APM); the SDM reserves it on Intel.
  if (cpu_.vendor() == Vendor::Amd && topology_.threads_per_package() > 1) {
    put_field(r.ecx, kAmdApicIdSize, topology_.package_offset());
    put_field_saturated(r.ecx, kAmdThreadsInPackage, topology_.threads_per_package() - 1);
  }
  return r;
}

CpuidRegs CpuidModel::extA() const {
  if (!(feature(FeatureWord::Ext1Ecx) & kExt1EcxSvm)) return {};
  // SVM revision 1 and 16 ASIDs, as QEMU reports.
  return {1, 0x10, 0, feature(FeatureWord::SvmEdx)};
}

CpuidRegs CpuidModel::hypervisor(uint32_t leaf) const {
  if (!cpu_.has(CpuFeature::Hypervisor)) return {};
  // KVM's features (Documentation/virt/kvm/x86/cpuid.rst): EAX the
  // paravirtual features that are on and the extended destination ID, EDX
  // the hints (KVM_HINTS_REALTIME). topolab's own leaves announce none.
  if (leaf == kHypervisorMax) {
    if (!cpu_.kvm_signature) return {};
    return {cpu_.kvm_pv.cpuid_eax() | (cpu_.offers_ext_dest_id() ? kKvmFeatureMsiExtDestId : 0), 0, 0,
            cpu_.kvm_pv.cpuid_edx()};
  }
  if (leaf != kHypervisorBase) return {};
  // The hypervisor signature: guests that look for one find "topolab", or
  // with kvm=on KVM's "KVMKVMKVM\0\0\0".
  if (cpu_.kvm_signature) return {kHypervisorMax, pack4("KVMK"), pack4("VMKV"), pack4("M\0\0\0")};
  return {kHypervisorMax, pack4("topo"), pack4("lab\0"), 0};
}

CpuidRegs CpuidModel::ext1D(uint32_t subleaf) const {
  if (!has_topoext_) return {};
  auto caches = deterministic_caches(CoreType::Core);
  if (subleaf >= caches.size()) return {};
  const CacheInfo& c = *caches[subleaf];
  // Same layout as leaf 4 without the core count (EAX[31:26] reserved).
  return encode_deterministic_cache(c, 1u << sharing_offset(c.scope), 0);
}

CpuidRegs CpuidModel::ext1E() const {
  if (!has_topoext_) return {};
  CpuidRegs r;
  put_field(r.ebx, kAmdThreadsPerCore, topology_.threads_per_core() - 1);
  put_field_saturated(r.ecx, kAmdNodesPerPackage, topology_.counts().dies - 1);
  return r;  // APIC ID, core and node IDs are per vCPU: patch_for_cpu
}

// Which leaves and subleaves exist does not depend on the vCPU (only the
// APIC-ID fields and, on a hybrid part, the core type do), so the list is
// built once per core type from the base leaves, in ascending (leaf,
// subleaf) order, which lookup() searches.
std::vector<CpuidModel::Entry> CpuidModel::build_enumeration(CoreType type) const {
  std::vector<Entry> out;
  auto add_leaf = [&](uint32_t leaf) {
    if (!has_subleaves(leaf)) {
      out.push_back({leaf, 0, base_leaf(leaf, 0, type)});
      return;
    }
    for (uint32_t sub = 0; sub < 64; ++sub) {
      CpuidRegs r = base_leaf(leaf, sub, type);
      out.push_back({leaf, sub, r});
      bool last = false;
      switch (leaf) {
        case 0x4: case 0x8000001D: last = (r.eax & 0x1f) == 0; break;
        case 0xB: case 0x1F: last = ((r.ecx >> 8) & 0xff) == kLevelInvalid; break;
        case 0x7: last = sub >= base_leaf(0x7, 0, type).eax; break;
        case 0xD: last = sub >= 1; break;  // no XSAVE: the main leaf and its sub-feature leaf
      }
      if (last) break;
    }
  };
  for (uint32_t leaf = 0; leaf <= level_; ++leaf) add_leaf(leaf);
  if (cpu_.has(CpuFeature::Hypervisor))
    for (uint32_t leaf = kHypervisorBase; leaf <= kHypervisorMax; ++leaf) add_leaf(leaf);
  for (uint32_t leaf = 0x80000000; leaf <= xlevel_; ++leaf) add_leaf(leaf);
  return out;
}

std::vector<CpuidModel::Entry> CpuidModel::enumerate(unsigned cpu_index) const {
  std::vector<Entry> out = type_entries(cpu_index);
  // The vCPU's own entries, in the same order, replace its type's.
  std::span<const Entry> own = cpu_entries(cpu_index);
  auto next = own.begin();
  for (Entry& e : out)
    if (carries_apic_id(e.leaf)) e = *next++;
  return out;
}

}  // namespace topolab
