// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cpu_model.h"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "model/cpu_feature_table.h"
#include "model/qemu_options.h"
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

// The four models topolab started with (qemu64, Skylake-Server, AlderLake,
// EPYC) keep the feature words measured on Unicorn 2.0.1, so that their
// CPUID dumps stay byte for byte as they were: QEMU 7.2's TCG view less
// AVX, AVX2, FMA, F16C, POPCNT, MOVBE, PCLMULQDQ, RDRAND, XSAVE/XGETBV,
// CLFLUSHOPT, CLWB and RDFSBASE. Unicorn 2.1.3 executes several of these on
// the Skylake-Server and EPYC engine CPUs (docs/cpu_models.md), and
// `+popcnt` etc. gives them; the models added since are built by
// from_qemu() from QEMU 7.2's view and the measured table below.
// MONITOR/MWAIT the machine emulates, so EPYC keeps MONITOR as in QEMU 7.2.
// EPYC keeps TOPOEXT, which QEMU 7.2's TCG drops although it only describes
// topology: without it no guest would read 0x8000001D/1E.
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
      .engine = EngineCpuModel::Qemu64,
      .qemu_features = {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x80002001}, {FW::Ext1Edx, 0x2193fbfd},
                        {FW::Ext1Ecx, 0x00000005}},
      .qemu_filtered = {},
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
      .engine = EngineCpuModel::SkylakeServer,
      .qemu_features = {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d83203}, {FW::Leaf6Eax, 0x00000004},
                        {FW::Leaf7Ebx, 0x019803a9}, {FW::Leaf7Ecx, 0x00000008}, {FW::Ext1Edx, 0x2c100800},
                        {FW::Ext1Ecx, 0x00000021}, {FW::XsaveEax, 0x00000005}},
      .qemu_filtered = {"pcid", "x2apic", "tsc-deadline", "hle", "invpcid", "rtm", "avx512f", "avx512dq", "rdseed",
                        "avx512cd", "avx512bw", "avx512vl", "3dnowprefetch", "xsavec"},
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
                          {kGracemontL1d, kGracemontL1i, kGracemontL2, kAlderLakeL3}},
      // topolab's own model: QEMU 7.2 has no AlderLake to compare with.
      .engine = EngineCpuModel::Qemu64,
      .qemu_features = {},
      .qemu_filtered = {},
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
      .engine = EngineCpuModel::Epyc,
      .qemu_features = {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d8320b}, {FW::Leaf6Eax, 0x00000004},
                        {FW::Leaf7Ebx, 0x009801a9}, {FW::Ext1Edx, 0x2dd3fbfd}, {FW::Ext1Ecx, 0x00000075},
                        {FW::SvmEdx, 0x00000001}, {FW::XsaveEax, 0x00000005}},
      .qemu_filtered = {"rdseed", "sha-ni", "fxsr-opt", "misalignsse", "3dnowprefetch", "osvw", "topoext",
                        "nrip-save", "xsavec"},
  };
}

// A model whose features are QEMU 7.2 TCG's, less what its engine cannot
// carry out.
CpuModelDef from_qemu(CpuModelDef def) {
  def.features.clear();
  for (const auto& [word, bits] : def.qemu_features) def.features[word] = bits & backed_feature_mask(word, def.engine);
  return def;
}

// ---- the models ------------------------------------------------------------
// New models carry QEMU 7.2's TCG view (a cpuid_dump guest under
// qemu-system-x86_64 7.2 -accel tcg -cpu NAME) and the names QEMU's TCG
// filter warned about; from_qemu() keeps what their engine carries out.

