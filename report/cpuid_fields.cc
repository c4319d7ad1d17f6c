// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_fields.h"

#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>

namespace topolab {

namespace {

using E = FieldEncoding;

constexpr std::string_view kSharingPlain =
    "the CPUs whose APIC IDs are equal once the low ceil(log2(N)) bits are dropped share one instance of this cache "
    "(Linux's rule)";

// SDM vol. 2A, CPUID, tables 3-8 and 3-12; AMD APM vol. 3, appendix E.
const std::vector<CpuidFieldName> kFields = {
    {0x0, 'a', 31, 0, "maximum input value for basic CPUID information", E::Hex, ""},

    {0x1, 'a', 3, 0, "stepping ID", E::Number, ""},
    {0x1, 'a', 7, 4, "model", E::Number, ""},
    {0x1, 'a', 11, 8, "family ID", E::Number, ""},
    {0x1, 'a', 13, 12, "processor type", E::Number, ""},
    {0x1, 'a', 19, 16, "extended model ID", E::Number, ""},
    {0x1, 'a', 27, 20, "extended family ID", E::Number, ""},
    {0x1, 'b', 7, 0, "brand index", E::Number, ""},
    {0x1, 'b', 15, 8, "CLFLUSH line size (in 8-byte units)", E::Number, ""},
    {0x1, 'b', 23, 16, "maximum number of addressable IDs for logical processors in this physical package", E::Number,
     "how many APIC IDs one package spans (a power of two on Intel); software older than leaf 0xB counts threads "
     "per package from it"},
    {0x1, 'b', 31, 24, "initial APIC ID", E::Hex,
     "this CPU's 8-bit APIC ID; thread, core, die and package are bit fields of it"},

    // Leaf 2 (SDM table 3-12): descriptor bytes; byte 0 of EAX is the count of CPUID(2) calls.
    {0x2, 'a', 7, 0, "number of times CPUID(2) must be executed", E::Number, ""},
    {0x2, 'a', 15, 8, "descriptor byte 1", E::Hex, ""},
    {0x2, 'a', 23, 16, "descriptor byte 2", E::Hex, ""},
    {0x2, 'a', 31, 24, "descriptor byte 3", E::Hex, ""},
    {0x2, 'c', 7, 0, "descriptor byte 0 (0x4d: a 16 MB L3)", E::Hex, ""},
    {0x2, 'd', 7, 0, "descriptor byte 0", E::Hex, ""},
    {0x2, 'd', 15, 8, "descriptor byte 1", E::Hex, ""},
    {0x2, 'd', 23, 16, "descriptor byte 2", E::Hex, ""},
    {0x4, 'a', 4, 0, "cache type field", E::CacheType, ""},
    {0x4, 'a', 7, 5, "cache level (starts at 1)", E::Number, ""},
    {0x4, 'a', 8, 8, "self initializing cache level", E::Number, ""},
    {0x4, 'a', 9, 9, "fully associative cache", E::Number, ""},
    {0x4, 'a', 25, 14, "maximum number of addressable IDs for logical processors sharing this cache", E::MinusOne,
     kSharingPlain},
    {0x4, 'a', 31, 26, "maximum number of addressable IDs for processor cores in the physical package", E::MinusOne,
     "how many core IDs one package spans"},
    {0x4, 'b', 11, 0, "L = system coherency line size", E::MinusOne, ""},
    {0x4, 'b', 21, 12, "P = physical line partitions", E::MinusOne, ""},
    {0x4, 'b', 31, 22, "W = ways of associativity", E::MinusOne, ""},
    {0x4, 'c', 31, 0, "S = number of sets", E::MinusOne, "size = W x P x L x S bytes"},
    {0x4, 'd', 0, 0, "write-back invalidate/invalidate (1: WBINVD/INVD not guaranteed to act on lower-level caches of sharing threads)",
     E::Number, ""},
    {0x4, 'd', 1, 1, "cache inclusiveness (1: inclusive of lower cache levels)", E::Number, ""},
    {0x4, 'd', 2, 2, "complex cache indexing", E::Number, ""},

    {0x5, 'a', 15, 0, "smallest monitor-line size in bytes", E::Number, ""},
    {0x5, 'b', 15, 0, "largest monitor-line size in bytes", E::Number, ""},
    {0x5, 'c', 0, 0, "enumeration of MONITOR-MWAIT extensions", E::Number, ""},
    {0x5, 'c', 1, 1, "supports treating interrupts as break-event for MWAIT, even when interrupts are disabled", E::Number,
     ""},

    {0xB, 'a', 4, 0, "number of bits to shift right on x2APIC ID to get a unique topology ID of the next level type",
     E::Number, "drop this many low bits of the x2APIC ID and what is left names the next level up"},
    {0xB, 'b', 15, 0, "number of logical processors at this level type", E::Number,
     "for information only: the SDM says software must not build the topology from it"},
    {0xB, 'c', 7, 0, "level number (same as the input ECX)", E::Number, ""},
    {0xB, 'c', 15, 8, "level type", E::LevelType, ""},
    {0xB, 'd', 31, 0, "x2APIC ID of the current logical processor", E::Hex,
     "this CPU's 32-bit APIC ID; the same in every subleaf"},

    {0x1A, 'a', 23, 0, "native model ID of the core", E::Hex, ""},
    {0x1A, 'a', 31, 24, "core type", E::CoreType, "which kind of core this CPU is on a hybrid part"},

    {0x40000000, 'a', 31, 0, "maximum hypervisor CPUID leaf", E::Hex, ""},

    {0x80000000, 'a', 31, 0, "maximum input value for extended function CPUID information", E::Hex, ""},

    {0x80000006, 'c', 7, 0, "L2 cache line size in bytes", E::Number, ""},
    {0x80000006, 'c', 11, 8, "L2 cache lines per tag", E::Number, ""},
    {0x80000006, 'c', 15, 12, "L2 cache associativity (encoded)", E::Hex, ""},
    {0x80000006, 'c', 31, 16, "L2 cache size in 1K units", E::Number, ""},
    {0x80000006, 'd', 7, 0, "L3 cache line size in bytes", E::Number, ""},
    {0x80000006, 'd', 11, 8, "L3 cache lines per tag", E::Number, ""},
    {0x80000006, 'd', 15, 12, "L3 cache associativity (encoded)", E::Hex, ""},
    {0x80000006, 'd', 31, 18, "L3 cache size in 512 KB units", E::Number,
     "AMD: no L3 here means Linux has no LLC ID and falls back to the die"},

    {0x80000008, 'a', 7, 0, "physical address bits", E::Number, ""},
    {0x80000008, 'a', 15, 8, "linear address bits", E::Number, ""},
    {0x80000008, 'c', 7, 0, "number of physical threads in the package (NC)", E::MinusOne, ""},
    {0x80000008, 'c', 15, 12, "APIC ID size (bits of the APIC ID that name a thread in the package)", E::Number, ""},

    {0x8000001E, 'a', 31, 0, "extended APIC ID", E::Hex, ""},
    {0x8000001E, 'b', 7, 0, "core ID", E::Number, "AMD: which core of the package this thread is on"},
    {0x8000001E, 'b', 15, 8, "threads per core", E::MinusOne, "AMD: 2 here is how Linux learns about SMT siblings"},
    {0x8000001E, 'c', 7, 0, "node ID", E::Number, ""},
    {0x8000001E, 'c', 10, 8, "nodes per processor", E::MinusOne, ""},
};

// Registers that hold text, four characters each, low byte first, in the
// order the characters run.
struct TextLeaf {
  uint32_t leaf;
  std::string_view regs;
  std::string_view name;
};
constexpr TextLeaf kTextLeaves[] = {
    {0x0, "bdc", "vendor identification string"},
    {0x40000000, "bcd", "hypervisor signature"},
    {0x80000000, "bdc", "vendor string (AMD)"},
    {0x80000002, "abcd", "processor brand string"},
    {0x80000003, "abcd", "processor brand string"},
    {0x80000004, "abcd", "processor brand string"},
};

// AMD's 0x80000005 describes the L1 data cache in ECX and the instruction
// cache in EDX, one layout for both.
struct AmdL1Field {
  unsigned hi, lo;
  std::string_view what;
};
constexpr AmdL1Field kAmdL1Layout[] = {
    {31, 24, "size in KB"}, {23, 16, "associativity"}, {15, 8, "lines per tag"}, {7, 0, "line size in bytes"}};

// Feature bits, one name per bit ("" = reserved or not named here).
struct FeatureBits {
  uint32_t leaf;
  char reg;
  std::array<std::string_view, 32> names;
};

const FeatureBits kFeatureBits[] = {
    {0x1, 'd', {"FPU", "VME", "DE", "PSE", "TSC", "MSR", "PAE", "MCE", "CX8", "APIC", "", "SEP", "MTRR", "PGE", "MCA",
                "CMOV", "PAT", "PSE-36", "PSN", "CLFSH", "", "DS", "ACPI", "MMX", "FXSR", "SSE", "SSE2", "SS",
                "HTT (more than one logical processor ID in the package)", "TM", "", "PBE"}},
    {0x1, 'c', {"SSE3", "PCLMULQDQ", "DTES64", "MONITOR", "DS-CPL", "VMX", "SMX", "EIST", "TM2", "SSSE3", "CNXT-ID",
                "SDBG", "FMA", "CMPXCHG16B", "xTPR update control", "PDCM", "", "PCID", "DCA", "SSE4_1", "SSE4_2",
                "x2APIC", "MOVBE", "POPCNT", "TSC-Deadline", "AESNI", "XSAVE", "OSXSAVE", "AVX", "F16C", "RDRAND",
                "hypervisor present (the SDM: not used)"}},
    {0x6, 'a', {"digital temperature sensor", "Intel Turbo Boost", "ARAT (APIC timer always running)", "", "PLN", "ECMD",
                "PTM", "HWP"}},
    {0x7, 'b', {"FSGSBASE", "IA32_TSC_ADJUST", "SGX", "BMI1", "HLE", "AVX2", "FDP_EXCPTN_ONLY", "SMEP", "BMI2",
                "enhanced REP MOVSB/STOSB", "INVPCID", "RTM", "RDT-M", "deprecates FPU CS and FPU DS", "MPX", "RDT-A",
                "AVX512F", "AVX512DQ", "RDSEED", "ADX", "SMAP", "AVX512_IFMA", "", "CLFLUSHOPT", "CLWB",
                "Intel Processor Trace", "AVX512PF", "AVX512ER", "AVX512CD", "SHA", "AVX512BW", "AVX512VL"}},
    {0x7, 'c', {"PREFETCHWT1", "AVX512_VBMI", "UMIP", "PKU", "OSPKE", "WAITPKG", "AVX512_VBMI2", "CET_SS", "GFNI",
                "VAES", "VPCLMULQDQ", "AVX512_VNNI", "AVX512_BITALG", "TME_EN", "AVX512_VPOPCNTDQ", "", "LA57", "",
                "", "", "", "", "RDPID", "KL", "", "CLDEMOTE", "", "MOVDIRI", "MOVDIR64B", "ENQCMD", "SGX_LC", "PKS"}},
    {0x7, 'd', {"", "", "AVX512_4VNNIW", "AVX512_4FMAPS", "fast short REP MOV", "", "", "", "AVX512_VP2INTERSECT", "",
                "MD_CLEAR", "", "", "", "SERIALIZE", "Hybrid (the part has more than one core type: see leaf 0x1A)",
                "TSXLDTRK", "", "PCONFIG", "", "CET_IBT", "", "", "", "", "", "IBRS and IBPB", "STIBP", "L1D_FLUSH",
                "IA32_ARCH_CAPABILITIES", "IA32_CORE_CAPABILITIES", "SSBD"}},
    {0x80000001, 'c', {"LAHF/SAHF in 64-bit mode", "CmpLegacy (AMD)", "SVM (AMD)", "ExtApicSpace (AMD)",
                       "AltMovCr8 (AMD)", "LZCNT", "SSE4A (AMD)", "MisAlignSse (AMD)", "PREFETCHW", "OSVW (AMD)",
                       "IBS (AMD)", "XOP (AMD)", "SKINIT (AMD)", "WDT (AMD)", "", "LWP (AMD)", "FMA4 (AMD)",
                       "TCE (AMD)", "", "", "", "TBM (AMD)",
                       "TopologyExtensions (AMD): leaves 0x8000001D and 0x8000001E exist", "PerfCtrExtCore (AMD)",
                       "PerfCtrExtNB (AMD)", "", "DataBreakpointExtension (AMD)", "PerfTsc (AMD)",
                       "PerfCtrExtLLC (AMD)", "MONITORX (AMD)"}},
    {0x80000001, 'd', {"", "", "", "", "", "", "", "", "", "", "", "SYSCALL/SYSRET", "", "", "", "", "", "", "", "",
                       "Execute Disable Bit", "", "MmxExt (AMD)", "", "", "FFXSR (AMD)", "1-GByte pages", "RDTSCP", "",
                       "Intel 64 architecture (long mode)", "3DNowExt (AMD)", "3DNow (AMD)"}},
    {0x80000007, 'd', {"", "", "", "", "", "", "", "", "invariant TSC"}},
};

const std::map<uint32_t, std::string_view> kLeafNames = {
    {0x0, "maximum basic leaf and vendor"},
    {0x1, "version and feature information"},
    {0x2, "TLB, cache and prefetch descriptors"},
    {0x4, "deterministic cache parameters"},
    {0x5, "MONITOR/MWAIT"},
    {0x6, "thermal and power management"},
    {0x7, "structured extended feature flags"},
    {0xB, "extended topology enumeration"},
    {0xD, "processor extended state enumeration"},
    {0x1A, "hybrid information (core type)"},
    {0x1F, "V2 extended topology enumeration"},
    {0x40000000, "hypervisor signature"},
    {0x40000001, "hypervisor features"},
    {0x80000000, "maximum extended leaf"},
    {0x80000001, "extended feature flags"},
    {0x80000002, "processor brand string"},
    {0x80000003, "processor brand string, continued"},
    {0x80000004, "processor brand string, continued"},
    {0x80000005, "L1 cache and TLB (AMD)"},
    {0x80000006, "L2 and L3 cache"},
    {0x80000007, "advanced power management (invariant TSC)"},
    {0x80000008, "address sizes and core count"},
    {0x8000000A, "SVM features (AMD)"},
    {0x8000001D, "cache topology (AMD)"},
    {0x8000001E, "processor topology (AMD)"},
};

// The leaf whose layout `leaf` shares.
uint32_t layout_of(uint32_t leaf) {
  if (leaf == 0x1F) return 0xB;
  if (leaf == 0x8000001D) return 0x4;
  return leaf;
}

std::string ascii_of(uint32_t value) {
  std::string out = "'";
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((value >> (8 * i)) & 0xff);
    if (c >= 0x20 && c < 0x7f) out += c;
    else out += fmt::format("\\x{:02x}", uint8_t(c));
  }
  return out + "'";
}

std::string reading_of(FieldEncoding encoding, uint32_t value) {
  static constexpr std::string_view kCacheTypes[] = {"0: null, no more caches", "1: data cache",
                                                     "2: instruction cache", "3: unified cache"};
  static constexpr std::string_view kLevelTypes[] = {"0: invalid (the last subleaf)", "1: SMT", "2: core",
                                                     "3: module", "4: tile", "5: die"};
  switch (encoding) {
    case E::Number: return fmt::format("{}", value);
    case E::MinusOne: return fmt::format("{} (N - 1, so N = {})", value, uint64_t(value) + 1);
    case E::Hex: return fmt::format("{:#x}", value);
    case E::CacheType: return value < 4 ? std::string(kCacheTypes[value]) : fmt::format("{}: reserved", value);
    case E::LevelType: return value < 6 ? std::string(kLevelTypes[value]) : fmt::format("{}: reserved", value);
    case E::CoreType: {
      const std::string name = core_type_name(value << 24);
      return name.empty() ? "0: not a hybrid part" : fmt::format("{:#x}: {}", value, name);
    }
  }
  return fmt::format("{}", value);
}

uint32_t bits_of(uint32_t value, unsigned hi, unsigned lo) {
  const uint32_t width = hi - lo + 1;
  return width >= 32 ? value : (value >> lo) & ((1u << width) - 1);
}

// Text and AMD's L1 caches, which follow a rule rather than a row each.
void decode_by_rule(uint32_t leaf, char reg, uint32_t value, std::vector<DecodedField>& out) {
  for (const TextLeaf& t : kTextLeaves) {
    const size_t at = t.regs.find(reg);
    if (t.leaf != leaf || at == std::string_view::npos) continue;
    // The brand string runs over three leaves of 16 characters.
    const size_t first = (leaf >= 0x80000002 ? (leaf - 0x80000002) * 16 : 0) + at * 4 + 1;
    out.push_back({31, 0, value, fmt::format("{}, characters {}-{}", t.name, first, first + 3), ascii_of(value), ""});
  }
  if (leaf == 0x80000005 && (reg == 'c' || reg == 'd'))
    for (const AmdL1Field& f : kAmdL1Layout) {
      const uint32_t v = bits_of(value, f.hi, f.lo);
      out.push_back({f.hi, f.lo, v, fmt::format("L1 {} cache {}", reg == 'c' ? "data" : "instruction", f.what),
                     fmt::format("{}", v), ""});
    }
}

}  // namespace

