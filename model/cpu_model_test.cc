// SPDX-License-Identifier: GPL-2.0-or-later
// The CPU models against QEMU 7.2's TCG, and the -cpu properties.
//
// The QEMU values below are what the cpuid_dump guest read under
// qemu-system-x86_64 7.2 -accel tcg -cpu MODEL (docs/cpu_models.md); each
// model's expected value is QEMU's less the bits named beside it, which the
// engine cannot execute (the feature table in cpu_model.cc says why).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/cpu_model.h"
#include "model/cpuid.h"

namespace topolab {
namespace {

CpuidModel make(const char* cpu, const char* smp = "1") { return CpuidModel(Topology::parse(smp), parse_cpu(cpu)); }

// Whether `cfg` advertises the -cpu flag `name`.
bool advertises(const CpuConfig& cfg, std::string_view name) {
  const FeatureFlag* flag = find_feature_flag(name);
  auto it = cfg.model.features.find(flag->word);
  return it != cfg.model.features.end() && (it->second >> flag->bit) & 1;
}

std::string brand_of(const CpuidModel& m) {
  std::string s;
  for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
    CpuidRegs r = m.query(0, leaf, 0);
    for (uint32_t v : {r.eax, r.ebx, r.ecx, r.edx})
      for (int i = 0; i < 4; ++i)
        if (char c = static_cast<char>(v >> (8 * i))) s.push_back(c);
  }
  return s;
}

std::string error_of(const char* cpu) {
  try {
    parse_cpu(cpu);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// CPUID bits the engine cannot execute, by SDM name.
constexpr uint32_t k1cFma = 1u << 12, k1cXsave = 1u << 26, k1cAvx = 1u << 28, k1cF16c = 1u << 29,
                   k1cRdrand = 1u << 30;
constexpr uint32_t k1cAvxFamily = k1cXsave | k1cAvx | k1cF16c;  // XSAVE goes with the AVX state it cannot back
constexpr uint32_t k7bAvx2 = 1u << 5, k7bMpx = 1u << 14, k7bPcommit = 1u << 22, k7bClwb = 1u << 24;
constexpr uint32_t k7cUmip = 1u << 2, k7cVaes = 1u << 9, k7cLa57 = 1u << 16, k7cPks = 1u << 31;
constexpr uint32_t kE1cSvm = 1u << 2, kE1cCr8Legacy = 1u << 4, kE1cTopoext = 1u << 22;
constexpr uint32_t kE1d3dnowExt = 1u << 30, kE1d3dnow = 1u << 31;

struct QemuModel {
  const char* name;
  const char* vendor;
  uint32_t level, xlevel;
  uint32_t l1_eax;  // family/model/stepping as QEMU 7.2 encodes them
  // QEMU 7.2 TCG's value, then what topolab takes away (or adds).
  uint32_t l1_ecx, l1_ecx_drop;
  uint32_t l1_edx;
  uint32_t l7_ebx, l7_ebx_drop;
  uint32_t l7_ecx, l7_ecx_drop;
  uint32_t e1_ecx, e1_ecx_drop, e1_ecx_add;
  uint32_t e1_edx, e1_edx_drop;
  uint32_t e8_eax;  // QEMU's is 0x3928 with LA57 (57-bit linear addresses)
  const char* brand;
};

const QemuModel kQemuModels[] = {
    {"max", "AuthenticAMD", 0xd, 0x8000000a, 0x00060fb1, 0xf6d8320b, k1cFma | k1cAvxFamily | k1cRdrand, 0x0fcbfbfd,
     0x01d843a9, k7bAvx2 | k7bMpx | k7bPcommit, 0x8001020c, k7cUmip | k7cVaes | k7cLa57 | k7cPks, 0x00000075,
     kE1cSvm | kE1cCr8Legacy, 0, 0xedd3fbfd, kE1d3dnowExt | kE1d3dnow, 0x3028, "QEMU TCG CPU version 2.5+"},
    {"kvm64", "GenuineIntel", 0xd, 0x80000008, 0x00000f61, 0x80002001, 0, 0x078bfbfd, 0, 0, 0, 0, 0, 0, 0,
     0x20100800, 0, 0x3028, "Common KVM processor"},
    {"IvyBridge", "GenuineIntel", 0xd, 0x80000008, 0x000306a9, 0xf6982203, k1cAvxFamily | k1cRdrand, 0x078bfbfd,
     0x00000281, 0, 0, 0, 0x00000001, 0, 0, 0x28100800, 0, 0x3028, "Intel Xeon E3-12xx v2 (Ivy Bridge)"},
    {"Haswell", "GenuineIntel", 0xd, 0x80000008, 0x000306c4, 0xf6d83203, k1cFma | k1cAvxFamily | k1cRdrand,
     0x078bfbfd, 0x000003a9, k7bAvx2, 0, 0, 0x00000021, 0, 0, 0x28100800, 0, 0x3028, "Intel Core Processor (Haswell)"},
    {"Skylake-Client", "GenuineIntel", 0xd, 0x80000008, 0x000506e3, 0xf6d83203, k1cFma | k1cAvxFamily | k1cRdrand,
     0x078bfbfd, 0x001803a9, k7bAvx2, 0, 0, 0x00000021, 0, 0, 0x28100800, 0, 0x3028, "Intel Core Processor (Skylake)"},
    {"Icelake-Server", "GenuineIntel", 0xd, 0x80000008, 0x00080660, 0xf6d83203, k1cFma | k1cAvxFamily | k1cRdrand,
     0x078bfbfd, 0x019803a9, k7bAvx2, 0x0001020c, k7cUmip | k7cVaes | k7cLa57, 0x00000021, 0, 0, 0x2c100800, 0, 0x3028,
     "Intel Xeon Processor (Icelake)"},
    {"Opteron_G1", "AuthenticAMD", 0x5, 0x80000008, 0x00000f61, 0x80000001, 0, 0x078bfbfd, 0, 0, 0, 0, 0, 0, 0,
     0x2193fbfd, 0, 0x3028, "AMD Opteron 240 (Gen 1 Class Opteron)"},
    {"Opteron_G2", "AuthenticAMD", 0x5, 0x8000000a, 0x00000f61, 0x80002001, 0, 0x078bfbfd, 0, 0, 0, 0, 0x00000005, 0,
     0, 0x2193fbfd, 0, 0x3028, "AMD Opteron 22xx (Gen 2 Class Opteron)"},
    {"Opteron_G3", "AuthenticAMD", 0x5, 0x8000000a, 0x00100f23, 0x80802009, 0, 0x078bfbfd, 0, 0, 0, 0, 0x00000065, 0,
     0, 0x2993fbfd, 0, 0x3028, "AMD Opteron 23xx (Gen 3 Class Opteron)"},
    {"Opteron_G4", "AuthenticAMD", 0xd, 0x8000001a, 0x00600f12, 0x96982203, k1cAvxFamily & ~k1cF16c, 0x078bfbfd, 0,
     0, 0, 0, 0x00000065, 0, 0, 0x2d93fbfd, 0, 0x3028, "AMD Opteron 62xx class CPU"},
    {"Opteron_G5", "AuthenticAMD", 0xd, 0x8000001a, 0x00600f20, 0xb6983203, k1cFma | k1cAvxFamily, 0x078bfbfd, 0, 0,
     0, 0, 0x00000065, 0, 0, 0x2d93fbfd, 0, 0x3028, "AMD Opteron 63xx class CPU"},
    // EPYC-Rome runs on the engine's EPYC CPU, which has no CLWB; TOPOEXT
    // is kept as for EPYC.
    {"EPYC-Rome", "AuthenticAMD", 0xd, 0x8000001e, 0x00830f10, 0xf6d8320b, k1cFma | k1cAvxFamily | k1cRdrand,
     0x078bfbfd, 0x019801a9, k7bAvx2 | k7bClwb, 0x00000004, k7cUmip, 0x00000075, 0, kE1cTopoext, 0x2dd3fbfd, 0,
     0x3028, "AMD EPYC-Rome Processor"},
};

class QemuTcg : public testing::TestWithParam<QemuModel> {};

TEST_P(QemuTcg, LeavesAreQemuLessWhatTheEngineCannotExecute) {
  const QemuModel& q = GetParam();
  CpuidModel m = make(q.name);
  CpuidRegs l0 = m.query(0, 0, 0);
  EXPECT_EQ(l0.eax, q.level);
  char vendor[13] = {};
  for (int i = 0; i < 4; ++i) {
    vendor[i] = static_cast<char>(l0.ebx >> (8 * i));
    vendor[4 + i] = static_cast<char>(l0.edx >> (8 * i));
    vendor[8 + i] = static_cast<char>(l0.ecx >> (8 * i));
  }
  EXPECT_STREQ(vendor, q.vendor);
  CpuidRegs l1 = m.query(0, 1, 0);
  EXPECT_EQ(l1.eax, q.l1_eax);
  EXPECT_EQ(l1.ecx, q.l1_ecx & ~q.l1_ecx_drop);
  EXPECT_EQ(l1.edx, q.l1_edx);
  CpuidRegs l7 = m.query(0, 7, 0);
  if (q.level >= 7) {
    EXPECT_EQ(l7.ebx, q.l7_ebx & ~q.l7_ebx_drop);
    EXPECT_EQ(l7.ecx, q.l7_ecx & ~q.l7_ecx_drop);
    EXPECT_EQ(l7.edx, 0u);
  }
  EXPECT_EQ(m.query(0, 0x80000000, 0).eax, q.xlevel);
  CpuidRegs e1 = m.query(0, 0x80000001, 0);
  EXPECT_EQ(e1.eax, q.l1_eax);
  EXPECT_EQ(e1.ecx, (q.e1_ecx & ~q.e1_ecx_drop) | q.e1_ecx_add);
  EXPECT_EQ(e1.edx, q.e1_edx & ~q.e1_edx_drop);
  EXPECT_EQ(m.query(0, 0x80000008, 0).eax, q.e8_eax);
  EXPECT_EQ(brand_of(m), q.brand);
}

INSTANTIATE_TEST_SUITE_P(Models, QemuTcg, testing::ValuesIn(kQemuModels),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Models, AdvertiseOnlyWhatTheirEngineOrTheMachineCarriesOut) {
  for (const CpuModelDef& def : cpu_models()) {
    for (const FeatureFlag& f : feature_flags()) {
      auto it = def.features.find(f.word);
      if (it == def.features.end() || !((it->second >> f.bit) & 1)) continue;
      EXPECT_TRUE(f.backed_on(def.engine)) << def.name << " advertises " << f.name << " on the engine's "
                                            << engine_cpu_model_name(def.engine);
    }
  }
}

TEST(Models, EveryFeatureIsBackedOrHasARefusal) {
  for (const FeatureFlag& f : feature_flags()) {
    EXPECT_TRUE(f.backed || (f.refusal && *f.refusal)) << f.name;
    EXPECT_EQ(find_feature_flag(f.name), &f) << f.name;  // no name twice
  }
}

TEST(Models, EveryDroppedFeatureHasAReason) {
  for (const CpuModelDef& def : cpu_models())
    for (const DroppedFeature& d : dropped_features(def)) EXPECT_FALSE(d.reason.empty()) << def.name << " " << d.name;
}

TEST(Models, EpycRomeHasItsOwnCaches) {
  CpuidModel m = make("EPYC-Rome");
  // QEMU 7.2's dump: 32 KiB 8-way L1d and L1i, 512 KiB 8-way L2, 16 MiB 16-way L3.
  EXPECT_EQ(m.query(0, 0x80000005, 0).ecx, 0x20080140u);
  EXPECT_EQ(m.query(0, 0x80000005, 0).edx, 0x20080140u);
  EXPECT_EQ(m.query(0, 0x80000006, 0).ecx, 0x02006140u);
  EXPECT_EQ(m.query(0, 0x80000006, 0).edx, 0x00808140u);
  EXPECT_EQ(m.query(0, 0x8000001D, 1), (CpuidRegs{0x122, 0x01c0003f, 0x3f, 1}));
  EXPECT_EQ(m.query(0, 0x8000001D, 3), (CpuidRegs{0x163, 0x03c0003f, 0x3fff, 6}));
}

TEST(Models, LegacyCachesForTheIntelParts) {
  // QEMU 7.2's leaf 2 and L3 for models without cache_info.
  for (const char* name : {"kvm64", "IvyBridge", "Haswell", "Skylake-Client", "Icelake-Server"}) {
    CpuidModel m = make(name);
    EXPECT_EQ(m.query(0, 2, 0), (CpuidRegs{1, 0, 0x4d, 0x002c307d})) << name;
    EXPECT_EQ(m.query(0, 4, 3), (CpuidRegs{0x163, 0x03c0003f, 0x3fff, 6})) << name;
  }
}

TEST(Host, RefusedAsQemuTcgRefusesIt) {
  EXPECT_NE(error_of("host").find("CPU model 'host' requires KVM or HVF"), std::string::npos);
  EXPECT_NE(error_of("host,+x2apic").find("requires KVM or HVF"), std::string::npos);
}

TEST(Features, TheKvmUnitTestsCommandLinesParse) {
  for (const char* cpu : {"max", "qemu64,+x2apic,+tsc-deadline", "max,phys-bits=36,host-phys-bits=off",
                          "qemu64,migratable=no", "Opteron_G1,vendor=AuthenticAMD", "max,+x2apic", "qemu64,+rdtscp"})
    EXPECT_NO_THROW(parse_cpu(cpu)) << cpu;
  CpuidModel m = make("qemu64,+x2apic,+tsc-deadline");
  EXPECT_EQ(m.query(0, 1, 0).ecx & ((1u << 21) | (1u << 24)), (1u << 21) | (1u << 24));
}

// Each feature the machine asks about by type is its -cpu flag's bit.
TEST(Features, TypedFeaturesAreTheirFlagsBits) {
  const std::pair<CpuFeature, const char*> kNames[] = {{CpuFeature::Apic, "apic"},
                                                       {CpuFeature::Monitor, "monitor"},
                                                       {CpuFeature::X2apic, "x2apic"},
                                                       {CpuFeature::Hypervisor, "hypervisor"},
                                                       {CpuFeature::Pku, "pku"}};
  static_assert(std::size(kNames) == kCpuFeatures);
  for (auto [feature, name] : kNames) {
    const FeatureFlag* flag = find_feature_flag(name);
    ASSERT_NE(flag, nullptr) << name;
    EXPECT_EQ(feature_bit(feature).word, flag->word) << name;
    EXPECT_EQ(feature_bit(feature).bit, flag->bit) << name;
    EXPECT_TRUE(parse_cpu(std::string("Skylake-Server,+") + name).has(feature)) << name;
    EXPECT_FALSE(parse_cpu(std::string("Skylake-Server,-") + name).has(feature)) << name;
  }
}

// Without enforce, as QEMU's TCG: not advertised, and said why.
TEST(Features, WhatTheEngineCannotExecuteIsDroppedWithTheReason) {
  const CpuConfig cfg = parse_cpu("qemu64,+umip,+x2apic");
  ASSERT_EQ(cfg.dropped_requests.size(), 1u);
  EXPECT_NE(cfg.dropped_requests[0].find("cannot give umip: the engine cannot execute UMIP"), std::string::npos);
  EXPECT_FALSE(advertises(cfg, "umip"));
  EXPECT_TRUE(cfg.has(CpuFeature::X2apic));
  EXPECT_TRUE(parse_cpu("qemu64,+x2apic").dropped_requests.empty());
}

// With enforce, refused.
TEST(Features, WhatTheEngineCannotExecuteIsRefusedWithTheReason) {
  for (auto [cpu, fragment] : std::vector<std::pair<const char*, const char*>>{
           {"max,+pcid,+invpcid", "cannot give pcid: the engine has no PCID"},
           {"max,+invpcid", "cannot give invpcid: the engine cannot execute INVPCID"},
           {"qemu64,+umip", "cannot give umip: the engine cannot execute UMIP"},
           {"IvyBridge,+vmx", "cannot give vmx: the engine cannot execute VMX"},
           {"Haswell,+avx2", "no AVX"},
           {"max,+xsave", "does not advertise XSAVE"},
           {"Skylake-Server,+rdrand", "/dev/urandom"},
           {"Icelake-Server,la57=on", "48-bit canonical"},
           // Backed on some engine CPUs, not on the one this model runs on.
           {"kvm64,+popcnt", "kvm64 runs on the engine's qemu64 CPU model, which does not execute it"},
           {"EPYC,+pku", "EPYC runs on the engine's EPYC CPU model"},
           {"max,+svm", "max runs on the engine's Skylake-Server CPU model"}}) {
    const std::string enforced = std::string(cpu) + ",enforce";
    EXPECT_NE(error_of(enforced.c_str()).find(fragment), std::string::npos) << enforced << ": " << error_of(enforced.c_str());
  }
}

TEST(Features, BackedFeaturesSwitchByEveryQemuSpelling) {
  EXPECT_TRUE(make("Skylake-Server,+popcnt").query(0, 1, 0).ecx & (1u << 23));  // executes on its engine
  EXPECT_TRUE(make("qemu64,x2apic").query(0, 1, 0).ecx & (1u << 21));          // bare name: on
  EXPECT_TRUE(make("qemu64,x2apic=yes").query(0, 1, 0).ecx & (1u << 21));
  EXPECT_FALSE(make("Haswell,-sse4_1").query(0, 1, 0).ecx & (1u << 19));       // '_' for '-', alias sse4-1
  EXPECT_FALSE(make("qemu64,lahf_lm=off").query(0, 0x80000001, 0).ecx & 1u);
  EXPECT_FALSE(make("qemu64,-sse3").query(0, 1, 0).ecx & 1u);                   // alias of pni
  EXPECT_FALSE(make("max,-pku").query(0, 7, 0).ecx & (1u << 3));
  EXPECT_TRUE(make("max").query(0, 7, 0).ecx & (1u << 3));                      // PKU on the Skylake-Server engine
  EXPECT_NE(error_of("qemu64,+avx9").find("unknown feature 'avx9'"), std::string::npos);
}

TEST(Properties, PhysBitsAsQemu72) {
  EXPECT_EQ(make("max,phys-bits=36,host-phys-bits=off").query(0, 0x80000008, 0).eax, 0x3024u);
  EXPECT_EQ(make("qemu64,phys-bits=52").query(0, 0x80000008, 0).eax & 0xff, 52u);
  EXPECT_NE(error_of("max,phys-bits=31").find("phys-bits should be between 32 and 52 (but is 31)"), std::string::npos);
  EXPECT_NE(error_of("max,phys-bits=53").find("(but is 53)"), std::string::npos);
}

// host-phys-bits=on, as QEMU 7.2's TCG takes it (kvm-unit-tests' access and
// la57 ask for it): phys-bits stays what -cpu gives, and a warning says so.
TEST(Properties, HostPhysBitsOnKeepsPhysBitsWithAWarning) {
  const CpuConfig on = parse_cpu("max,host-phys-bits=on");
  EXPECT_EQ(on.phys_bits, 40u);
  ASSERT_EQ(on.warnings.size(), 1u);
  EXPECT_NE(on.warnings[0].find("phys-bits stays"), std::string::npos);
  EXPECT_EQ(parse_cpu("max,host-phys-bits,phys-bits=46").phys_bits, 46u);
  EXPECT_TRUE(parse_cpu("max,host-phys-bits=off").warnings.empty());
  EXPECT_NO_THROW(parse_cpu("qemu64,host-phys-bits=on,enforce")) << "a width, not a feature enforce refuses";
}

TEST(Properties, PmuAndMigratableChangeNothingOnTcg) {
  // QEMU 7.2's TCG: leaf 0xA is zero with pmu on or off (max has pmu=on).
  EXPECT_TRUE(parse_cpu("max").pmu);
  EXPECT_FALSE(parse_cpu("qemu64").pmu);
  EXPECT_TRUE(parse_cpu("qemu64,pmu=on").pmu);
  for (const char* cpu : {"max", "qemu64,pmu=on", "Haswell,pmu=off"}) EXPECT_EQ(make(cpu).query(0, 0xA, 0), CpuidRegs{});
  EXPECT_FALSE(parse_cpu("qemu64,migratable=no").migratable);
  auto dump = [](const char* cpu) {
    std::vector<CpuidModel::Entry> e = make(cpu).enumerate(0);
    std::vector<CpuidRegs> regs;
    for (const auto& x : e) regs.push_back(x.regs);
    return regs;
  };
  EXPECT_EQ(dump("Haswell,migratable=off,pmu=on,check"), dump("Haswell"));
}

TEST(Properties, IdentityOverrides) {
  CpuidModel m = make("Opteron_G1,vendor=GenuineIntel,family=6,model=0x3a,stepping=9,model-id=Mine,level=7");
  EXPECT_EQ(m.query(0, 1, 0).eax, 0x000306a9u);
  EXPECT_EQ(m.query(0, 0, 0).eax, 7u);
  EXPECT_EQ(m.query(0, 0, 0).ebx, 0x756e6547u);  // "Genu"
  EXPECT_EQ(brand_of(m), "Mine");
  EXPECT_NE(error_of("qemu64,stepping=16").find("stepping must be at most 0xf"), std::string::npos);
  EXPECT_NE(error_of("qemu64,l3-cache=maybe").find("on or off"), std::string::npos);
}

TEST(Properties, FeaturesRaiseTheLevelsAsQemusAutomaticLevels) {
  // Opteron_G1 has level 5 and xlevel 0x80000008: a leaf 7 feature and SVM
  // need more, and QEMU raises them unless level=/xlevel= says otherwise.
  CpuidModel m = make("Opteron_G1,+smep,+svm");
  EXPECT_EQ(m.max_basic_leaf(), 7u);
  EXPECT_EQ(m.max_extended_leaf(), 0x8000000Au);
  EXPECT_TRUE(m.query(0, 7, 0).ebx & (1u << 7));
  EXPECT_EQ(m.query(0, 0x8000000A, 0).eax, 1u);
  CpuidModel kept = make("Opteron_G1,+smep,level=5");
  EXPECT_EQ(kept.max_basic_leaf(), 5u);
  EXPECT_EQ(make("Opteron_G1").max_basic_leaf(), 5u);
}

TEST(Enforce, RefusesEveryFeatureOfTheDefinitionThatIsMissing) {
  // QEMU 7.2's TCG refuses Haswell,enforce (pcid, x2apic, ...): so does topolab,
  // with each feature's reason.
  std::string e = error_of("Haswell,enforce");
  EXPECT_NE(e.find("topolab cannot give Haswell: "), std::string::npos) << e;
  for (const char* part : {"pcid (the engine has no PCID", "x2apic (QEMU 7.2's TCG drops it", "avx2 (", "rtm ("})
    EXPECT_NE(e.find(part), std::string::npos) << part << " in " << e;
  // Switched on or off by name, a feature is no longer missing.
  EXPECT_EQ(error_of("Opteron_G3,enforce=on"), "-cpu Opteron_G3,enforce: topolab cannot give Opteron_G3: misalignsse "
                                                "(nothing the engine executes backs it (not measured), so it is not "
                                                "advertised)");
  EXPECT_NO_THROW(parse_cpu("Opteron_G3,-misalignsse,enforce"));
  for (const char* cpu : {"qemu64,enforce", "kvm64,enforce", "Opteron_G1,enforce", "Opteron_G2,enforce",
                          "qemu64,+x2apic,enforce"})
    EXPECT_NO_THROW(parse_cpu(cpu)) << cpu;
}

TEST(Enforce, ExistingModelsNameWhatTheyKeepOut) {
  // Skylake-Server keeps the set measured on Unicorn 2.0.1 (its dumps stay
  // byte for byte): enforce says so, and +popcnt gives it.
  std::string e = error_of("Skylake-Server,enforce");
  EXPECT_NE(e.find("popcnt (kept out of Skylake-Server as measured on Unicorn 2.0.1"), std::string::npos) << e;
}

// kvm=on is QEMU's KVM guest: its kvm_default_props, changed by the kvm-*
// properties in any of QEMU's spellings; without kvm=on none is on, and
// asking for one is refused, as is a feature QEMU has that topolab cannot give.
TEST(KvmPv, QemuDefaultsWithKvmOnAndEachPropertyOverAThem) {
  const CpuConfig kvm = parse_cpu("Skylake-Server,kvm=on");
  for (const KvmPvFeatureInfo& f : kvm_pv_features())
    EXPECT_EQ(kvm.kvm_pv.has(f.feature), f.qemu_default) << f.name;
  EXPECT_TRUE(kvm.kvm_pv.has(KvmPvFeature::Clock));
  EXPECT_FALSE(kvm.kvm_pv.has(KvmPvFeature::PvIpi));
  EXPECT_FALSE(kvm.kvm_pv_enforce_cpuid);
  EXPECT_FALSE(parse_cpu("Skylake-Server").kvm_pv.any());
  EXPECT_FALSE(parse_cpu("Skylake-Server,kvm=off,kvm-pv-ipi=off").kvm_pv.any()) << "off needs no KVM leaf";
  const CpuConfig pv = parse_cpu("Skylake-Server,kvm-pv-ipi=on,-kvmclock,+kvm-pv-unhalt,kvm-poll-control,kvm=on");
  EXPECT_TRUE(pv.kvm_pv.has(KvmPvFeature::PvIpi)) << "kvm=on may come after the features";
  EXPECT_TRUE(pv.kvm_pv.has(KvmPvFeature::PvUnhalt));
  EXPECT_TRUE(pv.kvm_pv.has(KvmPvFeature::PollControl));
  EXPECT_FALSE(pv.kvm_pv.has(KvmPvFeature::Clock));
  EXPECT_TRUE(pv.kvm_pv.has(KvmPvFeature::StealTime));
  EXPECT_TRUE(parse_cpu("Skylake-Server,kvm=on,kvm-pv-enforce-cpuid=on").kvm_pv_enforce_cpuid);
  EXPECT_TRUE(parse_cpu("Skylake-Server,kvm=on,kvm-asyncpf=off,-kvm-asyncpf-int").kvm_pv == kvm.kvm_pv);

  auto refusal = [](const char* cpu) {
    try {
      parse_cpu(cpu);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal("Skylake-Server,kvm-pv-ipi=on").find("kvm-pv-ipi=on needs kvm=on"), std::string::npos);
  EXPECT_NE(refusal("Skylake-Server,kvm=on,kvm-asyncpf=on").find("cannot give kvm-asyncpf: asynchronous page faults"),
            std::string::npos);
  EXPECT_NE(refusal("Skylake-Server,kvm=on,+kvm-mmu").find("cannot give kvm-mmu"), std::string::npos);
  EXPECT_NE(refusal("Skylake-Server,kvm=on,kvm-pv-ipi=maybe").find("kvm-pv-ipi"), std::string::npos);
  EXPECT_NE(refusal("Skylake-Server,kvm=on,kvm-pv-everything=on").find("unknown property 'kvm-pv-everything'"),
            std::string::npos);
}

}  // namespace
}  // namespace topolab