CpuModelDef max_model() {
  // QEMU 7.2 max_x86_cpu_initfn: on TCG, AMD vendor, family 15 model 107
  // stepping 1 (qemu64's), "QEMU TCG CPU version 2.5+", every TCG feature
  // but TOPOEXT (not auto-enabled), pmu=on. It runs on the engine's
  // Skylake-Server CPU, which has PKU and CLWB that EPYC's lacks.
  return from_qemu({
      .name = "max",
      .description = "everything the engine executes (QEMU's max on TCG: AMD vendor, family 15)",
      .vendor = Vendor::Amd,
      .vendor_id = "AuthenticAMD",
      .family = 15, .model = 107, .stepping = 1,
      .level = 0xd, .xlevel = 0x8000000a,
      .brand = "QEMU TCG CPU version 2.5+",
      .features = {},
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
      .engine = EngineCpuModel::SkylakeServer,
      .qemu_features = {{FW::Leaf1Edx, 0x0fcbfbfd}, {FW::Leaf1Ecx, 0xf6d8320b}, {FW::Leaf6Eax, 0x00000004},
                        {FW::Leaf7Ebx, 0x01d843a9}, {FW::Leaf7Ecx, 0x8001020c}, {FW::Ext1Edx, 0xedd3fbfd},
                        {FW::Ext1Ecx, 0x00000075}, {FW::SvmEdx, 0x10010001}, {FW::XsaveEax, 0x00000005}},
      .qemu_filtered = {},
      .pmu = true,
  });
}

CpuModelDef kvm64_model() {
  return from_qemu({
      .name = "kvm64",
      .description = "Common KVM processor (Intel vendor, family 15)",
      .vendor = Vendor::Intel,
      .vendor_id = "GenuineIntel",
      .family = 15, .model = 6, .stepping = 1,
      .level = 0xd, .xlevel = 0x80000008,
      .brand = "Common KVM processor",
      .features = {},
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
      .engine = EngineCpuModel::Qemu64,
      .qemu_features = {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x80002001}, {FW::Ext1Edx, 0x20100800}},
      .qemu_filtered = {},
  });
}

// The Intel client and server parts run on the engine's Skylake-Server CPU:
// it executes everything of theirs that Unicorn 2.1.3 can.
CpuModelDef intel_model(std::string name, std::string description, unsigned model, unsigned stepping, std::string brand,
                        std::map<FeatureWord, uint32_t> qemu, std::vector<std::string_view> filtered) {
  return from_qemu({
      .name = std::move(name),
      .description = std::move(description),
      .vendor = Vendor::Intel,
      .vendor_id = "GenuineIntel",
      .family = 6, .model = model, .stepping = stepping,
      .level = 0xd, .xlevel = 0x80000008,
      .brand = std::move(brand),
      .features = {},
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
      .engine = EngineCpuModel::SkylakeServer,
      .qemu_features = std::move(qemu),
      .qemu_filtered = std::move(filtered),
  });
}

CpuModelDef amd_model(std::string name, std::string description, unsigned family, unsigned model, unsigned stepping,
                      uint32_t level, uint32_t xlevel, std::string brand, EngineCpuModel engine,
                      std::map<FeatureWord, uint32_t> qemu, std::vector<std::string_view> filtered) {
  return from_qemu({
      .name = std::move(name),
      .description = std::move(description),
      .vendor = Vendor::Amd,
      .vendor_id = "AuthenticAMD",
      .family = family, .model = model, .stepping = stepping,
      .level = level, .xlevel = xlevel,
      .brand = std::move(brand),
      .features = {},
      .caches = kLegacy, .amd_caches = kLegacyAmd, .leaf2 = kLegacyLeaf2, .hybrid = std::nullopt,
      .engine = engine,
      .qemu_features = std::move(qemu),
      .qemu_filtered = std::move(filtered),
  });
}

// EPYC-Rome's own caches (QEMU 7.2 epyc_rome_cache_info): 32 KiB 8-way L1d
// and L1i, a 512 KiB 8-way L2 per core, 16 MiB 16-way L3 per CCX (die).
constexpr CacheInfo kRomeL1i{CacheType::Instruction, 1, 32 * 1024, 64, 8, 1, 64, 1, true, true, false, false, CacheScope::Core};
constexpr CacheInfo kRomeL3{CacheType::Unified, 3, 16 * 1024 * 1024, 64, 16, 1, 16384, 1, true, false, true, true, CacheScope::Die};
constexpr CacheSet kEpycRome{kEpycL1d, kRomeL1i, kEpycL2, kRomeL3};

