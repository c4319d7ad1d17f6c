// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_diff.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace topolab {
namespace {

CpuidModel make(const char* smp, const char* cpu) { return CpuidModel(Topology::parse(smp), parse_cpu(cpu)); }

NumaConfig two_nodes(const Topology& t, const char* second_cpus) {
  return NumaOptions({"node,memdev=a,cpus=0-1", fmt::format("node,memdev=b,cpus={}", second_cpus)},
                     {"memory-backend-ram,id=a,size=64M", "memory-backend-ram,id=b,size=64M"})
      .complete(t, uint64_t{128} << 20);
}

// The nodes are no CPUID, but the diff shows them when either side has them.
TEST(CpuidDiff, NumaNodesWhenEitherSideHasThem) {
  CpuidModel a = make("4,sockets=2,cores=2", "Skylake-Server");
  EXPECT_EQ(format_cpuid_diff({"A", &a}, {"B", &a}).find("NUMA"), std::string::npos);
  const NumaConfig numa = two_nodes(a.topology(), "2-3");
  const std::string one_side = format_cpuid_diff({"A", &a}, {"B", &a, &numa});
  EXPECT_NE(one_side.find("NUMA nodes (SRAT/SLIT): they differ\n  A: no -numa: one node, no SRAT\n  B: \n"
                          "     NUMA: 2 nodes (SRAT)"),
            std::string::npos)
      << one_side;
  const std::string both = format_cpuid_diff({"A", &a, &numa}, {"B", &a, &numa});
  EXPECT_NE(both.find("NUMA nodes (SRAT/SLIT): the same\n"), std::string::npos) << both;
}

TEST(CpuidDiff, NamesEveryChangedField) {
  CpuidModel a = make("4,cores=4", "Skylake-Server"), b = make("4,cores=2,threads=2", "Skylake-Server");
  std::string text = format_cpuid_diff({"A", &a}, {"B", &b});
  // Leaf 0xB subleaf 0: the SMT level's shift and count change.
  EXPECT_NE(text.find("leaf 0x0000000b.00  EAX  0x00000000 -> 0x00000001"), std::string::npos) << text;
  EXPECT_NE(text.find("bits to shift right on x2APIC ID to get a unique topology ID of the next level type"), std::string::npos);
  EXPECT_NE(text.find("logical processors at this level type"), std::string::npos);
  // L1 and L2 become shared by two threads.
  EXPECT_NE(text.find("L2   A: 4 instances x1: 0 | 1 | 2 | 3"), std::string::npos) << text;
  EXPECT_NE(text.find("       B: 2 instances x2: 0-1 | 2-3"), std::string::npos) << text;
}

TEST(CpuidDiff, PerCpuChangesListTheirCpus) {
  // The APIC ID fields differ per CPU but do not change.
  CpuidModel a = make("4,sockets=2,cores=2", "Skylake-Server"), b = make("4,sockets=1,cores=4", "Skylake-Server");
  std::string text = format_cpuid_diff({"A", &a}, {"B", &b});
  // EBX[23:16] changes alike on every CPU although EBX[31:24] differs per CPU.
  EXPECT_NE(text.find("leaf 0x00000001.00  EBX  0x00020800 -> 0x00040800   CPUs 0-3"), std::string::npos) << text;
  EXPECT_EQ(text.find("initial APIC ID"), std::string::npos) << text;
}

TEST(CpuidDiff, AMachineAgainstItself) {
  CpuidModel a = make("2", "qemu64");
  std::string text = format_cpuid_diff({"A", &a}, {"B", &a});
  EXPECT_NE(text.find("no leaf differs on CPUs 0-1"), std::string::npos);
  EXPECT_NE(text.find("scheduler LLC groups (cpus_share_cache):\n  same:"), std::string::npos) << text;
}

}  // namespace
}  // namespace topolab
