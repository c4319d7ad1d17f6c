// Named CPU models and QEMU's -cpu syntax: vendor, family/model/stepping,
// feature words and cache geometry. Pure data plus a parser; CpuidModel
// (cpuid.h) turns a CpuConfig and a Topology into CPUID leaves.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace topolab {

enum class CacheType { Data = 1, Instruction = 2, Unified = 3 };

// Which CPUs share a cache. Sharing is a topology level, so the sharing
// count follows the -smp layout instead of being fixed per model.
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
struct Leaf2Descriptors {
  uint8_t l1d = 0, l1i = 0, l2 = 0, l3 = 0;
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
  std::string arg;       // the -cpu text this came from, for reports

  Vendor vendor() const { return model.vendor; }
  bool has(std::string_view flag) const;
};

// The models topolab knows, in the order `-cpu help` lists them.
const std::vector<CpuModelDef>& cpu_models();
const std::vector<FeatureFlag>& feature_flags();

// Parses QEMU's -cpu syntax: MODEL[,+flag|-flag|flag=on|off|l3-cache=on|off|
// vendor=ID|level=N|xlevel=N|model-id=TEXT...]. Throws ConfigError.
CpuConfig parse_cpu(std::string_view arg);

}  // namespace topolab