CpuModelDef epyc_rome_model() {
  CpuModelDef def = amd_model(
      "EPYC-Rome", "AMD EPYC-Rome Processor (Zen 2, family 23 model 49)", 23, 49, 0, 0xd, 0x8000001e,
      "AMD EPYC-Rome Processor", EngineCpuModel::Epyc,
      {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d8320b}, {FW::Leaf6Eax, 0x00000004},
       {FW::Leaf7Ebx, 0x019801a9}, {FW::Leaf7Ecx, 0x00000004}, {FW::Ext1Edx, 0x2dd3fbfd},
       {FW::Ext1Ecx, 0x00000075}, {FW::SvmEdx, 0x00000001}, {FW::XsaveEax, 0x00000005}},
      {"rdseed", "sha-ni", "rdpid", "fxsr-opt", "misalignsse", "3dnowprefetch", "osvw", "topoext", "perfctr-core",
       "clzero", "xsaveerptr", "wbnoinvd", "ibpb", "amd-stibp", "nrip-save", "xsavec", "xsaves"});
  // TOPOEXT kept, as for EPYC: QEMU 7.2's TCG drops it, but it only
  // describes topology, and without it no guest reads 0x8000001D/1E.
  def.features[FW::Ext1Ecx] |= 1u << 22;
  def.caches = def.amd_caches = kEpycRome;
  def.leaf2 = {};
  return def;
}

