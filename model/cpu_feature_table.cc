// SPDX-License-Identifier: GPL-2.0-or-later
// The CPUID feature flags as data: QEMU 7.2's names for every bit topolab
// reports, which engine CPU (or the machine) carries each out, and why one
// that nothing backs is not advertised. cpu_model.cc builds the models and
// the -cpu parser on it.
#include "model/cpu_feature_table.h"

#include <algorithm>
#include <string>

namespace topolab {

namespace {

using FW = FeatureWord;

// ---- the feature table -----------------------------------------------------
// Engines that execute a feature, measured with a raw Unicorn 2.1.3 engine
// running one instruction per feature on each engine CPU model
// (docs/cpu_models.md has the table and the method).
constexpr uint8_t kQ = 1u << static_cast<unsigned>(EngineCpuModel::Qemu64);
constexpr uint8_t kS = 1u << static_cast<unsigned>(EngineCpuModel::SkylakeServer);
constexpr uint8_t kE = 1u << static_cast<unsigned>(EngineCpuModel::Epyc);
constexpr uint8_t kAll = kQ | kS | kE;
constexpr uint8_t kSE = kS | kE;
constexpr uint8_t kM = kBackedByMachine;

constexpr const char* kNoAvx =
    "the engine has no AVX (Unicorn 2.1.3 is QEMU 5.0's TCG): VEX.256 forms raise #UD and VEX.128 forms "
    "ignore VEX.vvvv (VPADDD computed the wrong sum, measured)";
constexpr const char* kNoAvx512 = "the engine has no AVX-512: EVEX forms raise #UD (measured)";
constexpr const char* kNoXsave =
    "topolab does not advertise XSAVE: the engine's XSETBV accepts XCR0 bit 2 (AVX state) it cannot back, "
    "and CPUID.01H:ECX[27] OSXSAVE is not mirrored from CR4";
constexpr const char* kNoTsx = "the engine has no TSX: XBEGIN and XTEST raise #UD (measured)";
constexpr const char* kNoVmx =
    "the engine cannot execute VMX: QEMU's TCG implements no VMX (VMXON raises #UD, measured; QEMU 7.2's TCG "
    "drops vmx too)";
constexpr const char* kHostRandom =
    "the engine's RDRAND/RDSEED return numbers from a generator seeded from the host's /dev/urandom, which "
    "would make two runs differ";
constexpr const char* kNotMeasured = "nothing the engine executes backs it (not measured), so it is not advertised";
constexpr const char* kNoSpecMsrs = "topolab has no speculation-control MSRs (QEMU 7.2's TCG drops it too)";
constexpr const char* kNoSvmExtra = "the engine's SVM (QEMU 5.0's) does not implement it";

// QEMU 7.2's feature names (target/i386/cpu.c feature_word_info) for the
// words topolab reports. Bits QEMU leaves unnamed are not listed.
const std::vector<FeatureFlag> kFlags = {
    // CPUID.01H:EDX
    {"fpu", FW::Leaf1Edx, 0, kAll}, {"vme", FW::Leaf1Edx, 1, 0, "the engine has no virtual-8086 mode extensions (QEMU's TCG has none)"},
    {"de", FW::Leaf1Edx, 2, kAll}, {"pse", FW::Leaf1Edx, 3, kAll}, {"tsc", FW::Leaf1Edx, 4, kAll},
    {"msr", FW::Leaf1Edx, 5, kAll}, {"pae", FW::Leaf1Edx, 6, kAll}, {"mce", FW::Leaf1Edx, 7, kAll},
    {"cx8", FW::Leaf1Edx, 8, kAll}, {"apic", FW::Leaf1Edx, 9, kM}, {"sep", FW::Leaf1Edx, 11, kAll},
    {"mtrr", FW::Leaf1Edx, 12, kAll}, {"pge", FW::Leaf1Edx, 13, kAll}, {"mca", FW::Leaf1Edx, 14, kAll},
    {"cmov", FW::Leaf1Edx, 15, kAll}, {"pat", FW::Leaf1Edx, 16, kAll}, {"pse36", FW::Leaf1Edx, 17, kAll},
    {"pn", FW::Leaf1Edx, 18, 0, "there is no processor serial number"}, {"clflush", FW::Leaf1Edx, 19, kAll},
    {"ds", FW::Leaf1Edx, 21, 0, "the engine has no debug store"}, {"acpi", FW::Leaf1Edx, 22, kAll},
    {"mmx", FW::Leaf1Edx, 23, kAll}, {"fxsr", FW::Leaf1Edx, 24, kAll}, {"sse", FW::Leaf1Edx, 25, kAll},
    {"sse2", FW::Leaf1Edx, 26, kAll}, {"ss", FW::Leaf1Edx, 27, kAll}, {"ht", FW::Leaf1Edx, 28, kM},
    {"tm", FW::Leaf1Edx, 29, 0, "the engine has no thermal monitor"}, {"ia64", FW::Leaf1Edx, 30, 0, "this is not an IA-64"},
    {"pbe", FW::Leaf1Edx, 31, 0, "the engine has no pending-break enable"},
    // CPUID.01H:ECX
    {"pni", FW::Leaf1Ecx, 0, kAll}, {"pclmulqdq", FW::Leaf1Ecx, 1, kSE},
    {"dtes64", FW::Leaf1Ecx, 2, 0, "the engine has no debug store"}, {"monitor", FW::Leaf1Ecx, 3, kM},
    {"ds-cpl", FW::Leaf1Ecx, 4, 0, "the engine has no debug store"}, {"vmx", FW::Leaf1Ecx, 5, 0, kNoVmx},
    {"smx", FW::Leaf1Ecx, 6, 0, "the engine has no SMX (GETSEC)"},
    {"est", FW::Leaf1Ecx, 7, 0, "there are no Enhanced SpeedStep MSRs"},
    {"tm2", FW::Leaf1Ecx, 8, 0, "the engine has no thermal monitor"}, {"ssse3", FW::Leaf1Ecx, 9, kSE},
    {"cid", FW::Leaf1Ecx, 10, 0, "there is no L1 context ID"}, {"fma", FW::Leaf1Ecx, 12, 0, kNoAvx},
    {"cx16", FW::Leaf1Ecx, 13, kAll}, {"xtpr", FW::Leaf1Ecx, 14, 0, "there are no xTPR update messages"},
    {"pdcm", FW::Leaf1Ecx, 15, 0, "there is no IA32_PERF_CAPABILITIES"},
    {"pcid", FW::Leaf1Ecx, 17, 0,
     "the engine has no PCID: it accepts CR4.PCIDE and ignores it, so MOV CR3 with bit 63 set is taken as an "
     "address and the SDM's #GP checks are missing (QEMU 7.2's TCG drops pcid too)"},
    {"dca", FW::Leaf1Ecx, 18, 0, "there is no direct cache access"},
    {"sse4.1", FW::Leaf1Ecx, 19, kSE}, {"sse4.2", FW::Leaf1Ecx, 20, kSE}, {"x2apic", FW::Leaf1Ecx, 21, kM},
    {"movbe", FW::Leaf1Ecx, 22, kSE}, {"popcnt", FW::Leaf1Ecx, 23, kSE}, {"tsc-deadline", FW::Leaf1Ecx, 24, kM},
    {"aes", FW::Leaf1Ecx, 25, kSE}, {"xsave", FW::Leaf1Ecx, 26, 0, kNoXsave}, {"avx", FW::Leaf1Ecx, 28, 0, kNoAvx},
    {"f16c", FW::Leaf1Ecx, 29, 0, kNoAvx}, {"rdrand", FW::Leaf1Ecx, 30, 0, kHostRandom},
    {"hypervisor", FW::Leaf1Ecx, 31, kM},
    // CPUID.06H:EAX
    {"arat", FW::Leaf6Eax, 2, kM},
    // CPUID.(EAX=07H,ECX=0):EBX
    {"fsgsbase", FW::Leaf7Ebx, 0, kSE}, {"tsc-adjust", FW::Leaf7Ebx, 1, 0, "topolab does not announce IA32_TSC_ADJUST"},
    {"sgx", FW::Leaf7Ebx, 2, 0, "the engine has no SGX"}, {"bmi1", FW::Leaf7Ebx, 3, kSE},
    {"hle", FW::Leaf7Ebx, 4, 0, kNoTsx}, {"avx2", FW::Leaf7Ebx, 5, 0, kNoAvx}, {"smep", FW::Leaf7Ebx, 7, kAll},
    {"bmi2", FW::Leaf7Ebx, 8, kSE}, {"erms", FW::Leaf7Ebx, 9, kAll},
    {"invpcid", FW::Leaf7Ebx, 10, 0, "the engine cannot execute INVPCID: it raises #UD (measured)"},
    {"rtm", FW::Leaf7Ebx, 11, 0, kNoTsx},
    {"mpx", FW::Leaf7Ebx, 14, 0, "MPX needs the XSAVE BNDREGS/BNDCSR state, and topolab has no XSAVE"},
    {"avx512f", FW::Leaf7Ebx, 16, 0, kNoAvx512}, {"avx512dq", FW::Leaf7Ebx, 17, 0, kNoAvx512},
    {"rdseed", FW::Leaf7Ebx, 18, 0, kHostRandom}, {"adx", FW::Leaf7Ebx, 19, kSE}, {"smap", FW::Leaf7Ebx, 20, kSE},
    {"avx512ifma", FW::Leaf7Ebx, 21, 0, kNoAvx512},
    {"pcommit", FW::Leaf7Ebx, 22, 0, "the engine raises #UD for PCOMMIT (measured)"},
    {"clflushopt", FW::Leaf7Ebx, 23, kSE}, {"clwb", FW::Leaf7Ebx, 24, kS},
    {"intel-pt", FW::Leaf7Ebx, 25, 0, "there is no processor trace"}, {"avx512pf", FW::Leaf7Ebx, 26, 0, kNoAvx512},
    {"avx512er", FW::Leaf7Ebx, 27, 0, kNoAvx512}, {"avx512cd", FW::Leaf7Ebx, 28, 0, kNoAvx512},
    {"sha-ni", FW::Leaf7Ebx, 29, 0, "the engine raises #UD for SHA1RNDS4 (measured)"},
    {"avx512bw", FW::Leaf7Ebx, 30, 0, kNoAvx512}, {"avx512vl", FW::Leaf7Ebx, 31, 0, kNoAvx512},
    // CPUID.(EAX=07H,ECX=0):ECX
    {"avx512vbmi", FW::Leaf7Ecx, 1, 0, kNoAvx512},
    {"umip", FW::Leaf7Ecx, 2, 0,
     "the engine cannot execute UMIP: it accepts CR4.UMIP and ignores it, so SGDT/SIDT/SLDT/SMSW/STR do not "
     "fault at CPL > 0 (QEMU 5.0's TCG has no UMIP)"},
    {"pku", FW::Leaf7Ecx, 3, kS}, {"waitpkg", FW::Leaf7Ecx, 5, 0, "the engine has no UMONITOR/UMWAIT/TPAUSE"},
    {"avx512vbmi2", FW::Leaf7Ecx, 6, 0, kNoAvx512},
    {"gfni", FW::Leaf7Ecx, 8, 0, "the engine raises #UD for GF2P8MULB (measured)"},
    {"vaes", FW::Leaf7Ecx, 9, 0, kNoAvx}, {"vpclmulqdq", FW::Leaf7Ecx, 10, 0, kNoAvx},
    {"avx512vnni", FW::Leaf7Ecx, 11, 0, kNoAvx512}, {"avx512bitalg", FW::Leaf7Ecx, 12, 0, kNoAvx512},
    {"avx512-vpopcntdq", FW::Leaf7Ecx, 14, 0, kNoAvx512},
    {"la57", FW::Leaf7Ecx, 16, 0,
     "topolab delivers events with 48-bit canonical checks (arch/event_delivery.cc), so 5-level paging is not "
     "served whole"},
    {"rdpid", FW::Leaf7Ecx, 22, 0, "the engine raises #UD for RDPID (measured)"},
    {"bus-lock-detect", FW::Leaf7Ecx, 24, 0, kNotMeasured}, {"cldemote", FW::Leaf7Ecx, 25, kAll},
    {"movdiri", FW::Leaf7Ecx, 27, 0, "the engine raises #UD for MOVDIRI (measured)"},
    {"movdir64b", FW::Leaf7Ecx, 28, 0, "the engine raises #UD for MOVDIR64B (measured)"},
    {"sgxlc", FW::Leaf7Ecx, 30, 0, "the engine has no SGX"},
    {"pks", FW::Leaf7Ecx, 31, 0, "the engine has no supervisor protection keys (QEMU 5.0's TCG has none)"},
    // CPUID.(EAX=07H,ECX=0):EDX
    {"avx512-4vnniw", FW::Leaf7Edx, 2, 0, kNoAvx512}, {"avx512-4fmaps", FW::Leaf7Edx, 3, 0, kNoAvx512},
    {"fsrm", FW::Leaf7Edx, 4, kAll}, {"avx512-vp2intersect", FW::Leaf7Edx, 8, 0, kNoAvx512},
    {"md-clear", FW::Leaf7Edx, 10, 0, kNoSpecMsrs},
    {"serialize", FW::Leaf7Edx, 14, 0, "the engine raises #UD for SERIALIZE (measured)"},
    {"tsx-ldtrk", FW::Leaf7Edx, 16, 0, kNoTsx}, {"avx512-fp16", FW::Leaf7Edx, 23, 0, kNoAvx512},
    {"amx-bf16", FW::Leaf7Edx, 22, 0, "the engine has no AMX"}, {"amx-tile", FW::Leaf7Edx, 24, 0, "the engine has no AMX"},
    {"amx-int8", FW::Leaf7Edx, 25, 0, "the engine has no AMX"}, {"spec-ctrl", FW::Leaf7Edx, 26, 0, kNoSpecMsrs},
    {"stibp", FW::Leaf7Edx, 27, 0, kNoSpecMsrs}, {"arch-capabilities", FW::Leaf7Edx, 29, 0, kNoSpecMsrs},
    {"core-capability", FW::Leaf7Edx, 30, 0, kNotMeasured}, {"ssbd", FW::Leaf7Edx, 31, 0, kNoSpecMsrs},
    // CPUID.80000001H:EDX (the bits that alias leaf 1's are not named)
    {"syscall", FW::Ext1Edx, 11, kAll}, {"nx", FW::Ext1Edx, 20, kAll}, {"mmxext", FW::Ext1Edx, 22, kAll},
    {"fxsr-opt", FW::Ext1Edx, 25, 0, kNotMeasured}, {"pdpe1gb", FW::Ext1Edx, 26, kAll},
    {"rdtscp", FW::Ext1Edx, 27, kM}, {"lm", FW::Ext1Edx, 29, kAll},
    {"3dnowext", FW::Ext1Edx, 30, 0, "the engine raises #UD for PFNACC (measured)"},
    {"3dnow", FW::Ext1Edx, 31, 0, "the engine raises #UD for PFADD (measured)"},
    // CPUID.80000001H:ECX
    {"lahf-lm", FW::Ext1Ecx, 0, kAll}, {"cmp-legacy", FW::Ext1Ecx, 1, kM}, {"svm", FW::Ext1Ecx, 2, kQ | kE},
    {"extapic", FW::Ext1Ecx, 3, 0, "the local APIC has no extended register space"},
    {"cr8legacy", FW::Ext1Ecx, 4, kE}, {"abm", FW::Ext1Ecx, 5, kSE}, {"sse4a", FW::Ext1Ecx, 6, kAll},
    {"misalignsse", FW::Ext1Ecx, 7, 0, kNotMeasured}, {"3dnowprefetch", FW::Ext1Ecx, 8, kAll},
    {"osvw", FW::Ext1Ecx, 9, 0, "there are no OS-visible workaround MSRs"},
    {"ibs", FW::Ext1Ecx, 10, 0, "there is no instruction-based sampling"},
    {"xop", FW::Ext1Ecx, 11, 0, "the engine raises #UD for VPCMOV (measured)"},
    {"skinit", FW::Ext1Ecx, 12, 0, "the engine has no SKINIT"}, {"wdt", FW::Ext1Ecx, 13, 0, "there is no watchdog timer"},
    {"lwp", FW::Ext1Ecx, 15, 0, "the engine has no lightweight profiling"},
    {"fma4", FW::Ext1Ecx, 16, 0, "the engine raises #UD for VFMADDPS (measured)"},
    {"tce", FW::Ext1Ecx, 17, 0, kNotMeasured}, {"nodeid-msr", FW::Ext1Ecx, 19, 0, kNotMeasured},
    {"tbm", FW::Ext1Ecx, 21, 0, "the engine decodes TBM's BEXTR (XOP-encoded) as something else (measured)"},
    {"topoext", FW::Ext1Ecx, 22, kM},
    {"perfctr-core", FW::Ext1Ecx, 23, 0, "topolab does not announce the AMD F15h core performance counters"},
    {"perfctr-nb", FW::Ext1Ecx, 24, 0, "there are no northbridge performance counters"},
    // CPUID.80000007H:EDX
    {"invtsc", FW::Ext7Edx, 8, kM},
    // CPUID.80000008H:EBX
    {"clzero", FW::Ext8Ebx, 0, 0, "the engine raises #UD for CLZERO (measured)"},
    {"xsaveerptr", FW::Ext8Ebx, 2, 0, kNoXsave}, {"wbnoinvd", FW::Ext8Ebx, 9, kAll},
    {"ibpb", FW::Ext8Ebx, 12, 0, kNoSpecMsrs}, {"ibrs", FW::Ext8Ebx, 14, 0, kNoSpecMsrs},
    {"amd-stibp", FW::Ext8Ebx, 15, 0, kNoSpecMsrs}, {"amd-ssbd", FW::Ext8Ebx, 24, 0, kNoSpecMsrs},
    {"virt-ssbd", FW::Ext8Ebx, 25, 0, kNoSpecMsrs}, {"amd-no-ssb", FW::Ext8Ebx, 26, 0, kNoSpecMsrs},
    {"amd-psfd", FW::Ext8Ebx, 28, 0, kNoSpecMsrs},
    // CPUID.8000000AH:EDX
    {"npt", FW::SvmEdx, 0, kQ | kE}, {"lbrv", FW::SvmEdx, 1, 0, kNoSvmExtra}, {"svm-lock", FW::SvmEdx, 2, 0, kNoSvmExtra},
    {"nrip-save", FW::SvmEdx, 3, 0, kNoSvmExtra}, {"tsc-scale", FW::SvmEdx, 4, 0, kNoSvmExtra},
    {"vmcb-clean", FW::SvmEdx, 5, 0, kNoSvmExtra}, {"flushbyasid", FW::SvmEdx, 6, 0, kNoSvmExtra},
    {"decodeassists", FW::SvmEdx, 7, 0, kNoSvmExtra}, {"pause-filter", FW::SvmEdx, 10, 0, kNoSvmExtra},
    {"pfthreshold", FW::SvmEdx, 12, 0, kNoSvmExtra}, {"avic", FW::SvmEdx, 13, 0, kNoSvmExtra},
    {"v-vmsave-vmload", FW::SvmEdx, 15, 0, kNoSvmExtra}, {"vgif", FW::SvmEdx, 16, 0, kNoSvmExtra},
    {"svme-addr-chk", FW::SvmEdx, 28, 0, kNoSvmExtra},
    // CPUID.(EAX=0DH,ECX=1):EAX
    {"xsaveopt", FW::XsaveEax, 0, 0, kNoXsave}, {"xsavec", FW::XsaveEax, 1, 0, kNoXsave},
    {"xgetbv1", FW::XsaveEax, 2, 0, kNoXsave}, {"xsaves", FW::XsaveEax, 3, 0, kNoXsave},
    {"xfd", FW::XsaveEax, 4, 0, kNoXsave},
};

// QEMU's spellings of the same features (target/i386/cpu.c feature aliases),
// after '_' became '-' as QEMU's parser does.
constexpr std::pair<std::string_view, std::string_view> kFlagAliases[] = {
    {"sse3", "pni"}, {"pclmuldq", "pclmulqdq"}, {"sse4-1", "sse4.1"}, {"sse4-2", "sse4.2"},
    {"xd", "nx"},    {"ffxsr", "fxsr-opt"},     {"i64", "lm"},        {"tsc-deadline-timer", "tsc-deadline"},
};

// CPUID.80000001H:EDX bits that repeat leaf 1's on AMD (QEMU's
// CPUID_EXT2_AMD_ALIASES): carried out as their leaf 1 twins.
constexpr uint32_t kAmdAliasBits = 0x0183f3ff;

}  // namespace

uint32_t backed_feature_mask(FeatureWord word, EngineCpuModel engine) {
  uint32_t mask = word == FW::Ext1Edx ? kAmdAliasBits : 0;
  for (const FeatureFlag& f : kFlags)
    if (f.word == word && f.backed_on(engine)) mask |= 1u << f.bit;
  return mask;
}

// QEMU's parser turns '_' into '-' and then resolves aliases.
const FeatureFlag* find_feature_flag(std::string_view spelled) {
  std::string name(spelled);
  std::replace(name.begin(), name.end(), '_', '-');
  for (const auto& [alias, target] : kFlagAliases)
    if (name == alias) name = target;
  for (const auto& f : kFlags)
    if (f.name == name) return &f;
  return nullptr;
}

const std::vector<FeatureFlag>& feature_flags() { return kFlags; }

}  // namespace topolab
