// SPDX-License-Identifier: GPL-2.0-or-later
// `check` and `cpuid --diff` build their machines through the one
// MachineSpec: -machine reaches them as it reaches `run` and `cpuid`
// (they once dropped it, and smp-cache with it).
#include "cli/check_command.h"

#include <CLI/CLI.hpp>
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

// The NUMA nodes of the machine reach the lint (its NUMA patterns) and the
// report; a dump has none, and takes no -m, -numa or -object.
TEST(Check, NumaNodesReachTheLint) {
  CheckOptions o;
  o.spec = {"4", "qemu64", ""};
  o.spec.memory = "512M";
  o.spec.objects = {"memory-backend-ram,id=a,size=256M", "memory-backend-ram,id=b,size=256M"};
  o.spec.numa = {"node,memdev=a,cpus=0-1", "node,memdev=b,cpus=2-3"};
  o.spec_given = true;
  const CheckResult r = check_topology(o);
  EXPECT_TRUE(r.findings);
  EXPECT_NE(r.text.find("[llc-across-nodes]"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("numa       2 nodes: 0-1 256 MiB | 2-3 256 MiB"), std::string::npos) << r.text;
}

TEST(Check, NumaOptionsMarkTheMachineGiven) {
  for (const char* option : {"-m 1G", "--numa node", "--object memory-backend-ram,id=a,size=1G"}) {
    CLI::App app;
    CheckOptions o;
    add_check_command(app, o);
    app.parse(fmt::format("check --dump d.txt {}", option), false);
    EXPECT_TRUE(o.spec_given) << option;
    EXPECT_THROW(check_topology(o), ConfigError) << option;
  }
}

}  // namespace
}  // namespace topolab::cli