std::vector<CpuModelDef> make_models() {
  // Opteron_G3 and later run on the engine's EPYC CPU: POPCNT, ABM and
  // CR8LEGACY need it (its qemu64 CPU runs LZCNT as BSR).
  constexpr auto kEpycEngine = EngineCpuModel::Epyc;
  return {
      qemu64_model(),
      max_model(),
      kvm64_model(),
      intel_model("IvyBridge", "Intel Xeon E3-12xx v2 (Ivy Bridge), family 6 model 58", 58, 9,
                  "Intel Xeon E3-12xx v2 (Ivy Bridge)",
                  {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6982203}, {FW::Leaf6Eax, 0x00000004},
                   {FW::Leaf7Ebx, 0x00000281}, {FW::Ext1Edx, 0x28100800}, {FW::Ext1Ecx, 0x00000001},
                   {FW::XsaveEax, 0x00000001}},
                  {"x2apic", "tsc-deadline"}),
      intel_model("Haswell", "Intel Core Processor (Haswell), family 6 model 60", 60, 4, "Intel Core Processor (Haswell)",
                  {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d83203}, {FW::Leaf6Eax, 0x00000004},
                   {FW::Leaf7Ebx, 0x000003a9}, {FW::Ext1Edx, 0x28100800}, {FW::Ext1Ecx, 0x00000021},
                   {FW::XsaveEax, 0x00000001}},
                  {"pcid", "x2apic", "tsc-deadline", "hle", "invpcid", "rtm"}),
      intel_model("Skylake-Client", "Intel Core Processor (Skylake), family 6 model 94", 94, 3,
                  "Intel Core Processor (Skylake)",
                  {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d83203}, {FW::Leaf6Eax, 0x00000004},
                   {FW::Leaf7Ebx, 0x001803a9}, {FW::Ext1Edx, 0x28100800}, {FW::Ext1Ecx, 0x00000021},
                   {FW::XsaveEax, 0x00000005}},
                  {"pcid", "x2apic", "tsc-deadline", "hle", "invpcid", "rtm", "rdseed", "3dnowprefetch", "xsavec"}),
      skylake_server_model(),
      intel_model("Icelake-Server", "Intel Xeon Processor (Icelake), family 6 model 134", 134, 0,
                  "Intel Xeon Processor (Icelake)",
                  {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xf6d83203}, {FW::Leaf6Eax, 0x00000004},
                   {FW::Leaf7Ebx, 0x019803a9}, {FW::Leaf7Ecx, 0x0001020c}, {FW::Ext1Edx, 0x2c100800},
                   {FW::Ext1Ecx, 0x00000021}, {FW::XsaveEax, 0x00000005}},
                  {"pcid", "x2apic", "tsc-deadline", "hle", "invpcid", "rtm", "avx512f", "avx512dq", "rdseed",
                   "avx512cd", "avx512bw", "avx512vl", "avx512vbmi", "avx512vbmi2", "gfni", "vpclmulqdq",
                   "avx512vnni", "avx512bitalg", "avx512-vpopcntdq", "spec-ctrl", "ssbd", "3dnowprefetch",
                   "wbnoinvd", "xsavec"}),
      alderlake_model(),
      amd_model("Opteron_G1", "AMD Opteron 240 (Gen 1 Class Opteron), family 15", 15, 6, 1, 0x5, 0x80000008,
                "AMD Opteron 240 (Gen 1 Class Opteron)", EngineCpuModel::Qemu64,
                {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x80000001}, {FW::Ext1Edx, 0x2193fbfd}}, {}),
      amd_model("Opteron_G2", "AMD Opteron 22xx (Gen 2 Class Opteron), family 15", 15, 6, 1, 0x5, 0x8000000a,
                "AMD Opteron 22xx (Gen 2 Class Opteron)", EngineCpuModel::Qemu64,
                {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x80002001}, {FW::Ext1Edx, 0x2193fbfd},
                 {FW::Ext1Ecx, 0x00000005}},
                {}),
      amd_model("Opteron_G3", "AMD Opteron 23xx (Gen 3 Class Opteron), family 16", 16, 2, 3, 0x5, 0x8000000a,
                "AMD Opteron 23xx (Gen 3 Class Opteron)", kEpycEngine,
                {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x80802009}, {FW::Ext1Edx, 0x2993fbfd},
                 {FW::Ext1Ecx, 0x00000065}},
                {"misalignsse"}),
      amd_model("Opteron_G4", "AMD Opteron 62xx class CPU, family 21", 21, 1, 2, 0xd, 0x8000001a,
                "AMD Opteron 62xx class CPU", kEpycEngine,
                {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0x96982203}, {FW::Ext1Edx, 0x2d93fbfd},
                 {FW::Ext1Ecx, 0x00000065}, {FW::SvmEdx, 0x00000001}},
                {"misalignsse", "3dnowprefetch", "xop", "fma4", "nrip-save"}),
      amd_model("Opteron_G5", "AMD Opteron 63xx class CPU, family 21", 21, 2, 0, 0xd, 0x8000001a,
                "AMD Opteron 63xx class CPU", kEpycEngine,
                {{FW::Leaf1Edx, 0x078bfbfd}, {FW::Leaf1Ecx, 0xb6983203}, {FW::Ext1Edx, 0x2d93fbfd},
                 {FW::Ext1Ecx, 0x00000065}, {FW::SvmEdx, 0x00000001}},
                {"misalignsse", "3dnowprefetch", "xop", "fma4", "tbm", "nrip-save"}),
      epyc_model(),
      epyc_rome_model(),
  };
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

// What the user switched by name, to tell `enforce` apart from the model.
using FlagRequests = std::map<std::string_view, bool>;
// The kvm-* features given (nullopt: QEMU's default for a KVM guest).
using KvmPvRequests = std::array<std::optional<bool>, kKvmPvFeatures>;

// kvm-*=on|off, +kvm-* or -kvm-*: whether `name` was one of KVM's features.
bool set_kvm_pv_feature(KvmPvRequests& kvm, std::string_view name, bool on) {
  if (const KvmPvFeatureInfo* f = find_kvm_pv_feature(name)) {
    kvm[static_cast<size_t>(f->feature)] = on;
    return true;
  }
  if (std::optional<std::string_view> why = kvm_pv_refusal(name)) {
    if (on) throw ConfigError(fmt::format("-cpu: topolab cannot give {}: {}", name, *why));
    return true;  // off is what topolab's host has anyway
  }
  return false;
}

// The reason a flag cannot be advertised on `def`, or "" when it can.
std::string refusal_on(const FeatureFlag& f, const CpuModelDef& def) {
  if (f.backed_on(def.engine)) return "";
  if (!f.backed) return f.refusal;
  return fmt::format("{} runs on the engine's {} CPU model, which does not execute it (measured; "
                     "docs/cpu_models.md)",
                     def.name, engine_cpu_model_name(def.engine));
}

