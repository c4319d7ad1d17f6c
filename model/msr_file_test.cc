// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/msr_file.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "arch/x86_arch.h"
#include "base/state_archive.h"
#include "model/cpuid.h"

namespace topolab {
namespace {

using namespace x86;

constexpr uint64_t kAllOnes = ~uint64_t{0};
constexpr uint64_t kNonCanonical = 0xaaaa'aaaa'aaaa'aaaaull;  // kvm-unit-tests' NONCANONICAL

// A CPU that answers from a map; absent leaves read 0.
struct FakeCpuid {
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves;
  CpuidRegs operator()(uint32_t leaf, uint32_t subleaf) const {
    auto it = leaves.find({leaf, subleaf});
    return it == leaves.end() ? CpuidRegs{} : it->second;
  }
  CpuidRegs& at(uint32_t leaf, uint32_t subleaf = 0) { return leaves[{leaf, subleaf}]; }
};

// A GenuineIntel CPU with leaves up to 0xA and 0x80000008, and nothing set.
FakeCpuid intel() {
  FakeCpuid c;
  c.at(0) = {.eax = 0xa, .ebx = 0x756e6547, .ecx = 0x6c65746e, .edx = 0x49656e69};
  c.at(1).eax = 0x50654;  // family 6
  c.at(0x80000000).eax = 0x80000008;
  c.at(0x80000008).eax = 40;
  return c;
}

FakeCpuid amd() {
  FakeCpuid c = intel();
  c.at(0) = {.eax = 0xd, .ebx = 0x68747541, .ecx = 0x444d4163, .edx = 0x69746e65};
  c.at(1).eax = 0xf6b1;  // family 15
  return c;
}

// CPUID leaf 0AH: version, GP counters and their width, fixed counters
// and their width.
FakeCpuid with_pmu(FakeCpuid c, unsigned version, unsigned gp, unsigned width, unsigned fixed, unsigned fixed_width) {
  c.at(0xa) = {.eax = version | gp << 8 | width << 16, .edx = fixed | fixed_width << 5};
  return c;
}

CpuidQuery model_query(const CpuidModel& model) {
  return [&model](uint32_t leaf, uint32_t subleaf) { return model.query(0, leaf, subleaf); };
}

MsrFile of(const char* cpu) {
  CpuidModel model(Topology::parse("1"), parse_cpu(cpu));
  return MsrFile(model_query(model));
}

bool faults_read(const MsrFile& f, uint32_t msr) { return !f.read(msr, 0).has_value(); }

// Writes `value`, reads it back: what the register kept, or nullopt on #GP.
std::optional<uint64_t> write_read(MsrFile& f, uint32_t msr, uint64_t value) {
  if (!f.write(msr, value, 0)) return std::nullopt;
  return f.read(msr, 0);
}

// A write that #GPs leaves the register as it was.
void expect_gp(MsrFile& f, uint32_t msr, uint64_t value) {
  const std::optional<uint64_t> before = f.read(msr, 0);
  EXPECT_FALSE(f.write(msr, value, 0)) << std::hex << "MSR 0x" << msr << " value 0x" << value;
  EXPECT_EQ(f.read(msr, 0), before) << std::hex << "MSR 0x" << msr;
}

// --- Helpers --------------------------------------------------------------------

TEST(MsrHelpers, CanonicalAt48And57Bits) {
  EXPECT_TRUE(is_canonical(0x0000'7fff'ffff'ffffull, 48));
  EXPECT_TRUE(is_canonical(0xffff'8000'0000'0000ull, 48));
  EXPECT_FALSE(is_canonical(0x0000'8000'0000'0000ull, 48));
  EXPECT_FALSE(is_canonical(kNonCanonical, 48));
  EXPECT_TRUE(is_canonical(0x0000'8000'0000'0000ull, 57));
  EXPECT_TRUE(is_canonical(0x00ff'ffff'ffff'ffffull, 57));
  EXPECT_FALSE(is_canonical(0x0100'0000'0000'0000ull, 57));
}

TEST(MsrHelpers, MemoryTypes) {
  for (uint64_t t : {0, 1, 4, 5, 6}) EXPECT_TRUE(is_mtrr_memory_type(t)) << t;
  for (uint64_t t : {2, 3, 7, 8, 0xff}) EXPECT_FALSE(is_mtrr_memory_type(t)) << t;
  EXPECT_TRUE(is_pat_value(0x0007'0406'0007'0406ull));  // the power-up PAT
  EXPECT_TRUE(is_pat_value(0x0707'0707'0707'0707ull));
  EXPECT_FALSE(is_pat_value(0x0007'0406'0007'0402ull));  // type 2
  EXPECT_FALSE(is_pat_value(0x0307'0406'0007'0406ull));  // type 3 in PA7
  EXPECT_FALSE(is_pat_value(0x0008'0406'0007'0406ull));  // bits 7:3 of a field
}

TEST(MsrCpuid, ReadsTheModels) {
  CpuidModel qemu64(Topology::parse("1"), parse_cpu("qemu64"));
  const MsrCpuid q = MsrCpuid::read(model_query(qemu64));
  EXPECT_TRUE(q.amd);
  EXPECT_EQ(q.base_family, 15u);
  EXPECT_TRUE(q.mce && q.mca && q.mtrr && q.pae && q.sse3 && q.svm);
  EXPECT_FALSE(q.monitor);
  EXPECT_EQ(q.pmu.version, 0u);
  EXPECT_EQ(q.maxphyaddr, 40u);
  CpuidModel skx(Topology::parse("1"), parse_cpu("Skylake-Server"));
  const MsrCpuid s = MsrCpuid::read(model_query(skx));
  EXPECT_FALSE(s.amd);
  EXPECT_EQ(s.base_family, 6u);
  EXPECT_FALSE(s.svm);
}

TEST(MsrCpuid, MaxPhyAddrWithoutLeaf80000008) {
  FakeCpuid c = intel();
  c.at(0x80000000).eax = 0x80000001;
  EXPECT_EQ(MsrCpuid::read(c).maxphyaddr, 32u);
  c.at(1).edx = 1u << 6;  // PAE
  EXPECT_EQ(MsrCpuid::read(c).maxphyaddr, 36u);
}

// --- Existence ------------------------------------------------------------------

TEST(MsrFile, UnknownMsrsDoNotExist) {
  MsrFile f = of("qemu64");
  for (uint32_t msr : {0x0u, 0x1u, 0x198u, 0x480u, 0x4b564dffu, 0xc0010008u, 0xc0010200u, 0xdeadbeefu}) {
    EXPECT_FALSE(f.exists(msr)) << std::hex << msr;
    EXPECT_TRUE(faults_read(f, msr)) << std::hex << msr;
    EXPECT_FALSE(f.write(msr, 0, 0)) << std::hex << msr;
  }
}

// kvm-unit-tests' pmu_init() writes these at boot on every AMD-vendor CPU.
TEST(MsrFile, AmdK7CountersOnEveryAmdCpuOnly) {
  for (const char* cpu : {"qemu64", "EPYC"}) {
    MsrFile f = of(cpu);
    for (uint32_t msr = kMsrK7PerfCtl0; msr < kMsrK7PerfCtl0 + 8; ++msr) {
      EXPECT_EQ(f.read(msr, 0), 0u) << cpu << std::hex << " 0x" << msr;
      EXPECT_TRUE(f.write(msr, 0, 0)) << cpu << std::hex << " 0x" << msr;
    }
  }
  MsrFile intel_cpu = of("Skylake-Server");
  for (uint32_t msr = kMsrK7PerfCtl0; msr < kMsrK7PerfCtl0 + 8; ++msr) EXPECT_FALSE(intel_cpu.exists(msr));
}

TEST(MsrFile, AmdCoreCountersWithPerfCtrExtCoreAliasTheK7Ones) {
  FakeCpuid c = amd();
  EXPECT_FALSE(MsrFile(c).exists(kMsrF15hPerfCtl0));
  c.at(0x80000001).ecx = 1u << 23;
  MsrFile f(c);
  for (uint32_t msr = kMsrF15hPerfCtl0; msr < kMsrF15hPerfCtl0 + 12; ++msr) EXPECT_TRUE(f.exists(msr)) << std::hex << msr;
  EXPECT_FALSE(f.exists(kMsrF15hPerfCtl0 + 12));
  // PERF_CTL0 is C001_0000h and C001_0200h; PERF_CTR1 is C001_0005h and C001_0203h.
  EXPECT_EQ(write_read(f, kMsrK7PerfCtl0, 0x53'0076), 0x53'0076u);
  EXPECT_EQ(f.read(kMsrF15hPerfCtl0, 0), 0x53'0076u);
  EXPECT_TRUE(f.write(kMsrF15hPerfCtl0 + 3, 1234, 0));
  EXPECT_EQ(f.read(kMsrK7PerfCtr0 + 1, 0), 1234u);
  EXPECT_EQ(write_read(f, kMsrF15hPerfCtl0 + 10, 0x43'00c0), 0x43'00c0u);  // PERF_CTL5
}

TEST(MsrFile, AmdPerfCtlReservedBitsAndCtrWidth) {
  FakeCpuid c = amd();
  MsrFile f(c);
  const uint64_t full = 0xf'ffd7'ffffull;  // every defined field: 35:0 less 21 and 19
  EXPECT_EQ(write_read(f, kMsrK7PerfCtl0 + 2, full), full);
  for (unsigned b : {19u, 21u, 36u, 39u, 40u, 41u, 42u, 63u}) expect_gp(f, kMsrK7PerfCtl0 + 2, uint64_t{1} << b);
  // HostOnly/GuestOnly with SVM.
  c.at(0x80000001).ecx = 1u << 2;
  MsrFile svm(c);
  EXPECT_EQ(write_read(svm, kMsrK7PerfCtl0, uint64_t{3} << 40), uint64_t{3} << 40);
  // PERF_CTR: 48 bits, the rest dropped.
  EXPECT_EQ(write_read(f, kMsrK7PerfCtr0 + 3, kAllOnes), 0xffff'ffff'ffffull);
}

TEST(MsrFile, NoIntelPmuWithoutLeafA) {
  for (const char* cpu : {"qemu64", "Skylake-Server", "EPYC", "AlderLake"}) {
    MsrFile f = of(cpu);
    for (uint32_t msr : {kMsrPmc0, kMsrPerfEvtSel0, kMsrFixedCtr0, kMsrFixedCtrCtrl, kMsrPerfGlobalStatus,
                         kMsrPerfGlobalCtrl, kMsrPerfGlobalOvfCtrl, kMsrPerfCapabilities})
      EXPECT_FALSE(f.exists(msr)) << cpu << std::hex << " 0x" << msr;
    EXPECT_FALSE(*f.read(kMsrMiscEnable, 0) & kMiscEnablePerfMon) << cpu;
  }
  // Leaf 0AH present but EAX = 0: no PMU either.
  EXPECT_FALSE(MsrFile(with_pmu(intel(), 0, 4, 48, 3, 48)).exists(kMsrPmc0));
}

TEST(MsrFile, IntelPmuAsLeafADescribesIt) {
  MsrFile f(with_pmu(intel(), 2, 4, 48, 3, 48));
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_TRUE(f.exists(kMsrPmc0 + i));
    EXPECT_TRUE(f.exists(kMsrPerfEvtSel0 + i));
  }
  EXPECT_FALSE(f.exists(kMsrPmc0 + 4));
  EXPECT_FALSE(f.exists(kMsrPerfEvtSel0 + 4));
  for (unsigned i = 0; i < 3; ++i) EXPECT_TRUE(f.exists(kMsrFixedCtr0 + i));
  EXPECT_FALSE(f.exists(kMsrFixedCtr0 + 3));
  for (uint32_t msr : {kMsrFixedCtrCtrl, kMsrPerfGlobalStatus, kMsrPerfGlobalCtrl, kMsrPerfGlobalOvfCtrl})
    EXPECT_TRUE(f.exists(msr)) << std::hex << msr;
  EXPECT_TRUE(*f.read(kMsrMiscEnable, 0) & kMiscEnablePerfMon);
  EXPECT_FALSE(f.exists(kMsrPerfCapabilities));  // PDCM not announced
  EXPECT_FALSE(f.exists(kMsrK7PerfCtl0));

  // Version 1: counters and event selects, no fixed counters or global controls.
  MsrFile v1(with_pmu(intel(), 1, 2, 40, 3, 48));
  EXPECT_TRUE(v1.exists(kMsrPmc0 + 1));
  EXPECT_FALSE(v1.exists(kMsrFixedCtr0));
  EXPECT_FALSE(v1.exists(kMsrPerfGlobalCtrl));
  EXPECT_FALSE(v1.exists(kMsrFixedCtrCtrl));

  // Version 5: ECX's bitmap adds fixed counters beyond EDX[4:0].
  FakeCpuid v5 = with_pmu(intel(), 5, 8, 48, 0, 48);
  v5.at(0xa).ecx = 0b1001;
  MsrFile f5(v5);
  EXPECT_TRUE(f5.exists(kMsrFixedCtr0));
  EXPECT_FALSE(f5.exists(kMsrFixedCtr0 + 1));
  EXPECT_TRUE(f5.exists(kMsrFixedCtr0 + 3));
  EXPECT_TRUE(f5.exists(kMsrPmc0 + 7));
  EXPECT_FALSE(f5.exists(kMsrPmc0 + 8));
}

TEST(MsrFile, IntelPmuResetKeptAndReserved) {
  MsrFile f(with_pmu(intel(), 2, 4, 48, 3, 48));
  EXPECT_EQ(f.read(kMsrPerfGlobalCtrl, 0), 0xfu);  // bits n-1:0 at power-up
  EXPECT_EQ(f.read(kMsrPerfGlobalStatus, 0), 0u);
  EXPECT_EQ(f.read(kMsrFixedCtrCtrl, 0), 0u);
  EXPECT_EQ(f.read(kMsrPmc0, 0), 0u);
  // PMC: bits 31:0 written, bit 31 sign-extended to the width, EDX ignored.
  EXPECT_EQ(write_read(f, kMsrPmc0, 0x1'2345'6789), 0x2345'6789u);
  EXPECT_EQ(write_read(f, kMsrPmc0 + 3, 0xffff'fff0), 0xffff'ffff'fff0u);
  // Event selects: 63:32 reserved, AnyThread (21) before version 3.
  EXPECT_EQ(write_read(f, kMsrPerfEvtSel0 + 1, 0xffdf'ffff), 0xffdf'ffffu);
  expect_gp(f, kMsrPerfEvtSel0 + 1, uint64_t{1} << 21);
  expect_gp(f, kMsrPerfEvtSel0 + 1, uint64_t{1} << 32);
  // Fixed counters: the width, the rest dropped.
  EXPECT_EQ(write_read(f, kMsrFixedCtr0 + 2, kAllOnes), 0xffff'ffff'ffffull);
  // FIXED_CTR_CTRL: EN and PMI for each of the three.
  EXPECT_EQ(write_read(f, kMsrFixedCtrCtrl, 0xbbb), 0xbbbu);
  expect_gp(f, kMsrFixedCtrCtrl, 0x4);     // AnyThread
  expect_gp(f, kMsrFixedCtrCtrl, 0x1000);  // a fourth counter
  // GLOBAL_CTRL: the counters' enables only.
  EXPECT_EQ(write_read(f, kMsrPerfGlobalCtrl, 0x7'0000'000f), 0x7'0000'000fu);
  expect_gp(f, kMsrPerfGlobalCtrl, 0x10);
  expect_gp(f, kMsrPerfGlobalCtrl, uint64_t{1} << 35);
  // GLOBAL_STATUS is read-only; OVF_CTRL clears, reads 0, and checks its bits.
  expect_gp(f, kMsrPerfGlobalStatus, 0);
  EXPECT_EQ(write_read(f, kMsrPerfGlobalOvfCtrl, 0xc000'0007'0000'000full), 0u);
  expect_gp(f, kMsrPerfGlobalOvfCtrl, 0x10);

  // Version 3: AnyThread, unless EDX[15] deprecates it.
  MsrFile v3(with_pmu(intel(), 3, 2, 48, 3, 48));
  EXPECT_TRUE(v3.write(kMsrPerfEvtSel0, uint64_t{1} << 21, 0));
  EXPECT_TRUE(v3.write(kMsrFixedCtrCtrl, 0xfff, 0));
  FakeCpuid deprecated = with_pmu(intel(), 3, 2, 48, 3, 48);
  deprecated.at(0xa).edx |= 1u << 15;
  MsrFile d(deprecated);
  expect_gp(d, kMsrPerfEvtSel0, uint64_t{1} << 21);
}

TEST(MsrFile, PerfCapabilitiesWithPdcmIsReadOnly) {
  FakeCpuid c = with_pmu(intel(), 2, 4, 48, 3, 48);
  c.at(1).ecx = 1u << 15;
  MsrFile f(c, {.perf_capabilities = 0x2000});
  EXPECT_EQ(f.read(kMsrPerfCapabilities, 0), 0x2000u);
  expect_gp(f, kMsrPerfCapabilities, 0);
}

// --- IA32_MISC_ENABLE -------------------------------------------------------------

TEST(MsrFile, MiscEnableResetFollowsCpuid) {
  // Fast strings, BTS and PEBS unavailable; MONITOR with CPUID.01H:ECX[3].
  EXPECT_EQ(of("qemu64").read(kMsrMiscEnable, 0), 0x1801u);
  EXPECT_EQ(of("EPYC").read(kMsrMiscEnable, 0), 0x4'1801u);
  EXPECT_EQ(of("qemu64,+monitor").read(kMsrMiscEnable, 0), 0x4'1801u);
  EXPECT_EQ(of("Skylake-Server").read(kMsrMiscEnable, 0), 0x1801u);
  EXPECT_EQ(MsrFile(with_pmu(intel(), 2, 4, 48, 3, 48)).read(kMsrMiscEnable, 0), 0x1881u);
}

// kvm-unit-tests' msr test: write 0x400c50809 keeping bits 7, 11 and 12
// (read-only), read it back.
TEST(MsrFile, MiscEnableKeepsItsWritableBitsAndNotItsReadOnlyOnes) {
  MsrFile f = of("qemu64");
  const uint64_t orig = *f.read(kMsrMiscEnable, 0);
  const uint64_t val = (0x4'00c5'0809ull & ~0x1880ull) | (orig & 0x1880);
  EXPECT_EQ(write_read(f, kMsrMiscEnable, val), val);
  EXPECT_EQ(write_read(f, kMsrMiscEnable, orig), orig);
  // Writes to the read-only bits are dropped.
  EXPECT_EQ(write_read(f, kMsrMiscEnable, 0x80), 0x1800u);
  // Reserved bits: 1:2, 4:6, 8:10, 13:15, 17, 19:21, 24:33, 35:63.
  for (unsigned b : {1u, 2u, 4u, 6u, 8u, 10u, 13u, 15u, 17u, 19u, 21u, 24u, 33u, 35u, 63u})
    expect_gp(f, kMsrMiscEnable, orig | uint64_t{1} << b);
}

TEST(MsrFile, MiscEnableMonitorBitNeedsSse3) {
  FakeCpuid c = intel();
  MsrFile no_sse3(c);
  expect_gp(no_sse3, kMsrMiscEnable, *no_sse3.read(kMsrMiscEnable, 0) | kMiscEnableMonitor);
  c.at(1).ecx = 1;  // SSE3
  MsrFile sse3(c);
  EXPECT_TRUE(sse3.write(kMsrMiscEnable, *sse3.read(kMsrMiscEnable, 0) | kMiscEnableMonitor, 0));
}

// --- TSC, TSC_ADJUST, TSC_AUX -----------------------------------------------------

TEST(MsrFile, TscWritesMoveTscAdjustAndBack) {
  FakeCpuid c = intel();
  c.at(1).edx = 1u << 4;    // TSC
  c.at(0).eax = 7;
  c.at(7).ebx = 1u << 1;    // IA32_TSC_ADJUST
  MsrFile f(c);
  EXPECT_EQ(f.read(kMsrTsc, 1000), 1000u);
  EXPECT_EQ(f.read(kMsrTscAdjust, 1000), 0u);
  ASSERT_TRUE(f.write(kMsrTsc, 5000, 1000));  // +4000
  EXPECT_EQ(f.tsc(1000), 5000u);
  EXPECT_EQ(f.read(kMsrTsc, 1500), 5500u);    // it goes on counting
  EXPECT_EQ(f.read(kMsrTscAdjust, 1500), 4000u);
  ASSERT_TRUE(f.write(kMsrTscAdjust, 3000, 1500));  // -1000
  EXPECT_EQ(f.tsc(1500), 4500u);
  ASSERT_TRUE(f.write(kMsrTsc, 0, 2000));  // back by 5000
  EXPECT_EQ(f.read(kMsrTscAdjust, 2000), static_cast<uint64_t>(-2000));
  EXPECT_EQ(f.tsc(2000), 0u);
}

TEST(MsrFile, TscAdjustOnlyWithCpuid7Ebx1) {
  EXPECT_FALSE(of("qemu64").exists(kMsrTscAdjust));
  EXPECT_TRUE(of("qemu64").exists(kMsrTsc));
  FakeCpuid c = intel();
  EXPECT_FALSE(MsrFile(c).exists(kMsrTsc));  // no CPUID.01H:EDX[4]
}

TEST(MsrFile, TscAuxKeepsBits31To0) {
  MsrFile f = of("qemu64,+rdtscp");
  EXPECT_EQ(f.read(kMsrTscAux, 0), 0u);
  EXPECT_EQ(write_read(f, kMsrTscAux, 0xffff'ffff), 0xffff'ffffu);
  expect_gp(f, kMsrTscAux, uint64_t{1} << 32);
  EXPECT_FALSE(of("qemu64,-rdtscp").exists(kMsrTscAux));
}

// Linux's early_init_intel writes 0 and reads the revision back (the SDM's
// "Microcode Update Signature"); the revision is QEMU's, whatever is written.
TEST(MsrFile, BiosSignIdReportsTheMicrocodeRevision) {
  MsrFile intel_cpu = of("Skylake-Server");
  EXPECT_EQ(write_read(intel_cpu, kMsrBiosSignId, 0), 0x1'0000'0000u);
  EXPECT_EQ(of("EPYC").read(kMsrBiosSignId, 0), 0x0100'0065u);
}

// RDPMC reads the counter MSRs: what was written, since nothing counts.
TEST(MsrFile, RdpmcReadsTheCounterMsrs) {
  MsrFile amd = of("EPYC");
  ASSERT_TRUE(amd.write(kMsrK7PerfCtr0 + 2, 0xabcd, 0));
  EXPECT_EQ(amd.read_pmc(2), 0xabcdu);
  EXPECT_FALSE(amd.read_pmc(6).has_value());
  MsrFile intel = of("Skylake-Server");  // leaf 0xA says no PMU under TCG
  EXPECT_FALSE(intel.read_pmc(0).has_value());
  EXPECT_FALSE(intel.read_pmc(1u << 30).has_value());
}

// What Linux 6.1 touches on every AMD CPU, as KVM answers it.
TEST(MsrFile, AmdSyscfgNbCfgAndHostSaveArea) {
  MsrFile f = of("qemu64");  // AMD, with SVM
  EXPECT_EQ(f.read(kMsrAmdSyscfg, 0), 0u);
  EXPECT_EQ(f.read(kMsrAmdIntPendingMsg, 0), 0u);
  EXPECT_TRUE(f.write(kMsrAmdNbCfg, uint64_t{1} << 46, 0));
  EXPECT_EQ(f.read(kMsrAmdNbCfg, 0), 0u);
  EXPECT_EQ(write_read(f, kMsrVmHsavePa, 0x12'3000), 0x12'3000u);
  expect_gp(f, kMsrVmHsavePa, 0x12'3008);
  EXPECT_FALSE(of("Skylake-Server").exists(kMsrAmdSyscfg));
  EXPECT_FALSE(of("qemu64,-svm").exists(kMsrVmHsavePa));
}

// --- MTRRs --------------------------------------------------------------------------

TEST(MsrFile, MtrrsOnlyWithCpuid1Edx12) {
  MsrFile none{FakeCpuid(intel())};
  for (uint32_t msr : {0xfeu, 0x200u, 0x250u, 0x258u, 0x26fu, 0x2ffu}) EXPECT_FALSE(none.exists(msr)) << std::hex << msr;
  MsrFile f = of("qemu64");
  EXPECT_EQ(f.read(kMsrMtrrCap, 0), 0x508u);  // 8 variable, fixed ranges, WC (QEMU's TCG)
  for (uint32_t msr : {0x250u, 0x258u, 0x259u, 0x268u, 0x26cu, 0x26fu, 0x2ffu}) EXPECT_EQ(f.read(msr, 0), 0u) << std::hex << msr;
  for (uint32_t msr = 0x200; msr < 0x210; ++msr) EXPECT_EQ(f.read(msr, 0), 0u) << std::hex << msr;
  for (uint32_t msr : {0x210u, 0x251u, 0x257u, 0x25au, 0x267u, 0x270u}) EXPECT_FALSE(f.exists(msr)) << std::hex << msr;
}

TEST(MsrFile, MtrrWritesCheckTypesAndReservedBits) {
  MsrFile f = of("qemu64");  // MAXPHYADDR 40
  expect_gp(f, kMsrMtrrCap, 0x508);
  EXPECT_EQ(write_read(f, kMsrMtrrDefType, 0xc06), 0xc06u);  // E, FE, WB
  expect_gp(f, kMsrMtrrDefType, 0xc02);                       // type 2
  expect_gp(f, kMsrMtrrDefType, 0x1006);                      // bit 12
  EXPECT_EQ(write_read(f, kMsrMtrrFix64k00000, 0x0606'0606'0606'0606), 0x0606'0606'0606'0606u);
  expect_gp(f, kMsrMtrrFix4kC0000 + 7, 0x0700'0000'0000'0000);  // type 7 in one byte
  const uint32_t base3 = kMsrMtrrPhysBase0 + 6, mask3 = kMsrMtrrPhysBase0 + 7;
  EXPECT_EQ(write_read(f, base3, 0xff'ffff'f006), 0xff'ffff'f006u);
  expect_gp(f, base3, 0x100'0000'0006);  // bit 40 = MAXPHYADDR
  expect_gp(f, base3, 0x106);            // bit 8
  expect_gp(f, base3, 0x3);              // type 3
  EXPECT_EQ(write_read(f, mask3, 0xff'ffff'f800), 0xff'ffff'f800u);  // V + mask
  expect_gp(f, mask3, 0x100'0000'0800);
  expect_gp(f, mask3, 0x400);
}

// --- Machine check ------------------------------------------------------------------

TEST(MsrFile, MachineCheckAsQemuTcg) {
  MsrFile f = of("qemu64");
  EXPECT_EQ(f.read(kMsrMcgCap, 0), 0x100'010au);  // MCG_CTL_P | MCG_SER_P | 10 banks
  EXPECT_EQ(f.read(kMsrMcgStatus, 0), 0u);
  EXPECT_EQ(f.read(kMsrMcgCtl, 0), kAllOnes);
  for (unsigned i = 0; i < 10; ++i) {
    EXPECT_EQ(f.read(kMsrMc0Ctl + 4 * i, 0), kAllOnes) << i;
    for (unsigned r = 1; r < 4; ++r) EXPECT_EQ(f.read(kMsrMc0Ctl + 4 * i + r, 0), 0u) << i;
  }
  for (uint32_t msr = kMsrMc0Ctl + 40; msr < 0x480; ++msr) EXPECT_FALSE(f.exists(msr)) << std::hex << msr;
  expect_gp(f, kMsrMcgCap, 0);
}

// kvm-unit-tests' msr test, bank by bank.
TEST(MsrFile, MachineCheckBanksWriteRules) {
  MsrFile f = of("Skylake-Server");
  const uint32_t ctl = kMsrMc0Ctl + 4 * 9, status = ctl + 1, addr = ctl + 2, misc = ctl + 3;
  EXPECT_EQ(write_read(f, ctl, 0), 0u);
  EXPECT_EQ(write_read(f, ctl, kAllOnes), kAllOnes);
  EXPECT_EQ(write_read(f, ctl, kAllOnes & ~uint64_t{0x401}), kAllOnes & ~uint64_t{0x401});  // as KVM
  expect_gp(f, ctl, kNonCanonical);
  EXPECT_EQ(write_read(f, status, 0), 0u);
  expect_gp(f, status, 1);
  for (uint64_t v : {uint64_t{0}, kAllOnes, kNonCanonical}) {
    EXPECT_EQ(write_read(f, addr, v), v);
    EXPECT_EQ(write_read(f, misc, v), v);
  }
  EXPECT_EQ(write_read(f, kMsrMcgCtl, 0), 0u);
  expect_gp(f, kMsrMcgCtl, 1);
  EXPECT_EQ(write_read(f, kMsrMcgStatus, 0x5), 0x5u);  // RIPV | MCIP
  expect_gp(f, kMsrMcgStatus, 0x8);                    // LMCE_S without LMCE_P
}

TEST(MsrFile, MachineCheckNeedsMcaAndBanksNeedMceOnFamily6) {
  FakeCpuid c = intel();
  EXPECT_FALSE(MsrFile(c).exists(kMsrMcgCap));
  c.at(1).edx = 1u << 14;  // MCA, no MCE: QEMU leaves MCG_CAP 0
  MsrFile mca_only(c);
  EXPECT_EQ(mca_only.read(kMsrMcgCap, 0), 0u);
  EXPECT_FALSE(mca_only.exists(kMsrMcgCtl));
  EXPECT_FALSE(mca_only.exists(kMsrMc0Ctl));
  c.at(1).edx |= 1u << 7;
  c.at(1).eax = 0x5f0;  // family 5
  EXPECT_EQ(MsrFile(c).read(kMsrMcgCap, 0), 0u);
  c.at(1).eax = 0x6f0;
  EXPECT_EQ(MsrFile(c).read(kMsrMcgCap, 0), MsrFile::kMcgCap);
}

// --- DEBUGCTL, speculation controls -------------------------------------------------

TEST(MsrFile, DebugCtlKeepsBtfOnly) {
  for (const char* cpu : {"qemu64", "Skylake-Server"}) {
    MsrFile f = of(cpu);
    EXPECT_EQ(f.read(kMsrDebugCtl, 0), 0u);
    EXPECT_EQ(write_read(f, kMsrDebugCtl, 0x2), 0x2u);
    for (unsigned b : {0u, 2u, 6u, 7u, 11u, 14u, 63u}) expect_gp(f, kMsrDebugCtl, uint64_t{1} << b);
  }
}

TEST(MsrFile, SpeculationControlsOnlyWhenAdvertised) {
  MsrFile none = of("Skylake-Server");
  for (uint32_t msr : {kMsrSpecCtrl, kMsrPredCmd, kMsrArchCapabilities}) EXPECT_FALSE(none.exists(msr)) << std::hex << msr;

  FakeCpuid c = intel();
  c.at(0).eax = 7;
  c.at(7).edx = 1u << 26 | 1u << 31;  // IBRS/IBPB, SSBD
  MsrFile f(c);
  EXPECT_EQ(f.read(kMsrSpecCtrl, 0), 0u);
  EXPECT_EQ(write_read(f, kMsrSpecCtrl, 0x5), 0x5u);
  expect_gp(f, kMsrSpecCtrl, 0x2);  // STIBP not announced
  expect_gp(f, kMsrSpecCtrl, 0x80);
  EXPECT_TRUE(faults_read(f, kMsrPredCmd));  // write-only
  EXPECT_TRUE(f.write(kMsrPredCmd, 1, 0));
  EXPECT_FALSE(f.write(kMsrPredCmd, 2, 0));
  EXPECT_FALSE(f.exists(kMsrArchCapabilities));

  c.at(7).edx |= 1u << 29;
  MsrFile caps(c, {.arch_capabilities = 0x2b});
  EXPECT_EQ(caps.read(kMsrArchCapabilities, 0), 0x2bu);
  expect_gp(caps, kMsrArchCapabilities, 0x2b);

  FakeCpuid a = amd();
  a.at(0x80000008).ebx = 1u << 12 | 1u << 15;  // AMD IBPB, STIBP
  MsrFile amd_cpu(a);
  EXPECT_EQ(write_read(amd_cpu, kMsrSpecCtrl, 0x2), 0x2u);
  expect_gp(amd_cpu, kMsrSpecCtrl, 0x1);
  EXPECT_TRUE(amd_cpu.write(kMsrPredCmd, 1, 0));
}

// --- The MSRs the engine keeps (model/cpu_state_msrs.h) --------------------------------

std::optional<uint64_t> engine_write(const char* cpu, uint32_t msr, uint64_t value, CpuStateForMsr s = {}) {
  CpuidModel model(Topology::parse("1"), parse_cpu(cpu));
  return check_cpu_state_msr_write(model_query(model), msr, value, s);
}

TEST(CpuStateMsrs, EferReservedBitsFollowCpuid) {
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferSce | kEferLme | kEferNxe), kEferSce | kEferLme | kEferNxe);
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferSvme), kEferSvme);  // qemu64 has SVM
  EXPECT_EQ(engine_write("Skylake-Server", kMsrEfer, kEferSvme), std::nullopt);
  for (uint64_t bad : {uint64_t{1} << 1, kEferLmsle, kEferTce, uint64_t{1} << 16, uint64_t{1} << 63})
    EXPECT_EQ(engine_write("qemu64", kMsrEfer, bad), std::nullopt) << std::hex << bad;
  FakeCpuid no_nx = intel();
  no_nx.at(0x80000001).edx = 1u << 11 | 1u << 29;
  EXPECT_EQ(check_cpu_state_msr_write(no_nx, kMsrEfer, kEferNxe, {}), std::nullopt);
  EXPECT_EQ(check_cpu_state_msr_write(no_nx, kMsrEfer, kEferLme | kEferSce, {}), kEferLme | kEferSce);
}

TEST(CpuStateMsrs, EferLmeIsFixedWhilePagingAndLmaIsReadOnly) {
  const CpuStateForMsr paging_32{.efer = 0, .cr0 = kCr0Pg | kCr0Pe};
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferLme, paging_32), std::nullopt);
  const CpuStateForMsr long_mode{.efer = kEferLme | kEferLma, .cr0 = kCr0Pg | kCr0Pe};
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, 0, long_mode), std::nullopt);
  // NXE in long mode: LMA stays whatever the write says.
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferLme | kEferNxe, long_mode), kEferLme | kEferLma | kEferNxe);
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferLme | kEferLma | kEferSce, long_mode), kEferLme | kEferLma | kEferSce);
  // Without paging LME may change; LMA cannot be set by WRMSR.
  EXPECT_EQ(engine_write("qemu64", kMsrEfer, kEferLme | kEferLma, {}), kEferLme);
}

TEST(CpuStateMsrs, HostThatCannotDescribeCpuidAllowsWhatThe64BitEngineRuns) {
  const FakeCpuid unknown;
  EXPECT_EQ(check_cpu_state_msr_write(unknown, kMsrEfer, kEferLme | kEferNxe | kEferSce, {}), kEferLme | kEferNxe | kEferSce);
  EXPECT_EQ(check_cpu_state_msr_write(unknown, kMsrEfer, kEferSvme, {}), std::nullopt);
}

TEST(CpuStateMsrs, AddressesMustBeCanonical) {
  for (uint32_t msr : {kMsrLstar, kMsrCstar, kMsrFsBase, kMsrGsBase, kMsrKernelGsBase, kMsrSysenterEsp, kMsrSysenterEip}) {
    EXPECT_EQ(engine_write("qemu64", msr, 0x0000'1234'5678'9abc), 0x0000'1234'5678'9abcu) << std::hex << msr;
    EXPECT_EQ(engine_write("qemu64", msr, 0xffff'8000'0000'0000), 0xffff'8000'0000'0000u) << std::hex << msr;
    EXPECT_EQ(engine_write("qemu64", msr, kNonCanonical), std::nullopt) << std::hex << msr;
    EXPECT_EQ(engine_write("qemu64", msr, 0x0000'8000'0000'0000), std::nullopt) << std::hex << msr;
  }
  // With LA57 support the width is 57 bits.
  FakeCpuid la57 = intel();
  la57.at(0).eax = 7;
  la57.at(7).ecx = 1u << 16;
  EXPECT_EQ(check_cpu_state_msr_write(la57, kMsrFsBase, 0x0000'8000'0000'0000, {}), 0x0000'8000'0000'0000u);
  EXPECT_EQ(check_cpu_state_msr_write(la57, kMsrFsBase, 0x0100'0000'0000'0000, {}), std::nullopt);
}

TEST(CpuStateMsrs, FmaskStarSysenterCsAndPat) {
  EXPECT_EQ(engine_write("qemu64", kMsrFmask, 0xffff'ffff), 0xffff'ffffu);
  EXPECT_EQ(engine_write("qemu64", kMsrFmask, uint64_t{1} << 32), std::nullopt);
  EXPECT_EQ(engine_write("qemu64", kMsrStar, kAllOnes), kAllOnes);
  EXPECT_EQ(engine_write("qemu64", kMsrSysenterCs, 0x1234), 0x1234u);
  EXPECT_EQ(engine_write("qemu64", kMsrPat, 0x0707'0707), 0x0707'0707u);
  EXPECT_EQ(engine_write("qemu64", kMsrPat, 0x0202), std::nullopt);
  EXPECT_EQ(engine_write("qemu64", kMsrPat, 0x08), std::nullopt);
}

// --- Every model -------------------------------------------------------------------------

TEST(MsrFile, EveryModelHasTheMsrsGuestsUse) {
  for (const auto& model : cpu_models()) {
    MsrFile f = of(model.name.c_str());
    for (uint32_t msr : {kMsrTsc, kMsrMiscEnable, kMsrDebugCtl, kMsrMtrrCap, kMsrMtrrDefType, kMsrMcgCap, kMsrMcgStatus,
                         kMsrMc0Ctl})
      EXPECT_TRUE(f.exists(msr)) << model.name << std::hex << " 0x" << msr;
  }
}

// --- Snapshots ------------------------------------------------------------------

// Every MSR's RDMSR at `virtual_tsc`, in the architectural and AMD ranges.
std::vector<std::optional<uint64_t>> every_msr(const MsrFile& f, uint64_t virtual_tsc) {
  std::vector<std::optional<uint64_t>> values;
  for (uint32_t first : {0x0u, 0xc0000000u, 0xc0010000u})
    for (uint32_t msr = first; msr < first + 0x1000; ++msr) values.push_back(f.read(msr, virtual_tsc));
  return values;
}

// A file of `cpuid` after `writes`, saved and loaded into a fresh one: both
// read the same everywhere, then and after one more TSC write.
void expect_round_trip(const FakeCpuid& cpuid, const std::vector<std::pair<uint32_t, uint64_t>>& writes) {
  MsrFile f(cpuid);
  for (const auto& [msr, value] : writes) ASSERT_TRUE(f.write(msr, value, 1000)) << std::hex << msr;
  const std::string bytes = save_state_bytes(f);
  MsrFile restored(cpuid);
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  EXPECT_EQ(every_msr(restored, 2000), every_msr(f, 2000));
  EXPECT_NE(every_msr(MsrFile(cpuid), 2000), every_msr(f, 2000));
  EXPECT_EQ(restored.tsc(2000), f.tsc(2000));
  // TSC_ADJUST moves on from what the guest's TSC write left.
  if (f.exists(kMsrTscAdjust)) {
    ASSERT_TRUE(f.write(kMsrTsc, 0, 3000));
    ASSERT_TRUE(restored.write(kMsrTsc, 0, 3000));
    EXPECT_EQ(restored.read(kMsrTscAdjust, 3000), f.read(kMsrTscAdjust, 3000));
  }
  for (uint32_t ecx = 0; ecx < 8; ++ecx) EXPECT_EQ(restored.read_pmc(ecx), f.read_pmc(ecx)) << ecx;
}

TEST(MsrFileSnapshot, RoundTripsEveryGuestWrittenMsr) {
  FakeCpuid c = with_pmu(intel(), 2, 4, 48, 3, 48);
  c.at(1).edx = 1u << 4 | 1u << 7 | 1u << 12 | 1u << 14;  // TSC, MCE, MTRR, MCA
  c.at(7).ebx = 1u << 1;                                   // IA32_TSC_ADJUST
  c.at(7).edx = 1u << 26;                                  // IBRS: IA32_SPEC_CTRL
  c.at(0x80000001).edx = 1u << 27;                         // RDTSCP: IA32_TSC_AUX
  const uint64_t misc_enable = *MsrFile(c).read(kMsrMiscEnable, 0) & ~kMiscEnableFastStrings;
  expect_round_trip(c, {
                           {kMsrTsc, 5000},
                           {kMsrTscAux, 3},
                           {kMsrSpecCtrl, 1},
                           {kMsrMiscEnable, misc_enable},
                           {kMsrDebugCtl, 0x2},  // BTF
                           {kMsrMtrrDefType, 0xc06},
                           {kMsrMtrrFix64k00000, 0x0606'0606'0606'0606},
                           {kMsrMtrrPhysBase0, 0x8000'0006},
                           {kMsrMtrrPhysBase0 + 1, 0xff'f000'0800},
                           {kMsrMcgStatus, 0x5},
                           {kMsrMcgCtl, 0},
                           {kMsrMc0Ctl + 4 * 9 + 2, kNonCanonical},  // MC9_ADDR
                           {kMsrPmc0 + 1, 0x1234},
                           {kMsrPerfEvtSel0 + 1, 0x4300c0},
                           {kMsrFixedCtr0 + 2, 0x5678},
                           {kMsrFixedCtrCtrl, 0x330},
                           {kMsrPerfGlobalCtrl, 0x3},
                       });
  // AMD's counters and SVM's host save area (qemu64 is an AMD CPU with SVM).
  CpuidModel qemu64(Topology::parse("1"), parse_cpu("qemu64"));
  FakeCpuid amd_svm;
  for (uint32_t leaf : {0u, 1u, 7u, 0xau, 0x80000000u, 0x80000001u, 0x80000008u})
    amd_svm.at(leaf) = qemu64.query(0, leaf, 0);
  expect_round_trip(amd_svm, {
                                 {kMsrK7PerfCtl0 + 2, 0x53'0076},
                                 {kMsrK7PerfCtr0 + 1, 1234},
                                 {kMsrVmHsavePa, 0x12'3000},
                             });
}

}  // namespace
}  // namespace topolab
