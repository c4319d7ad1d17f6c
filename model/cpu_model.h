// Named CPU models and QEMU's -cpu syntax: vendor, family/model/stepping,
// feature words and cache geometry. Pure data plus a parser; CpuidModel
// (cpuid.h) turns a CpuConfig and a Topology into CPUID leaves.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topolab {

enum class CacheType { Data = 1, Instruction = 2, Unified = 3 };

// Which CPUs share a cache. Sharing is a topology level, so the sharing
// count follows the -smp layout instead of being fixed per model. Ordered
// from the narrowest level up, as QEMU's CpuTopologyLevel.
enum class CacheScope { Core, Module, Die, Package };

struct CacheInfo {
  CacheType type;
  unsigned level;
  uint32_t size;  // bytes; must equal line_size * ways * partitions * sets
  unsigned line_size;
  unsigned ways;
  unsigned partitions;
  unsigned sets;
  unsigned lines_per_tag;  // AMD 0x80000005/6 only
  bool self_init;
  bool no_invd_sharing;  // leaf 4 EDX[0]: WBINVD/INVD does not act on sharers
  bool inclusive;
  bool complex_indexing;
  CacheScope scope;
};

struct CacheSet {
  CacheInfo l1d, l1i, l2, l3;
};

// Leaf 2 descriptor bytes (SDM table 3-12) for the same caches.
// use_leaf4: the table has no descriptor for these caches, so leaf 2
// carries only descriptor FFH ("no cache descriptors; use leaf 4"), as
// Intel's hybrid parts report.
struct Leaf2Descriptors {
  uint8_t l1d = 0, l1i = 0, l2 = 0, l3 = 0;
  bool use_leaf4 = false;
};

// The second core type of a hybrid part (SDM vol. 2A, leaf 1AH): the
// model's own caches describe its Core (P) cores, these its Atom (E) cores.
// Family, model and brand are the part's, the same on every core, as on
// Alder Lake; the native model IDs (leaf 1AH EAX[23:0]) tell the
// microarchitectures apart.
struct HybridDef {
  uint32_t core_native_model_id;
  uint32_t atom_native_model_id;
  CacheSet atom_caches;
};

// The feature words CPUID reports (QEMU's FeatureWord, the ones we model).
enum class FeatureWord {
  Leaf1Edx,
  Leaf1Ecx,
  Leaf6Eax,
  Leaf7Ebx,
  Leaf7Ecx,
  Leaf7Edx,
  Ext1Edx,    // 0x80000001
  Ext1Ecx,
  Ext7Edx,    // 0x80000007
  Ext8Ebx,    // 0x80000008
  SvmEdx,     // 0x8000000A: SVM sub-features
};

enum class Vendor { Intel, Amd };

struct CpuModelDef {
  std::string name;
  std::string description;
  Vendor vendor;
  std::string vendor_id;  // 12 characters, as leaf 0 spells it
  unsigned family, model, stepping;
  uint32_t level;   // highest basic leaf
  uint32_t xlevel;  // highest extended leaf
  std::string brand;  // leaves 0x80000002..4, at most 47 characters
  std::map<FeatureWord, uint32_t> features;
  // Leaf 4 / 0x8000001D caches.
  CacheSet caches;
  // The caches AMD's 0x80000005/6 report where they differ from the above
  // (QEMU's legacy "_amd" geometry on non-AMD models).
  CacheSet amd_caches;
  Leaf2Descriptors leaf2;
  // Hybrid parts only: a topology with E-modules needs it.
  std::optional<HybridDef> hybrid;
};

// A named feature bit that -cpu +name / -name / name=on|off can change.
struct FeatureFlag {
  std::string_view name;
  FeatureWord word;
  unsigned bit;
};

// A -cpu argument resolved: the model and every property applied.
struct CpuConfig {
  CpuModelDef model;
  bool l3_cache = true;  // QEMU's l3-cache, on by default since 2.8
  // level= / xlevel= given: QEMU then applies no automatic minimum level.
  bool level_explicit = false;
  bool xlevel_explicit = false;
  // QEMU 10.1's x-force-cpuid-0x1f: report leaf 0x1F even without dies or
  // modules.
  bool force_cpuid_0x1f = false;
  std::string arg;       // the -cpu text this came from, for reports

  Vendor vendor() const { return model.vendor; }
  bool has(std::string_view flag) const;
};

// The models topolab knows, in the order `-cpu help` lists them.
const std::vector<CpuModelDef>& cpu_models();
const std::vector<FeatureFlag>& feature_flags();

// The caches QEMU 10.0's -machine smp-cache.N.cache= names.
enum class SmpCache { L1d, L1i, L2, L3 };
inline constexpr size_t kSmpCacheCount = 4;
const char* smp_cache_name(SmpCache cache);

// What -machine sets that topolab models: the topology level each cache is
// shared at (nullopt: "default", the CPU model's own).
struct MachineOptions {
  std::array<std::optional<CacheScope>, kSmpCacheCount> cache_scope;
  std::string arg;  // the -machine text this came from
  const std::optional<CacheScope>& scope_of(SmpCache cache) const { return cache_scope[static_cast<size_t>(cache)]; }
};

// Parses QEMU's -machine syntax: [TYPE,]smp-cache.N.cache=l1d|l1i|l2|l3,
// smp-cache.N.topology=core|module|die|socket|default..., with QEMU 10.0's
// x86 rules (hw/core/machine-smp.c machine_parse_smp_cache): no cache twice,
// no thread level, no cluster/book/drawer level. The ordering rule (L1 <=
// L2 <= L3) needs the CPU model's defaults, so CpuidModel checks it. Throws
// ConfigError.
MachineOptions parse_machine(std::string_view arg);

// Parses QEMU's -cpu syntax: MODEL[,+flag|-flag|flag=on|off|l3-cache=on|off|
// vendor=ID|level=N|xlevel=N|model-id=TEXT|x-force-cpuid-0x1f=on|off...].
// Throws ConfigError.
CpuConfig parse_cpu(std::string_view arg);

}  // namespace topolab
