#include "model/cpu_model.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "model/topology.h"

namespace topolab {

namespace {

using FW = FeatureWord;

// ---- cache geometry (QEMU target/i386/cpu.c) -------------------------------
// The "legacy" caches QEMU gives every model without its own cache_info.
constexpr CacheInfo kLegacyL1d{CacheType::Data, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kLegacyL1i{CacheType::Instruction, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kLegacyL2{CacheType::Unified, 2, 4 * 1024 * 1024, 64, 16, 1, 4096, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kLegacyL3{CacheType::Unified, 3, 16 * 1024 * 1024, 64, 16, 1, 16384, 1, true, false, true, true, CacheScope::Die};
// What the same models report in AMD's 0x80000005/6.
constexpr CacheInfo kLegacyAmdL1d{CacheType::Data, 1, 64 * 1024, 64, 2, 1, 512, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kLegacyAmdL1i{CacheType::Instruction, 1, 64 * 1024, 64, 2, 1, 512, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kLegacyAmdL2{CacheType::Unified, 2, 512 * 1024, 64, 16, 1, 512, 1, false, false, false, false, CacheScope::Core};
// EPYC (Zen 1): its own geometry, used for every cache leaf; L3 per CCX/die.
constexpr CacheInfo kEpycL1d{CacheType::Data, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kEpycL1i{CacheType::Instruction, 1, 64 * 1024, 64, 4, 1, 256, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kEpycL2{CacheType::Unified, 2, 512 * 1024, 64, 8, 1, 1024, 1, false, false, false, false, CacheScope::Core};
constexpr CacheInfo kEpycL3{CacheType::Unified, 3, 8 * 1024 * 1024, 64, 16, 1, 8192, 1, true, false, true, true, CacheScope::Die};

// Alder Lake-S (i9-12900K class). P-cores (Golden Cove): 48 KiB 12-way
// L1d, 32 KiB 8-way L1i and a private 1.25 MiB 10-way L2. E-cores
// (Gracemont): 32 KiB 8-way L1d, 64 KiB 8-way L1i, and one 2 MiB 16-way L2
// per module of four. Both share the 30 MiB 12-way L3, which is not
// inclusive. Intel's optimization manual (Alder Lake chapter) gives these.
constexpr CacheInfo kGoldenCoveL1d{CacheType::Data, 1, 48 * 1024, 64, 12, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kGoldenCoveL1i{CacheType::Instruction, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kGoldenCoveL2{CacheType::Unified, 2, 1280 * 1024, 64, 10, 1, 2048, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kGracemontL1d{CacheType::Data, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kGracemontL1i{CacheType::Instruction, 1, 64 * 1024, 64, 8, 1, 128, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kGracemontL2{CacheType::Unified, 2, 2 * 1024 * 1024, 64, 16, 1, 2048, 1, true, true, false, false, CacheScope::Module};
constexpr CacheInfo kAlderLakeL3{CacheType::Unified, 3, 30 * 1024 * 1024, 64, 12, 1, 40960, 1, true, false, false, true, CacheScope::Die};
// Leaf 1AH EAX[23:0]; the SDM gives no table of native model IDs.
constexpr uint32_t kAlderLakeNativeModelId = 0x1;

// Leaf 2 descriptors (SDM table 3-12): 0x2C 32 KiB 8-way L1d, 0x30 32 KiB
// 8-way L1i, 0x7D 2 MiB 8-way L2, 0x4D 16 MiB 16-way L3. The L2 descriptor
// disagrees with leaf 4's 4 MiB 16-way L2; QEMU has the same mismatch (its
// legacy_l2_cache_cpuid2 carries a FIXME) and guests prefer leaf 4.
constexpr uint8_t kDesc_L1d32K = 0x2c, kDesc_L1i32K = 0x30, kDesc_L2_2M = 0x7d, kDesc_L3_16M = 0x4d;

// Feature words are what QEMU 7.2's TCG shows a guest for the same model
// (the model's features filtered by what TCG implements), less what the CPU
// underneath topolab cannot execute. Unicorn 2.0.1 is QEMU 5.0's TCG with
// its own feature filter: it raises #UD for AVX, AVX2, FMA, F16C, POPCNT,
// MOVBE, PCLMULQDQ, RDRAND, XSAVE/XGETBV, CLFLUSHOPT, CLWB and RDFSBASE
// whatever CPU model it is given (the cpu_features testcase runs one
// instruction per advertised bit). MONITOR/MWAIT, which it #UDs too, the
// machine emulates, so EPYC keeps MONITOR as in QEMU 7.2. EPYC keeps TOPOEXT, which QEMU 7.2's TCG
// drops although it only describes topology: without it no guest would read
// 0x8000001D/1E. docs/deviations.md lists all of this.
constexpr CacheSet kLegacy{kLegacyL1d, kLegacyL1i, kLegacyL2, kLegacyL3};
constexpr CacheSet kLegacyAmd{kLegacyAmdL1d, kLegacyAmdL1i, kLegacyAmdL2, kLegacyL3};
constexpr CacheSet kEpyc{kEpycL1d, kEpycL1i, kEpycL2, kEpycL3};
constexpr Leaf2Descriptors kLegacyLeaf2{kDesc_L1d32K, kDesc_L1i32K, kDesc_L2_2M, kDesc_L3_16M};

CpuModelDef qemu64_model() {
  return {
      .name = "qemu64",
      .description = "QEMU's default 64-bit CPU (AMD vendor, family 15)",
      .vendor = Vendor::Amd,
      .vendor_id = "AuthenticAMD",
      .family = 15, .model = 107, .stepping = 1,
      .level = 0xd, .xlevel = 0x8000000a,
      .brand = "QEMU Virtual CPU version 2.5+",
      .features = {
          {FW::Leaf1Edx, 0x078bfbfd},  // PPRO features + MTRR CLFLUSH MCA PSE36 (VME off, as QEMU's TCG)
          {FW::Leaf1Ecx, 0x80002001},  // SSE3 CX16 HYPERVISOR
          {FW::Ext1Edx, 0x2193fbfd},   // LM SYSCALL NX + AMD aliases of leaf 1 EDX
          {FW::Ext1Ecx, 0x00000005},   // LAHF_LM SVM
      },
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
  };
}

CpuModelDef skylake_server_model() {
  return {
      .name = "Skylake-Server",
      .description = "Intel Xeon Processor (Skylake), family 6 model 85",
      .vendor = Vendor::Intel,
      .vendor_id = "GenuineIntel",
      .family = 6, .model = 85, .stepping = 4,
      .level = 0xd, .xlevel = 0x80000008,
      .brand = "Intel Xeon Processor (Skylake)",
      .features = {
          {FW::Leaf1Edx, 0x078bfbfd},
          {FW::Leaf1Ecx, 0x82182201},  // SSE3 SSSE3 CX16 SSE4.1 SSE4.2 AES HYPERVISOR
          {FW::Leaf6Eax, 0x00000004},  // ARAT
          {FW::Leaf7Ebx, 0x00180388},  // BMI1 SMEP BMI2 ERMS ADX SMAP
          {FW::Leaf7Ecx, 0x00000008},  // PKU
          {FW::Ext1Edx, 0x2c100800},   // SYSCALL NX PDPE1GB RDTSCP LM
          {FW::Ext1Ecx, 0x00000021},    // LAHF_LM ABM
      },
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
  };
}

CpuModelDef alderlake_model() {
  return {
      .name = "AlderLake",
      .description = "Intel Core (Alder Lake-S), family 6 model 0x97: hybrid, P-cores and E-cores",
      .vendor = Vendor::Intel,
      .vendor_id = "GenuineIntel",
      .family = 6, .model = 0x97, .stepping = 2,
      // Leaf 0x1A (core types) and 0x1F (the module level) are part
      // of the model, as on the real part.
      .level = 0x1f, .xlevel = 0x80000008,
      .brand = "12th Gen Intel(R) Core(TM) i9-12900K",
      // The instructions the engine executes for a model it has no CPU
      // of its own for (qemu64's TCG filter), in Intel's spelling: SSE3
      // and CX16, no SSSE3/SSE4/AES. docs/topology.md says why.
      .features = {
          {FW::Leaf1Edx, 0x078bfbfd},
          {FW::Leaf1Ecx, 0x80002001},  // SSE3 CX16 HYPERVISOR
          {FW::Leaf6Eax, 0x00000004},  // ARAT
          {FW::Ext1Edx, 0x20100800},   // SYSCALL NX LM
          {FW::Ext1Ecx, 0x00000001},   // LAHF_LM
      },
      .caches = {kGoldenCoveL1d, kGoldenCoveL1i, kGoldenCoveL2, kAlderLakeL3},
      .amd_caches = kLegacyAmd,
      .leaf2 = {.use_leaf4 = true},
      .hybrid = HybridDef{kAlderLakeNativeModelId, kAlderLakeNativeModelId,
                          {kGracemontL1d, kGracemontL1i, kGracemontL2, kAlderLakeL3}}
  };
}

CpuModelDef epyc_model() {
  return {
      .name = "EPYC",
      .description = "AMD EPYC Processor (Zen, family 23)",
      .vendor = Vendor::Amd,
      .vendor_id = "AuthenticAMD",
      .family = 23, .model = 1, .stepping = 2,
      .level = 0xd, .xlevel = 0x8000001e,
      .brand = "AMD EPYC Processor",
      .features = {
          {FW::Leaf1Edx, 0x078bfbfd},
          {FW::Leaf1Ecx, 0x82182209},  // SSE3 MONITOR SSSE3 CX16 SSE4.1 SSE4.2 AES HYPERVISOR
          {FW::Leaf6Eax, 0x00000004},  // ARAT
          {FW::Leaf7Ebx, 0x00180188},  // BMI1 SMEP BMI2 ADX SMAP
          {FW::Ext1Edx, 0x2dd3fbfd},   // SYSCALL NX MMXEXT PDPE1GB RDTSCP LM + AMD aliases
          {FW::Ext1Ecx, 0x00400075},   // LAHF_LM SVM CR8LEG ABM SSE4A TOPOEXT
          {FW::SvmEdx, 0x00000001},    // NPT
      },
      // EPYC's own geometry serves every cache leaf; it has no leaf 2.
      .caches = kEpyc, .amd_caches = kEpyc, .leaf2 = {}, .hybrid = std::nullopt,
  };
}

std::vector<CpuModelDef> make_models() {
  return {qemu64_model(), skylake_server_model(), alderlake_model(), epyc_model()};
}

// Bits that -cpu can switch by name (SDM names, QEMU spellings).
const std::vector<FeatureFlag> kFlags = {
    {"monitor", FW::Leaf1Ecx, 3},      {"x2apic", FW::Leaf1Ecx, 21},
    {"tsc-deadline", FW::Leaf1Ecx, 24}, {"hypervisor", FW::Leaf1Ecx, 31},
    {"ht", FW::Leaf1Edx, 28},
    {"arat", FW::Leaf6Eax, 2},          {"invtsc", FW::Ext7Edx, 8},
    {"topoext", FW::Ext1Ecx, 22},       {"svm", FW::Ext1Ecx, 2},
    {"pdpe1gb", FW::Ext1Edx, 26},       {"rdtscp", FW::Ext1Edx, 27},
};

const FeatureFlag* find_flag(std::string_view name) {
  for (const auto& f : kFlags)
    if (f.name == name) return &f;
  return nullptr;
}

std::string known_flag_names() {
  std::string names;
  for (const auto& f : kFlags) names += fmt::format("{}{}", names.empty() ? "" : ", ", f.name);
  return names;
}

bool parse_switch(std::string_view key, std::string_view value) {
  if (value == "on" || value == "true" || value == "yes") return true;
  if (value == "off" || value == "false" || value == "no") return false;
  throw ConfigError(fmt::format("-cpu: {} must be on or off, got '{}'", key, value));
}

uint32_t parse_leaf(std::string_view key, std::string_view value) {
  uint32_t v = 0;
  int base = 10;
  if (value.starts_with("0x") || value.starts_with("0X")) {
    value.remove_prefix(2);
    base = 16;
  }
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v, base);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size())
    throw ConfigError(fmt::format("-cpu: {} expects a number, got '{}'", key, value));
  return v;
}

void apply_property(CpuConfig& cfg, std::string_view prop) {
  CpuModelDef& m = cfg.model;
  auto set_flag = [&](std::string_view name, bool on) {
    const FeatureFlag* f = find_flag(name);
    if (!f)
      throw ConfigError(fmt::format("-cpu: unknown feature '{}' for {} (known: {})", name, m.name, known_flag_names()));
    uint32_t& word = m.features[f->word];
    word = on ? (word | (1u << f->bit)) : (word & ~(1u << f->bit));
  };
  if (prop.starts_with('+') || prop.starts_with('-')) {
    set_flag(prop.substr(1), prop[0] == '+');
    return;
  }
  size_t eq = prop.find('=');
  if (eq == std::string_view::npos)
    throw ConfigError(fmt::format("-cpu: property '{}' needs a value, or + / - in front of a feature", prop));
  std::string_view key = prop.substr(0, eq), value = prop.substr(eq + 1);
  if (key == "l3-cache") {
    cfg.l3_cache = parse_switch(key, value);
  } else if (key == "vendor") {
    if (value.size() != 12) throw ConfigError(fmt::format("-cpu: vendor must be 12 characters, got '{}'", value));
    m.vendor_id = std::string(value);
    // The vendor decides which cache leaves exist and how guests read them.
    m.vendor = value == "AuthenticAMD" || value == "HygonGenuine" ? Vendor::Amd : Vendor::Intel;
  } else if (key == "level") {
    m.level = parse_leaf(key, value);
    cfg.level_explicit = true;
    if (m.level > 0xff) throw ConfigError(fmt::format("-cpu: level {:#x} is past the last basic leaf topolab models (0xff)", m.level));
  } else if (key == "xlevel") {
    m.xlevel = parse_leaf(key, value);
    cfg.xlevel_explicit = true;
    if (m.xlevel < 0x80000000 || m.xlevel > 0x800000ff)
      throw ConfigError(fmt::format("-cpu: xlevel must be in 0x80000000..0x800000ff, got {:#x}", m.xlevel));
  } else if (key == "x-force-cpuid-0x1f") {
    cfg.force_cpuid_0x1f = parse_switch(key, value);
  } else if (key == "model-id") {
    if (value.size() > 47) throw ConfigError("-cpu: model-id is longer than the 47 characters CPUID holds");
    m.brand = std::string(value);
  } else if (find_flag(key)) {
    set_flag(key, parse_switch(key, value));
  } else {
    throw ConfigError(fmt::format("-cpu: unknown property '{}' (known: l3-cache, vendor, level, xlevel, model-id, "
                                  "x-force-cpuid-0x1f, {})",
                                  key,
                                  known_flag_names()));
  }
}

}  // namespace

const std::vector<CpuModelDef>& cpu_models() {
  static const std::vector<CpuModelDef> models = make_models();
  return models;
}

const std::vector<FeatureFlag>& feature_flags() { return kFlags; }

bool CpuConfig::has(std::string_view name) const {
  const FeatureFlag* f = find_flag(name);
  if (!f) return false;
  auto it = model.features.find(f->word);
  return it != model.features.end() && (it->second >> f->bit) & 1;
}

CpuConfig parse_cpu(std::string_view arg) {
  std::string_view rest = arg;
  size_t comma = rest.find(',');
  std::string_view name = rest.substr(0, comma);
  const auto& models = cpu_models();
  auto it = std::find_if(models.begin(), models.end(), [&](const CpuModelDef& m) { return m.name == name; });
  if (it == models.end()) {
    std::string known;
    for (const auto& m : models) known += fmt::format("{}{}", known.empty() ? "" : ", ", m.name);
    throw ConfigError(fmt::format("-cpu: unknown CPU model '{}' (known: {})", name, known));
  }
  CpuConfig cfg{.model = *it, .arg = std::string(arg)};
  while (comma != std::string_view::npos) {
    rest.remove_prefix(comma + 1);
    comma = rest.find(',');
    std::string_view prop = rest.substr(0, comma);
    if (prop.empty()) throw ConfigError(fmt::format("-cpu: empty property in '{}'", arg));
    apply_property(cfg, prop);
  }
  return cfg;
}

}  // namespace topolab

// ---- -machine smp-cache (QEMU 10.0 on x86) ----------------------------------

namespace topolab {

namespace {

constexpr const char* kSmpCacheNames[kSmpCacheCount] = {"l1d", "l1i", "l2", "l3"};

// QEMU's CpuTopologyLevel spellings and what an x86 PC machine makes of
// them: a level topolab shares caches at, or the reason QEMU refuses it.
struct TopologyLevelName {
  std::string_view name;
  std::optional<CacheScope> scope;
  const char* refusal;  // nullptr: accepted
};
constexpr const char* kNoSuchLevel = "invalid topology level: {}. The topology level is not supported by this machine";
const TopologyLevelName kTopologyLevels[] = {
    {"thread", std::nullopt, "{} level cache not supported by this machine"},
    {"core", CacheScope::Core, nullptr},
    {"module", CacheScope::Module, nullptr},
    {"cluster", std::nullopt, kNoSuchLevel},  // x86 has no cluster level
    {"die", CacheScope::Die, nullptr},
    {"socket", CacheScope::Package, nullptr},
    {"book", std::nullopt, kNoSuchLevel},  // s390x only
    {"drawer", std::nullopt, kNoSuchLevel},
    {"default", std::nullopt, nullptr},
};

struct SmpCacheItem {
  std::optional<SmpCache> cache;
  std::optional<std::string_view> topology;
};

SmpCache parse_smp_cache_name(std::string_view key, std::string_view value) {
  for (size_t i = 0; i < kSmpCacheCount; ++i)
    if (value == kSmpCacheNames[i]) return static_cast<SmpCache>(i);
  throw ConfigError(fmt::format("-machine: {} must be l1d, l1i, l2 or l3, got '{}'", key, value));
}

const TopologyLevelName& find_topology_level(std::string_view key, std::string_view value) {
  for (const auto& level : kTopologyLevels)
    if (level.name == value) return level;
  throw ConfigError(fmt::format(
      "-machine: {} must be thread, core, module, cluster, die, socket, book, drawer or default, got '{}'", key, value));
}

// "smp-cache.N.cache" / "smp-cache.N.topology" into items[N].
void add_smp_cache_property(std::vector<SmpCacheItem>& items, std::string_view key, std::string_view value) {
  std::string_view rest = key.substr(std::string_view("smp-cache.").size());
  size_t dot = rest.find('.');
  unsigned index = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + (dot == std::string_view::npos ? rest.size() : dot), index);
  if (dot == std::string_view::npos || ec != std::errc() || end != rest.data() + dot || index >= 64)
    throw ConfigError(fmt::format("-machine: '{}' is not smp-cache.N.cache or smp-cache.N.topology", key));
  std::string_view field = rest.substr(dot + 1);
  if (items.size() <= index) items.resize(index + 1);
  SmpCacheItem& item = items[index];
  if (field == "cache") {
    if (item.cache) throw ConfigError(fmt::format("-machine: {} is given twice", key));
    item.cache = parse_smp_cache_name(key, value);
  } else if (field == "topology") {
    if (item.topology) throw ConfigError(fmt::format("-machine: {} is given twice", key));
    find_topology_level(key, value);
    item.topology = value;
  } else {
    throw ConfigError(fmt::format("-machine: '{}' is not smp-cache.N.cache or smp-cache.N.topology", key));
  }
}

}  // namespace

const char* smp_cache_name(SmpCache cache) { return kSmpCacheNames[static_cast<size_t>(cache)]; }

MachineOptions parse_machine(std::string_view arg) {
  MachineOptions options;
  options.arg = std::string(arg);
  std::vector<SmpCacheItem> items;
  std::string_view rest = arg;
  for (bool first = true; !rest.empty() || first; first = false) {
    size_t comma = rest.find(',');
    std::string_view prop = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    size_t eq = prop.find('=');
    // The machine type may come first, bare: topolab is one PC machine.
    if (first && eq == std::string_view::npos && (prop == "pc" || prop == "q35" || prop.starts_with("pc-"))) continue;
    if (eq == std::string_view::npos || !prop.starts_with("smp-cache."))
      throw ConfigError(fmt::format(
          "-machine: unknown property '{}' (topolab models the machine type pc/q35 and smp-cache.N.cache/topology)", prop));
    add_smp_cache_property(items, prop.substr(0, eq), prop.substr(eq + 1));
    if (comma == std::string_view::npos) break;
  }
  // machine_parse_smp_cache(): each entry names a cache and a level, no
  // cache twice; thread, cluster, book and drawer are refused on x86.
  std::array<bool, kSmpCacheCount> seen{};
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].cache || !items[i].topology)
      throw ConfigError(fmt::format("-machine: smp-cache.{} needs both cache= and topology=", i));
    size_t cache = static_cast<size_t>(*items[i].cache);
    if (seen[cache])
      throw ConfigError(fmt::format("-machine: invalid cache properties: {}. The cache properties are duplicated",
                                    kSmpCacheNames[cache]));
    seen[cache] = true;
    const TopologyLevelName& level = find_topology_level("topology", *items[i].topology);
    if (level.refusal) throw ConfigError(fmt::format("-machine: {}", fmt::format(fmt::runtime(level.refusal), level.name)));
    options.cache_scope[cache] = level.scope;
  }
  return options;
}

}  // namespace topolab