// -cpu +NAME, -NAME or NAME=on|off.
void set_feature_flag(CpuConfig& cfg, FlagRequests& requests, std::string_view name, bool on) {
  CpuModelDef& m = cfg.model;
  const FeatureFlag* f = find_feature_flag(name);
  if (!f) throw ConfigError(fmt::format("-cpu: unknown feature '{}' for {} (`topolab models` lists them)", name, m.name));
  if (on) {
    std::string why = refusal_on(*f, m);
    if (!why.empty()) {
      // Dropped, never advertised; refused once all properties are read
      // if enforce is among them.
      cfg.dropped_requests.push_back(fmt::format("cannot give {}: {}", f->name, why));
      requests[f->name] = false;
      return;
    }
  }
  uint32_t& word = m.features[f->word];
  word = on ? (word | (1u << f->bit)) : (word & ~(1u << f->bit));
  requests[f->name] = on;
}

void apply_property(CpuConfig& cfg, FlagRequests& requests, KvmPvRequests& kvm, std::string_view prop) {
  CpuModelDef& m = cfg.model;
  if (prop.starts_with('+') || prop.starts_with('-')) {
    if (set_kvm_pv_feature(kvm, prop.substr(1), prop[0] == '+')) return;
    set_feature_flag(cfg, requests, prop.substr(1), prop[0] == '+');
    return;
  }
  // A bare name is name=on, as in QEMU (`enforce`, `x2apic`).
  size_t eq = prop.find('=');
  std::string_view key = prop.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view("on") : prop.substr(eq + 1);
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
  } else if (key == "family" || key == "model" || key == "stepping") {
    // QEMU's limits: family 0..0xff+0xf, model 0..0xff, stepping 0..0xf.
    uint32_t v = parse_leaf(key, value);
    uint32_t max = key == "family" ? 0xff + 0xf : key == "model" ? 0xff : 0xf;
    if (v > max) throw ConfigError(fmt::format("-cpu: {} must be at most {:#x}, got {:#x}", key, max, v));
    (key == "family" ? m.family : key == "model" ? m.model : m.stepping) = v;
  } else if (key == "x-force-cpuid-0x1f") {
    cfg.force_cpuid_0x1f = parse_switch(key, value);
  } else if (key == "model-id") {
    if (value.size() > 47) throw ConfigError("-cpu: model-id is longer than the 47 characters CPUID holds");
    m.brand = std::string(value);
  } else if (key == "phys-bits") {
    // QEMU 7.2 x86_cpu_realizefn, for a CPU with long mode.
    uint32_t bits = parse_leaf(key, value);
    if (bits < 32 || bits > 52) throw ConfigError(fmt::format("-cpu: phys-bits should be between 32 and 52 (but is {})", bits));
    cfg.phys_bits = bits;
  } else if (key == "host-phys-bits") {
    // QEMU 7.2 copies the host's width only where the vCPU runs on the host
    // (host_cpu_realizefn: KVM, HVF); its TCG keeps phys-bits (40 unless
    // given), as topolab does. kvm-unit-tests' access and la57 ask for it.
    if (parse_switch(key, value))
      cfg.warnings.push_back(
          "host-phys-bits=on: topolab's vCPUs take no width from a host (neither does QEMU's TCG); phys-bits stays "
          "as -cpu gives it (40 by default)");
  } else if (key == "host-cache-info") {
    if (parse_switch(key, value))
      throw ConfigError("-cpu: host-cache-info=on copies the host's caches; topolab's vCPUs take none from the host");
  } else if (key == "migratable") {
    cfg.migratable = parse_switch(key, value);
  } else if (key == "pmu") {
    cfg.pmu = parse_switch(key, value);
  } else if (key == "enforce") {
    cfg.enforce = parse_switch(key, value);
  } else if (key == "kvm") {
    cfg.kvm_signature = parse_switch(key, value);
  } else if (key == "kvm-msi-ext-dest-id") {
    cfg.kvm_msi_ext_dest_id = parse_switch(key, value);
  } else if (key == "kvm-pv-enforce-cpuid") {
    cfg.kvm_pv_enforce_cpuid = parse_switch(key, value);
  } else if (key.starts_with("kvm") && set_kvm_pv_feature(kvm, key, parse_switch(key, value))) {
    // Recorded; applied once kvm= is known.
  } else if (key == "check") {
    // QEMU warns about filtered features; topolab refuses a requested one
    // anyway, and drops the model's own ones as documented.
    parse_switch(key, value);
  } else if (find_feature_flag(key)) {
    set_feature_flag(cfg, requests, key, parse_switch(key, value));
  } else {
    throw ConfigError(fmt::format("-cpu: unknown property '{}' (`topolab models` lists the properties and features)", key));
  }
}

}  // namespace

