// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/numa_report.h"

#include <gtest/gtest.h>

#include "model/machine_spec.h"

namespace topolab {
namespace {

TEST(NumaReport, NothingWithoutNuma) {
  EXPECT_EQ(format_numa_table(NumaConfig{}, Topology::parse("4")), "");
}

TEST(NumaReport, NodesWithLinuxsNumbersWhereTheyDiffer) {
  const ParsedMachine m = parse_machine_spec(parse_machine_words(
      "-smp 8,sockets=2,cores=4 -m 1G -object memory-backend-ram,id=a,size=256M "
      "-object memory-backend-ram,id=b,size=768M -numa node,memdev=a,cpus=4-7 -numa node,memdev=b,cpus=0-3 "
      "-numa dist,src=0,dst=1,val=21",
      "test"));
  EXPECT_EQ(format_numa_table(m.numa, m.topology),
            "NUMA: 2 nodes (SRAT), distances from the SLIT\n"
            "node  CPUs  memory     distances  Linux's node\n"
            "0     4-7   256 MiB    10 21      node1\n"
            "1     0-3   768 MiB    21 10      node0\n");
}

TEST(NumaReport, NoSlitAndAMemoryOnlyNode) {
  const ParsedMachine m = parse_machine_spec(parse_machine_words(
      "-smp 2 -m 1G -object memory-backend-ram,id=a,size=512M -object memory-backend-ram,id=b,size=512M "
      "-numa node,memdev=a -numa node,memdev=b",
      "test"));
  EXPECT_EQ(format_numa_table(m.numa, m.topology),
            "NUMA: 2 nodes (SRAT), distances 10 local and 20 remote (no SLIT)\n"
            "node  CPUs  memory     distances\n"
            "0     0-1   512 MiB    10 20\n"
            "1     none  512 MiB    20 10\n");
}

}  // namespace
}  // namespace topolab
