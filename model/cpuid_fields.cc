#include "model/cpuid_fields.h"

#include <algorithm>

namespace topolab {

namespace {

// Fields of several bits (the single-bit features come from the flag table).
constexpr CpuidField kFieldTable[] = {
    {0x0, 'a', 31, 0, "maximum input value for basic CPUID information"},
    {0x0, 'b', 31, 0, "vendor ID, characters 0-3"},
    {0x0, 'd', 31, 0, "vendor ID, characters 4-7"},
    {0x0, 'c', 31, 0, "vendor ID, characters 8-11"},
    {0x1, 'a', 3, 0, "stepping ID"},
    {0x1, 'a', 7, 4, "model"},
    {0x1, 'a', 11, 8, "family ID"},
    {0x1, 'a', 19, 16, "extended model ID"},
    {0x1, 'a', 27, 20, "extended family ID"},
    {0x1, 'b', 15, 8, "CLFLUSH line size in quadwords"},
    {0x1, 'b', 23, 16, "max addressable logical processor IDs in the package"},
    {0x1, 'b', 31, 24, "initial APIC ID"},
    {0x2, 'a', 7, 0, "CPUID(2) calls needed"},
    {0x2, 'c', 7, 0, "descriptor byte 0 (L3 when l3-cache=on)"},
    {0x2, 'd', 7, 0, "descriptor byte 0 (L2)"},
    {0x2, 'd', 15, 8, "descriptor byte 1 (L1i)"},
    {0x2, 'd', 23, 16, "descriptor byte 2 (L1d)"},
    {0x4, 'a', 4, 0, "cache type"},
    {0x4, 'a', 7, 5, "cache level"},
    {0x4, 'a', 8, 8, "self-initializing cache level"},
    {0x4, 'a', 9, 9, "fully associative cache"},
    {0x4, 'a', 25, 14, "max addressable IDs for logical processors sharing this cache"},
    {0x4, 'a', 31, 26, "max addressable core IDs in the package"},
    {0x4, 'b', 11, 0, "system coherency line size - 1"},
    {0x4, 'b', 21, 12, "physical line partitions - 1"},
    {0x4, 'b', 31, 22, "ways of associativity - 1"},
    {0x4, 'c', 31, 0, "number of sets - 1"},
    {0x4, 'd', 0, 0, "WBINVD/INVD does not act on lower caches of sharers"},
    {0x4, 'd', 1, 1, "cache inclusiveness"},
    {0x4, 'd', 2, 2, "complex cache indexing"},
    {0x5, 'a', 15, 0, "smallest monitor-line size in bytes"},
    {0x5, 'b', 15, 0, "largest monitor-line size in bytes"},
    {0x5, 'c', 0, 0, "MWAIT extensions enumerated"},
    {0x5, 'c', 1, 1, "interrupts break MWAIT even when disabled"},
    {0x7, 'd', 15, 15, "hybrid part"},
    {0xB, 'a', 4, 0, "bits to shift right on x2APIC ID to get the next level's ID"},
    {0xB, 'b', 15, 0, "logical processors at this level type"},
    {0xB, 'c', 7, 0, "level number"},
    {0xB, 'c', 15, 8, "level type"},
    {0xB, 'd', 31, 0, "x2APIC ID of the current logical processor"},
    {0x1A, 'a', 23, 0, "native model ID of the core"},
    {0x1A, 'a', 31, 24, "core type"},
    {0x80000000, 'a', 31, 0, "maximum input value for extended CPUID information"},
    {0x80000000, 'b', 31, 0, "vendor ID, characters 0-3 (QEMU repeats leaf 0's)"},
    {0x80000000, 'd', 31, 0, "vendor ID, characters 4-7"},
    {0x80000000, 'c', 31, 0, "vendor ID, characters 8-11"},
    {0x80000001, 'c', 1, 1, "CmpLegacy: HTT means more than one core"},
    {0x80000005, 'c', 7, 0, "L1 cache line size"},
    {0x80000005, 'c', 15, 8, "L1 cache lines per tag"},
    {0x80000005, 'c', 23, 16, "L1 cache associativity"},
    {0x80000005, 'c', 31, 24, "L1 cache size in KiB"},
    {0x80000005, 'd', 7, 0, "L1 cache line size"},
    {0x80000005, 'd', 15, 8, "L1 cache lines per tag"},
    {0x80000005, 'd', 23, 16, "L1 cache associativity"},
    {0x80000005, 'd', 31, 24, "L1 cache size in KiB"},
    {0x80000006, 'c', 7, 0, "L2 cache line size"},
    {0x80000006, 'c', 11, 8, "L2 cache lines per tag"},
    {0x80000006, 'c', 15, 12, "L2 cache associativity (encoded)"},
    {0x80000006, 'c', 31, 16, "L2 cache size in KiB"},
    {0x80000006, 'd', 7, 0, "L3 cache line size"},
    {0x80000006, 'd', 11, 8, "L3 cache lines per tag"},
    {0x80000006, 'd', 15, 12, "L3 cache associativity (encoded)"},
    {0x80000006, 'd', 31, 18, "L3 cache size in 512 KiB units"},
    {0x80000008, 'a', 7, 0, "physical address bits"},
    {0x80000008, 'a', 15, 8, "linear address bits"},
    {0x80000008, 'c', 7, 0, "number of threads in the package - 1"},
    {0x80000008, 'c', 15, 12, "APIC ID size (bits of thread ID in the package)"},
    {0x8000001E, 'a', 31, 0, "extended APIC ID"},
    {0x8000001E, 'b', 7, 0, "core ID"},
    {0x8000001E, 'b', 15, 8, "threads per core - 1"},
    {0x8000001E, 'c', 7, 0, "node ID"},
    {0x8000001E, 'c', 10, 8, "nodes per processor - 1"},
};

// Where each feature word lives (cpu_model.h FeatureWord).
struct FeatureWordPlace {
  FeatureWord word;
  uint32_t leaf;
  char reg;
};
constexpr FeatureWordPlace kFeatureWordPlaces[] = {
    {FeatureWord::Leaf1Edx, 0x1, 'd'},        {FeatureWord::Leaf1Ecx, 0x1, 'c'},
    {FeatureWord::Leaf6Eax, 0x6, 'a'},        {FeatureWord::Leaf7Ebx, 0x7, 'b'},
    {FeatureWord::Leaf7Ecx, 0x7, 'c'},        {FeatureWord::Leaf7Edx, 0x7, 'd'},
    {FeatureWord::Ext1Edx, 0x80000001, 'd'},  {FeatureWord::Ext1Ecx, 0x80000001, 'c'},
    {FeatureWord::Ext7Edx, 0x80000007, 'd'},  {FeatureWord::Ext8Ebx, 0x80000008, 'b'},
    {FeatureWord::SvmEdx, 0x8000000A, 'd'},
};

}  // namespace

uint32_t register_value(const CpuidRegs& r, char reg) {
  switch (reg) {
    case 'a': return r.eax;
    case 'b': return r.ebx;
    case 'c': return r.ecx;
    default: return r.edx;
  }
}

uint32_t field_value(uint32_t reg, const CpuidField& f) {
  unsigned width = f.hi - f.lo + 1;
  uint32_t mask = width == 32 ? 0xffffffffu : (1u << width) - 1;
  return (reg >> f.lo) & mask;
}

std::vector<CpuidField> cpuid_fields_of(uint32_t leaf, char reg) {
  uint32_t as = leaf == 0x1F ? 0xB : leaf == 0x8000001D ? 0x4 : leaf;
  std::vector<CpuidField> out;
  if (leaf >= 0x80000002 && leaf <= 0x80000004) out.push_back({leaf, reg, 31, 0, "processor brand string, 4 characters"});
  for (const CpuidField& f : kFieldTable)
    if (f.leaf == as && f.reg == reg && !(leaf == 0x8000001D && f.hi == 31 && f.lo == 26)) out.push_back(f);
  for (const FeatureWordPlace& p : kFeatureWordPlaces) {
    if (p.leaf != leaf || p.reg != reg) continue;
    for (const FeatureFlag& flag : feature_flags())
      if (flag.word == p.word &&
          std::none_of(out.begin(), out.end(), [&](const CpuidField& f) { return f.lo == flag.bit && f.hi == flag.bit; }))
        out.push_back({leaf, reg, flag.bit, flag.bit, flag.name.data()});
  }
  return out;
}

}  // namespace topolab
