// SPDX-License-Identifier: GPL-2.0-or-later
// How each consumer of CPUID turns a machine's raw leaves into packages,
// dies, modules, cores and threads, cache sharing and the scheduler's LLC.
// Pure functions of RawCpuid, so they judge topolab's own leaves and another
// VMM's dump alike. Each decoder follows its consumer's source, not the SDM:
//
// - linux-6.x: arch/x86/kernel/cpu/topology_common.c, topology_ext.c and
//   topology_amd.c (the 6.9 rewrite), cacheinfo.c. 0x1F, else 0xB (each
//   subleaf until a zero count or type), else leaf 1 + leaf 4; on AMD 0xB or
//   0x80000008 + 0x8000001E. The IDs come from the APIC itself (the MADT's
//   view); CPUID's copy is only checked ("[Firmware Bug] ... APIC ID
//   mismatch").
// - linux-4.x: topology.c detect_extended_topology() (0xB only, until type
//   0; 0x1F came in 5.2), detect_ht(), amd.c amd_detect_cmp() and
//   amd_get_topology(). The IDs come from CPUID (0xB EDX, else leaf 1).
// - hwloc: hwloc/topology-x86.c (2.x) look_proc(): leaf 1 + leaf 4, AMD
//   0x80000008/0x8000001E, then 0x1F or 0xB (until EAX = EBX = 0); caches
//   are grouped within a package.
// - edk2: UefiCpuPkg BaseXApicX2ApicLib GetProcessorLocation2ByApicId() and
//   GetProcessorLocationByApicId() (until type 0). edk2 reads no caches.
//
// Not modelled: leaf 0x80000026 (AMD Zen 4+ extended topology), Linux's
// leaf 2 fallback when leaf 4 is missing, NUMA (SRAT is not CPUID).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/cpuid_dump.h"

namespace topolab {

enum class Consumer { Linux6, Linux4, Hwloc, Edk2 };
inline constexpr Consumer kConsumers[] = {Consumer::Linux6, Consumer::Linux4, Consumer::Hwloc, Consumer::Edk2};
const char* consumer_name(Consumer c);  // "linux-6.x", "linux-4.x", "hwloc", "edk2"
std::optional<Consumer> consumer_named(std::string_view name);

// The levels a consumer places CPUs in, widest first. A level a consumer
// does not know is one instance per parent (a die per package).
enum class Level { Package, Die, Module, Core };
inline constexpr Level kLevels[] = {Level::Package, Level::Die, Level::Module, Level::Core};
const char* level_name(Level l);  // "package", "die", "module", "core"

// Groups of CPU indexes, each sorted, ordered by their first CPU.
using CpuGroups = std::vector<std::vector<unsigned>>;
CpuGroups group_by_key(const std::vector<uint64_t>& keys);

struct CacheView {
  unsigned level = 0;
  char kind = 'u';             // 'd', 'i' or 'u'
  unsigned sharing_ids = 1;    // 1 + EAX[25:14], or what the consumer assumes
  CpuGroups groups;
  std::string name() const;    // "L1d", "L2", "L3"
};

struct ConsumerView {
  Consumer consumer = Consumer::Linux6;
  std::string topology_source;      // the leaves that placed the CPUs
  std::vector<uint32_t> apic_ids;   // per CPU, the ID the consumer computes with
  // Per level, one key per CPU: CPUs with equal keys share an instance.
  std::array<std::vector<uint64_t>, 4> keys;
  bool reads_caches = false;
  std::vector<CacheView> caches;
  bool has_llc = false;             // Linux's scheduler only
  CpuGroups llc;
  std::string llc_rule;
  // What the consumer prints or asserts, spelled as in its source, once each.
  std::vector<std::string> messages;

  CpuGroups groups(Level l) const { return group_by_key(keys[static_cast<size_t>(l)]); }
  // The most CPUs in one core: what the consumer calls threads per core.
  unsigned threads_per_core() const;
  const CacheView* cache(unsigned level, char kind) const;
};

ConsumerView decode_as(Consumer consumer, const RawCpuid& raw);

// ---- the raw fields several decoders and the lint read ---------------------

struct CpuIdentity {
  bool amd = false;
  unsigned family = 0, model = 0;
  uint32_t max_basic = 0, max_extended = 0;
  bool htt = false, x2apic = false, topoext = false, hybrid = false;
};
CpuIdentity identify(const RawCpuLeaves& cpu);

// One subleaf of leaf 0xB or 0x1F.
struct ExtTopologyLevel {
  uint32_t subleaf = 0;
  uint32_t type = 0;      // ECX[15:8]: 1 SMT, 2 core, 3 module, 4 tile, 5 die
  unsigned shift = 0;     // EAX[4:0]
  unsigned count = 0;     // EBX[15:0]
  uint32_t x2apic_id = 0; // EDX
};
// The rule each consumer stops its walk of the subleaves on.
enum class ExtStopRule {
  CountOrTypeZero,  // Linux 6.x topo_subleaf(): !num_processors || type == INVALID
  TypeZero,         // Linux 4.x, edk2: level type INVALID
  EaxEbxZero,       // hwloc: !eax && !ebx
};
inline constexpr unsigned kMaxExtSubleaves = 32;  // a walk that never stops is cut here
// The subleaves a consumer accepts, before the one it stops on.
std::vector<ExtTopologyLevel> read_ext_topology(const RawCpuLeaves& cpu, uint32_t leaf, ExtStopRule rule);

}  // namespace topolab
