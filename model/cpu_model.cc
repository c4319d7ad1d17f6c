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
std::vector<CpuModelDef> make_models() {
  constexpr CacheSet kLegacy{kLegacyL1d, kLegacyL1i, kLegacyL2, kLegacyL3};
  constexpr CacheSet kLegacyAmd{kLegacyAmdL1d, kLegacyAmdL1i, kLegacyAmdL2, kLegacyL3};
  constexpr CacheSet kEpyc{kEpycL1d, kEpycL1i, kEpycL2, kEpycL3};
  constexpr Leaf2Descriptors kLegacyLeaf2{kDesc_L1d32K, kDesc_L1i32K, kDesc_L2_2M, kDesc_L3_16M};
  return {
      {
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
          .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2,
      },
      {
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
          .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2,
      },
      {
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
          .caches = kEpyc, .amd_caches = kEpyc, .leaf2 = {},
      },
  };
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
  } else if (key == "model-id") {
    if (value.size() > 47) throw ConfigError("-cpu: model-id is longer than the 47 characters CPUID holds");
    m.brand = std::string(value);
  } else if (find_flag(key)) {
    set_flag(key, parse_switch(key, value));
  } else {
    throw ConfigError(fmt::format("-cpu: unknown property '{}' (known: l3-cache, vendor, level, xlevel, model-id, {})", key,
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
