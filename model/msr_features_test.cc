// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/msr_features.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "model/cpuid.h"

namespace topolab {
namespace {

// A CPU that answers from a map; absent leaves read 0.
struct FakeCpuid {
  std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves;
  CpuidRegs operator()(uint32_t leaf, uint32_t subleaf) const {
    auto it = leaves.find({leaf, subleaf});
    return it == leaves.end() ? CpuidRegs{} : it->second;
  }
};

MsrAvailability of(const char* cpu) {
  CpuidModel model(Topology::parse("1"), parse_cpu(cpu));
  return MsrAvailability([&](uint32_t leaf, uint32_t subleaf) { return model.query(0, leaf, subleaf); });
}

TEST(MsrRequirements, OrderedDisjointAndEachNamesABit) {
  uint64_t next = 0;
  for (const MsrRequirement& r : msr_requirements()) {
    EXPECT_GE(r.first, next) << r.name;
    EXPECT_LE(r.first, r.last) << r.name;
    EXPECT_TRUE(r.any_of[0].reg) << r.name;
    next = uint64_t{r.last} + 1;
  }
  EXPECT_EQ(msr_requirement(0x1b), nullptr);   // IA32_APIC_BASE: no CPUID bit
  EXPECT_EQ(msr_requirement(0x1a0), nullptr);  // IA32_MISC_ENABLE
  ASSERT_NE(msr_requirement(0x8ff), nullptr);
  EXPECT_EQ(msr_requirement(0x900), nullptr);
}

// Issue 14, F5: IA32_TSC_DEADLINE exists only with CPUID.01H:ECX[24].
TEST(MsrAvailability, TscDeadlineFollowsCpuid1Ecx24) {
  EXPECT_FALSE(of("Skylake-Server").announced(0x6e0));
  EXPECT_TRUE(of("Skylake-Server,+tsc-deadline").announced(0x6e0));
  EXPECT_FALSE(of("qemu64").announced(0x6e0));
}

TEST(MsrAvailability, X2apicRangeFollowsCpuid1Ecx21) {
  EXPECT_FALSE(of("qemu64").announced(0x802));
  EXPECT_TRUE(of("qemu64,+x2apic").announced(0x802));
  EXPECT_TRUE(of("qemu64").announced(0x1b));  // not in the table: not decided here
}

// IA32_TSC_AUX with RDTSCP or RDPID (CPUID.07H.0:ECX[22]).
TEST(MsrAvailability, TscAuxWithRdtscpOrRdpid) {
  FakeCpuid cpu;
  cpu.leaves[{0, 0}] = {.eax = 7};
  cpu.leaves[{0x80000000, 0}] = {.eax = 0x80000001};
  EXPECT_FALSE(MsrAvailability(cpu).announced(0xc0000103));
  cpu.leaves[{7, 0}].ecx = 1u << 22;
  EXPECT_TRUE(MsrAvailability(cpu).announced(0xc0000103));
  cpu.leaves[{7, 0}].ecx = 0;
  cpu.leaves[{0x80000001, 0}].edx = 1u << 27;
  EXPECT_TRUE(MsrAvailability(cpu).announced(0xc0000103));
  EXPECT_FALSE(of("qemu64,-rdtscp").announced(0xc0000103));
  EXPECT_TRUE(of("qemu64,+rdtscp").announced(0xc0000103));
}

// A leaf past the maximum answers with the highest basic leaf's registers
// on Intel; those must not count as the missing leaf's bits.
TEST(MsrAvailability, LeavesPastTheMaximumAnnounceNothing) {
  FakeCpuid cpu;
  cpu.leaves[{0, 0}] = {.eax = 1};
  cpu.leaves[{1, 0}] = {.ecx = ~0u, .edx = ~0u};
  cpu.leaves[{7, 0}] = {.ecx = ~0u};  // unreachable: level 1
  cpu.leaves[{0x80000001, 0}] = {.edx = ~0u};  // unreachable: no extended leaves
  MsrAvailability msrs(cpu);
  EXPECT_TRUE(msrs.announced(0x6e0));
  EXPECT_TRUE(msrs.announced(0x277));
  EXPECT_FALSE(msrs.announced(0xc0000103));
  EXPECT_FALSE(msrs.announced(0xc0000080));
  EXPECT_FALSE(msrs.announced(0xc0000100));
}

// EFER with SYSCALL, NX or LM; the long-mode MSRs with LM alone.
TEST(MsrAvailability, EferAndLongModeMsrs) {
  FakeCpuid cpu;
  cpu.leaves[{0x80000000, 0}] = {.eax = 0x80000001};
  cpu.leaves[{0x80000001, 0}].edx = 1u << 20;  // NX only: a 32-bit CPU with PAE NX
  MsrAvailability nx(cpu);
  EXPECT_TRUE(nx.announced(0xc0000080));
  EXPECT_FALSE(nx.announced(0xc0000081));
  EXPECT_FALSE(nx.announced(0xc0000082));
  cpu.leaves[{0x80000001, 0}].edx = 1u << 29;
  MsrAvailability lm(cpu);
  for (uint32_t msr : {0xc0000080u, 0xc0000081u, 0xc0000082u, 0xc0000084u, 0xc0000100u, 0xc0000102u})
    EXPECT_TRUE(lm.announced(msr)) << std::hex << msr;
}

// The rows model/msr_file.h relies on: MTRRs with CPUID.01H:EDX[12],
// machine check with [14], AMD's core counters with PerfCtrExtCore,
// TSC_ADJUST with CPUID.(07H,0):EBX[1], SPEC_CTRL with Intel's or AMD's bits.
TEST(MsrAvailability, MtrrMachineCheckAndCounterRows) {
  FakeCpuid cpu;
  cpu.leaves[{0, 0}] = {.eax = 7};
  cpu.leaves[{0x80000000, 0}] = {.eax = 0x80000008};
  MsrAvailability none(cpu);
  for (uint32_t msr : {0x3bu, 0x48u, 0x49u, 0xfeu, 0x179u, 0x200u, 0x250u, 0x26fu, 0x2ffu, 0x400u, 0x47fu, 0xc0010200u})
    EXPECT_FALSE(none.announced(msr)) << std::hex << msr;
  cpu.leaves[{1, 0}].edx = 1u << 12 | 1u << 14;
  cpu.leaves[{7, 0}].ebx = 1u << 1;
  cpu.leaves[{0x80000001, 0}].ecx = 1u << 23;
  cpu.leaves[{0x80000008, 0}].ebx = 1u << 24;  // AMD SSBD
  MsrAvailability all(cpu);
  for (uint32_t msr : {0x3bu, 0x48u, 0xfeu, 0x179u, 0x17bu, 0x200u, 0x250u, 0x26fu, 0x2ffu, 0x400u, 0x47fu, 0xc001020bu})
    EXPECT_TRUE(all.announced(msr)) << std::hex << msr;
  EXPECT_FALSE(all.announced(0x49));  // PRED_CMD wants IBPB
  EXPECT_TRUE(all.announced(0xc0010000));  // K7 counters: not a CPUID bit, not decided here
}

// Every model topolab knows has the MSRs its guests already use.
TEST(MsrAvailability, EveryModelHasItsBaseMsrs) {
  for (const auto& model : cpu_models()) {
    MsrAvailability msrs = of(model.name.c_str());
    for (uint32_t msr : {0x10u, 0x174u, 0x277u, 0xc0000080u, 0xc0000100u}) EXPECT_TRUE(msrs.announced(msr)) << model.name;
  }
}

}  // namespace
}  // namespace topolab
