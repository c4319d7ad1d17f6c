// SPDX-License-Identifier: GPL-2.0-or-later
// `check` and `cpuid --diff` build their machines through the one
// MachineSpec: -machine reaches them as it reaches `run` and `cpuid`
// (they once dropped it, and smp-cache with it).
#include "cli/check_command.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab::cli {
namespace {

constexpr const char* kSmp = "8,sockets=1,cores=4,threads=2";
constexpr const char* kL3PerCore = "smp-cache.0.cache=l3,smp-cache.0.topology=core";

TEST(CpuidDiff, MachineOptionsChangeTheLeaves) {
  const std::string plain = fmt::format("-smp {} -cpu Skylake-Server", kSmp);
  const std::string same = cpuid_diff_text({plain, plain});
  EXPECT_NE(same.find("no leaf differs"), std::string::npos) << same;
  const std::string diff = cpuid_diff_text({plain, plain + " -machine " + kL3PerCore});
  EXPECT_EQ(diff.find("no leaf differs"), std::string::npos) << diff;
  EXPECT_NE(diff.find(std::string("-machine ") + kL3PerCore), std::string::npos) << "the side's label names -machine";
}

TEST(CpuidDiff, ABadMachineOptionIsBadInput) {
  EXPECT_THROW(cpuid_diff_text({"-smp 4", "-smp 4 -machine smp-cache.0.cache=l9"}), ConfigError);
}

TEST(Check, MachineOptionsReachTheLint) {
  CheckOptions plain;
  plain.spec = {kSmp, "Skylake-Server", ""};
  plain.spec_given = true;
  CheckOptions per_core = plain;
  per_core.spec.machine = kL3PerCore;
  const CheckResult a = check_topology(plain), b = check_topology(per_core);
  EXPECT_NE(a.text, b.text) << "-machine changed nothing the consumers decode";
  EXPECT_NE(b.text.find(std::string("-machine ") + kL3PerCore), std::string::npos) << b.text;
}

TEST(Check, ADumpTakesNoMachineOptions) {
  CheckOptions o;
  o.dump = "dump.txt";
  o.spec.machine = kL3PerCore;
  o.spec_given = true;
  EXPECT_THROW(check_topology(o), ConfigError);
}

}  // namespace
}  // namespace topolab::cli