const char* engine_cpu_model_name(EngineCpuModel engine) {
  switch (engine) {
    case EngineCpuModel::Qemu64: return "qemu64";
    case EngineCpuModel::SkylakeServer: return "Skylake-Server";
    case EngineCpuModel::Epyc: return "EPYC";
  }
  return "?";
}

std::string_view cpu_property_help() {
  return "l3-cache=on|off, vendor=ID, level=N, xlevel=N, model-id=TEXT, family=N, model=N, stepping=N, "
         "phys-bits=32..52, host-phys-bits=on|off, host-cache-info=off, pmu=on|off, migratable=on|off, enforce, "
         "check, x-force-cpuid-0x1f=on|off, kvm=on|off, kvm-msi-ext-dest-id=on|off, kvm-pv-enforce-cpuid=on|off, "
         "and with kvm=on KVM's paravirtual features (each NAME=on|off, +NAME, -NAME): kvmclock, "
         "kvmclock-stable-bit, kvm-nopiodelay, kvm-steal-time, kvm-pv-eoi, kvm-pv-unhalt, kvm-pv-tlb-flush, "
         "kvm-pv-ipi, kvm-poll-control, kvm-pv-sched-yield, kvm-hint-dedicated";
}

std::vector<DroppedFeature> dropped_features(const CpuModelDef& model) {
  std::vector<DroppedFeature> out;
  auto filtered = [&](std::string_view name) {
    return std::find(model.qemu_filtered.begin(), model.qemu_filtered.end(), name) != model.qemu_filtered.end();
  };
  for (const FeatureFlag& f : feature_flags()) {
    auto has = [&](const std::map<FeatureWord, uint32_t>& words) {
      auto it = words.find(f.word);
      return it != words.end() && (it->second >> f.bit) & 1;
    };
    bool in_qemu = has(model.qemu_features), in_def = in_qemu || filtered(f.name);
    if (!in_def || has(model.features)) continue;
    std::string why = refusal_on(f, model);
    if (why.empty())
      why = in_qemu ? fmt::format("kept out of {} as measured on Unicorn 2.0.1, so that its CPUID stays as it was; "
                                  "Unicorn 2.1.3 executes it here (+{} gives it)",
                                  model.name, f.name)
                    : fmt::format("QEMU 7.2's TCG drops it from {}; topolab backs it (+{} gives it)", model.name, f.name);
    out.push_back({f.name, std::move(why)});
  }
  return out;
}

const std::vector<CpuModelDef>& cpu_models() {
  static const std::vector<CpuModelDef> models = make_models();
  return models;
}


FeatureBit feature_bit(CpuFeature feature) {
  // SDM vol. 2A CPUID: 01H:EDX[9] APIC, 01H:ECX[3] MONITOR, [21] x2APIC,
  // [31] "not used" (every hypervisor's bit), 07H.0:ECX[3] PKU.
  static constexpr FeatureBit kBits[] = {{FW::Leaf1Edx, 9}, {FW::Leaf1Ecx, 3}, {FW::Leaf1Ecx, 21}, {FW::Leaf1Ecx, 31},
                                         {FW::Leaf7Ecx, 3}};
  static_assert(std::size(kBits) == kCpuFeatures);
  return kBits[static_cast<size_t>(feature)];
}