const std::vector<CpuidFieldName>& cpuid_field_names() { return kFields; }

std::string_view cpuid_leaf_name(uint32_t leaf) {
  auto it = kLeafNames.find(leaf);
  return it == kLeafNames.end() ? std::string_view() : it->second;
}

std::string field_bits(char reg, unsigned hi, unsigned lo) {
  const std::string name = fmt::format("E{}X", char(reg - 'a' + 'A'));
  return hi == lo ? fmt::format("{}[{}]", name, hi) : fmt::format("{}[{}:{}]", name, hi, lo);
}

std::vector<DecodedField> decode_register(uint32_t leaf, char reg, uint32_t value) {
  const uint32_t layout = layout_of(leaf);
  std::vector<DecodedField> out;
  decode_by_rule(leaf, reg, value, out);
  for (const CpuidFieldName& f : kFields) {
    if (f.leaf != layout || f.reg != reg) continue;
    // 0x8000001D has leaf 4's layout without the core count (reserved).
    if (leaf == 0x8000001D && f.hi == 31 && f.lo == 26) continue;
    const uint32_t v = bits_of(value, f.hi, f.lo);
    out.push_back({f.hi, f.lo, v, std::string(f.name), reading_of(f.encoding, v), std::string(f.plain)});
  }
  for (const FeatureBits& fb : kFeatureBits) {
    if (fb.leaf != layout || fb.reg != reg) continue;
    for (int bit = 31; bit >= 0; --bit) {
      if (!(value >> bit & 1)) continue;
      const std::string_view name = fb.names[bit];
      out.push_back({unsigned(bit), unsigned(bit), 1, name.empty() ? "(not named here)" : std::string(name), "1: set",
                     ""});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const DecodedField& a, const DecodedField& b) { return a.hi > b.hi; });
  return out;
}

std::string core_type_name(uint32_t leaf1a_eax) {
  const uint32_t type = leaf1a_eax >> 24;
  if (type == 0) return "";
  if (type == 0x40) return "Core (P-core)";
  if (type == 0x20) return "Atom (E-core)";
  return fmt::format("type {:#x}", type);
}

}  // namespace topolab
