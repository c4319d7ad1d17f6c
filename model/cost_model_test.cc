// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cost_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/topology.h"

namespace topolab {
namespace {

TEST(CostModel, ParseOverridesOnlyTheGivenKeys) {
  const CostModel base = CostModel::defaults();
  const CostModel changed = CostModel::parse("hlt_exit_ns=123,halt_poll_ns=10000,ipiv=on", base);
  EXPECT_EQ(changed.hlt_exit_ns, 123u);
  EXPECT_EQ(changed.halt_poll_ns, 10000u);
  EXPECT_TRUE(changed.ipiv);
  EXPECT_EQ(changed.icr_exit_ns, base.icr_exit_ns);
  EXPECT_EQ(changed.cpi_milli, base.cpi_milli);
}

TEST(CostModel, EntriesRoundTripThroughParse) {
  CostModel m = CostModel::parse("cpi=1.25,freq_mhz=3000,mwait_passthrough=0,poll_wake_ns=7", CostModel::defaults());
  EXPECT_EQ(m.cpi_milli, 1250u);
  EXPECT_EQ(CostModel::parse(m.to_string(), CostModel{}), m);
  EXPECT_EQ(CostModel::parse(CostModel::defaults().to_string(), CostModel{}), CostModel::defaults());
}

TEST(CostModel, NoneIsTheIdealMachine) {
  const CostModel m = CostModel::parse("cpi=2,none,halt_poll_ns=5", CostModel::defaults());
  EXPECT_EQ(m.cpi_milli, 2000u);
  EXPECT_EQ(m.hlt_exit_ns, 0u);
  EXPECT_EQ(m.halt_wake_ns, 0u);
  EXPECT_EQ(m.halt_poll_ns, 5u);
}

TEST(CostModel, CpiKeepsUpToThreeDecimals) {
  EXPECT_EQ(CostModel::parse("cpi=0.5", {}).cpi_milli, 500u);
  EXPECT_EQ(CostModel::parse("cpi=2", {}).cpi_milli, 2000u);
  EXPECT_EQ(CostModel::parse("cpi=0.125,freq_mhz=1000", {}).cpi_milli, 125u);
  EXPECT_THROW(CostModel::parse("cpi=0.0001", {}), ConfigError);
  EXPECT_THROW(CostModel::parse("cpi=0", {}), ConfigError);
  EXPECT_THROW(CostModel::parse("cpi=1e3", {}), ConfigError);
}

TEST(CostModel, BadInputNamesTheKey) {
  const CostModel base = CostModel::defaults();
  for (const char* bad : {"halt_poll_ns=-5", "halt_poll_ns=1e9", "halt_poll_ns=", "halt_poll_ns=5000000000",
                          "nonsense=1", "hlt_exit_ns", "ipiv=yes", "freq_mhz=0", "hlt_exit_ns=1,hlt_exit_ns=2"}) {
    try {
      CostModel::parse(bad, base);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const ConfigError& e) {
      const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST(CostModel, RefusesAnAbsurdlyFastCpu) {
  EXPECT_THROW(CostModel::parse("cpi=0.001,freq_mhz=100000", CostModel::defaults()), ConfigError);
  EXPECT_THROW(CostModel::parse("cpi=0.1,freq_mhz=3000", CostModel::defaults()), ConfigError);
  EXPECT_NO_THROW(CostModel::parse("cpi=0.25,freq_mhz=2500", CostModel::defaults()));  // 10 per ns
}

TEST(CostModel, TimeFollowsCpiAndClock) {
  CostModel m = CostModel::parse("cpi=1.5,freq_mhz=3000", {});
  EXPECT_EQ(m.ns_for_instructions(3000), 1500u);  // 4,500 cycles at 3 GHz
  EXPECT_EQ(m.instructions_for_ns(1500), 3000u);
  EXPECT_EQ(m.tsc_for_ns(1000), 3000u);
  EXPECT_EQ(m.tsc_hz(), 3'000'000'000u);
}

TEST(CostModel, ExitCostsByKind) {
  CostModel m = CostModel::parse("msr_exit_ns=11,icr_exit_ns=22,hlt_exit_ns=33", {});
  EXPECT_EQ(m.exit_ns(ExitKind::Msr), 11u);
  EXPECT_EQ(m.exit_ns(ExitKind::Apic), 11u) << "a trapped APIC write takes the MSR/APIC-write path";
  EXPECT_EQ(m.exit_ns(ExitKind::Icr), 22u);
  EXPECT_EQ(m.exit_ns(ExitKind::Hlt), 33u);
}

// A serializing instruction costs its cycles in place of CPI: the clock
// adds the difference, in thousandths of a cycle, and never less than 0.
TEST(CostModel, SystemInstructionsCostTheirCyclesInPlaceOfCpi) {
  const CostModel m = CostModel::parse("cpi=1.5,cr0_write_cycles=300,cr3_write_cycles=1,invlpg_cycles=0", {});
  EXPECT_EQ(m.system_cycles(SystemInstruction::Cr0Write), 300u);
  EXPECT_EQ(m.system_extra_milli_cycles(SystemInstruction::Cr0Write), 298'500u);
  EXPECT_EQ(m.system_extra_milli_cycles(SystemInstruction::Cr3Write), 0u) << "cheaper than CPI: CPI stays";
  EXPECT_EQ(m.system_extra_milli_cycles(SystemInstruction::Invlpg), 0u);
}

TEST(CostModel, EverySystemInstructionHasItsKey) {
  const CostModel d = CostModel::defaults();
  CostModel m;
  for (size_t i = 0; i < kSystemInstructions; ++i) {
    const auto kind = static_cast<SystemInstruction>(i);
    m = CostModel::parse(fmt::format("{}_cycles={}", to_string(kind), 1000 + i), m);
    EXPECT_EQ(m.system_cycles(kind), 1000 + i) << to_string(kind);
    EXPECT_GT(d.system_cycles(kind), 1u) << to_string(kind) << ": the defaults charge every class";
  }
  EXPECT_EQ(CostModel::parse(m.to_string(), CostModel{}), m);
  const CostModel none = CostModel::parse("none", d);
  for (size_t i = 0; i < kSystemInstructions; ++i)
    EXPECT_EQ(none.system_cycles(static_cast<SystemInstruction>(i)), 0u) << "none: the ideal machine";
  EXPECT_THROW(CostModel::parse("invlpg_cycles=-1", d), ConfigError);
}

}  // namespace
}  // namespace topolab