bool CpuConfig::has(CpuFeature feature) const {
  const FeatureBit b = feature_bit(feature);
  auto it = model.features.find(b.word);
  return it != model.features.end() && (it->second & b.mask());
}

CpuConfig parse_cpu(std::string_view arg) {
  std::string_view rest = arg;
  size_t comma = rest.find(',');
  std::string_view name = rest.substr(0, comma);
  if (name == "host")
    throw ConfigError(
        "-cpu: CPU model 'host' requires KVM or HVF, as QEMU's TCG says: topolab's vCPUs are TCG (Unicorn) and "
        "pass no host CPU through (-cpu max is the nearest)");
  const auto& models = cpu_models();
  auto it = std::find_if(models.begin(), models.end(), [&](const CpuModelDef& m) { return m.name == name; });
  if (it == models.end()) {
    std::string known;
    for (const auto& m : models) known += fmt::format("{}{}", known.empty() ? "" : ", ", m.name);
    throw ConfigError(fmt::format("-cpu: unknown CPU model '{}' (known: {})", name, known));
  }
  CpuConfig cfg{.model = *it, .pmu = it->pmu, .kvm_pv = {}, .dropped_requests = {}, .warnings = {}, .arg = std::string(arg)};
  FlagRequests requests;
  KvmPvRequests kvm;
  while (comma != std::string_view::npos) {
    rest.remove_prefix(comma + 1);
    comma = rest.find(',');
    std::string_view prop = rest.substr(0, comma);
    if (prop.empty()) throw ConfigError(fmt::format("-cpu: empty property in '{}'", arg));
    apply_property(cfg, requests, kvm, prop);
  }
  // QEMU gives a KVM guest its kvm_default_props; topolab's kvm=on is that
  // guest. Without it there is no KVM leaf to announce a feature in.
  if (cfg.kvm_signature) cfg.kvm_pv = KvmPvSet::qemu_defaults();
  for (size_t i = 0; i < kKvmPvFeatures; ++i) {
    if (!kvm[i]) continue;
    const KvmPvFeatureInfo& f = kvm_pv_features()[i];
    if (*kvm[i] && !cfg.kvm_signature)
      throw ConfigError(fmt::format("-cpu: {}=on needs kvm=on: KVM's paravirtual features are announced in its CPUID "
                                    "leaf 0x40000001, which only the KVM signature brings",
                                    f.name));
    cfg.kvm_pv.set(f.feature, *kvm[i]);
  }
  if (cfg.enforce && !cfg.dropped_requests.empty())
    throw ConfigError(fmt::format("-cpu {},enforce: {}", it->name, cfg.dropped_requests.front()));
  if (cfg.enforce) {
    // QEMU's enforce: every feature of the definition the user did not
    // switch off must be there.
    std::string missing;
    for (const DroppedFeature& d : dropped_features(*it))
      if (!requests.contains(d.name)) missing += fmt::format("{}{} ({})", missing.empty() ? "" : "; ", d.name, d.reason);
    if (!missing.empty())
      throw ConfigError(fmt::format("-cpu {},enforce: topolab cannot give {}: {}", it->name, it->name, missing));
  }
  return cfg;
}

}  // namespace topolab

// ---- -machine smp-cache (QEMU 10.0 on x86) ----------------------------------

namespace topolab {

namespace {

constexpr const char* kSmpCacheNames[] = {"l1d", "l1i", "l2", "l3"};
static_assert(std::size(kSmpCacheNames) == kSmpCacheCount);

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
    if (eq != std::string_view::npos && prop.substr(0, eq) == "hmat") {
      const std::optional<bool> on = parse_qemu_bool(prop.substr(eq + 1));
      if (!on) throw ConfigError("-machine: Parameter 'hmat' expects 'on' or 'off'");
      options.hmat = *on;
    } else if (eq == std::string_view::npos || !prop.starts_with("smp-cache.")) {
      throw ConfigError(fmt::format(
          "-machine: unknown property '{}' (topolab models the machine type pc/q35, smp-cache.N.cache/topology and "
          "hmat)",
          prop));
    } else {
      add_smp_cache_property(items, prop.substr(0, eq), prop.substr(eq + 1));
    }
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
