// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/numa.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

NumaConfig numa(const std::string& smp, uint64_t ram, std::vector<std::string> options,
                std::vector<std::string> objects = {}) {
  return NumaOptions(std::move(options), std::move(objects)).complete(Topology::parse(smp), ram);
}

std::string refusal(const std::string& smp, uint64_t ram, std::vector<std::string> options,
                    std::vector<std::string> objects = {}) {
  try {
    numa(smp, ram, std::move(options), std::move(objects));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

const std::vector<std::string> kTwoHalves = {"memory-backend-ram,id=m0,size=1G", "memory-backend-ram,id=m1,size=1G"};

TEST(Numa, NoOptionsNoNodes) {
  const NumaConfig n = numa("4", 128 << 20, {});
  EXPECT_FALSE(n.enabled());
  EXPECT_EQ(n.node_of_cpu(3), 0u);
  EXPECT_EQ(n.distance(0, 0), kNumaDistanceLocal);
}

TEST(Numa, NodesTakeTheirCpusAndBackends) {
  const NumaConfig n = numa("8,sockets=2,cores=4", 2 * kGiB,
                            {"node,nodeid=0,cpus=0-3,memdev=m0", "node,nodeid=1,cpus=4-7,memdev=m1"}, kTwoHalves);
  ASSERT_EQ(n.node_count(), 2u);
  EXPECT_EQ(n.nodes()[0].cpus, (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(n.nodes()[1].cpus, (std::vector<unsigned>{4, 5, 6, 7}));
  EXPECT_EQ(n.nodes()[1].memory_bytes, kGiB);
  EXPECT_EQ(n.node_of_cpu(5), 1u);
  EXPECT_FALSE(n.has_distance_table());
  EXPECT_EQ(n.distance(0, 1), kNumaDistanceRemote);
  EXPECT_TRUE(n.warnings().empty());
}

TEST(Numa, SeveralCpuRangesAndNodeIdsInOrderGiven) {
  const NumaConfig n = numa("4", 2 * kGiB, {"node,cpus=0,cpus=2,memdev=m0", "node,cpus=1,cpus=3,memdev=m1"}, kTwoHalves);
  EXPECT_EQ(n.nodes()[0].cpus, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(n.nodes()[1].cpus, (std::vector<unsigned>{1, 3}));
}

TEST(Numa, CpusNoNodeNamesGoToTheirSocketsNodeModuloNodes) {
  // x86_get_default_cpu_node_id: package % nodes; no warning when no
  // option names any CPU.
  const NumaConfig n = numa("12,sockets=3,cores=4", 2 * kGiB, {"node,memdev=m0", "node,memdev=m1"}, kTwoHalves);
  for (unsigned cpu = 0; cpu < 12; ++cpu) EXPECT_EQ(n.node_of_cpu(cpu), (cpu / 4) % 2) << cpu;
  EXPECT_TRUE(n.warnings().empty());
}

TEST(Numa, PartlyAssignedCpusWarnAsQemu) {
  const NumaConfig n = numa("4,sockets=2,cores=2", 2 * kGiB, {"node,cpus=0-1,memdev=m0", "node,memdev=m1"}, kTwoHalves);
  ASSERT_EQ(n.warnings().size(), 2u);
  EXPECT_EQ(n.warnings()[0],
            "CPU(s) not present in any NUMA nodes: CPU 2 [socket-id: 1, core-id: 0, thread-id: 0], "
            "CPU 3 [socket-id: 1, core-id: 1, thread-id: 0]");
  EXPECT_EQ(n.node_of_cpu(2), 0u);  // once some are named, the rest go to node 0
  EXPECT_EQ(n.node_of_cpu(3), 0u);
}

TEST(Numa, NumaCpuMatchesSlotsByTheirIds) {
  const NumaConfig n = numa("8,sockets=2,cores=2,threads=2", 2 * kGiB,
                            {"node,nodeid=0,memdev=m0", "node,nodeid=1,memdev=m1", "cpu,node-id=1,socket-id=0,core-id=1",
                             "cpu,node-id=0,socket-id=0,core-id=0", "cpu,node-id=1,socket-id=1"},
                            kTwoHalves);
  EXPECT_EQ(n.nodes()[0].cpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(n.nodes()[1].cpus, (std::vector<unsigned>{2, 3, 4, 5, 6, 7}));
}

TEST(Numa, DistancesCompletedAsQemu) {
  const NumaConfig n = numa("2", 2 * kGiB,
                            {"node,cpus=0,memdev=m0", "node,cpus=1,memdev=m1", "dist,src=0,dst=1,val=21"}, kTwoHalves);
  ASSERT_TRUE(n.has_distance_table());
  EXPECT_EQ(n.distance(0, 0), 10);
  EXPECT_EQ(n.distance(0, 1), 21);
  EXPECT_EQ(n.distance(1, 0), 21);  // the missing direction takes the other's
  const NumaConfig a = numa("2", 2 * kGiB,
                            {"node,cpus=0,memdev=m0", "node,cpus=1,memdev=m1", "dist,src=0,dst=1,val=21",
                             "dist,src=1,dst=0,val=31"},
                            kTwoHalves);
  EXPECT_EQ(a.distance(1, 0), 31);  // asymmetric and complete: QEMU takes it
}

TEST(Numa, QemusRefusals) {
  const std::string smp = "4";
  EXPECT_EQ(refusal(smp, 2 * kGiB, {"node,memdev=m0"}, kTwoHalves),
            "-numa: total memory for NUMA nodes (0x40000000) should equal RAM size (0x80000000)");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=mx"}), "-numa node,memdev=mx: memdev=mx is ambiguous");
  EXPECT_EQ(refusal(smp, kGiB, {"node,nodeid=1,memdev=m0"}, kTwoHalves), "-numa: numa: Node ID missing: 0");
  EXPECT_EQ(refusal(smp, kGiB, {"node,nodeid=128"}), "-numa node,nodeid=128: Max number of NUMA nodes reached: 128");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "node,nodeid=0"}, kTwoHalves),
            "-numa node,nodeid=0: Duplicate NUMA nodeid: 0");
  EXPECT_EQ(refusal(smp, kGiB, {"node,cpus=4"}), "-numa node,cpus=4: CPU index (4) should be smaller than maxcpus (4)");
  EXPECT_EQ(refusal(smp, 2 * kGiB, {"node,cpus=0-1,memdev=m0", "node,cpus=1,memdev=m1"}, kTwoHalves),
            "-numa node,cpus=1,memdev=m1: CPU is already assigned to node-id: 0");
  EXPECT_EQ(refusal(smp, 2 * kGiB, {"node,memdev=m0", "node,memdev=m0"}, kTwoHalves),
            "-numa: memory backend m0 can't be used multiple times.");
  EXPECT_EQ(refusal(smp, 2 * kGiB, {"node,memdev=m0", "node,memdev=m1", "node", "dist,src=0,dst=1,val=20"}, kTwoHalves),
            "-numa: The distance between node 0 and 2 is missing, at least one distance value between each nodes "
            "should be provided.");
  EXPECT_EQ(refusal(smp, 2 * kGiB,
                    {"node,memdev=m0", "node,memdev=m1", "node", "dist,src=0,dst=1,val=20", "dist,src=1,dst=0,val=30",
                     "dist,src=0,dst=2,val=20", "dist,src=1,dst=2,val=20"},
                    kTwoHalves),
            "-numa: At least one asymmetrical pair of distances is given, please provide distances for both "
            "directions of all node pairs.");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "dist,src=0,dst=0,val=11"}, kTwoHalves),
            "-numa dist,src=0,dst=0,val=11: Local distance of node 0 should be 10.");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "dist,src=0,dst=1,val=9"}, kTwoHalves),
            "-numa dist,src=0,dst=1,val=9: Source/Destination NUMA node is missing. Please use '-numa node' option "
            "to declare it first.");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "cpu,node-id=1"}, kTwoHalves),
            "-numa cpu,node-id=1: Invalid node-id=1, NUMA node must be defined with -numa node,nodeid=ID before it's "
            "used with -numa cpu,node-id=ID");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "cpu,node-id=0,die-id=0"}, kTwoHalves),
            "-numa cpu,node-id=0,die-id=0: die-id is not supported");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "cpu,node-id=0,socket-id=3"}, kTwoHalves),
            "-numa cpu,node-id=0,socket-id=3: no match found");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0"}, {"memory-backend-ram,id=m0"}),
            "-object memory-backend-ram,id=m0: Parameter 'size' is missing");
  EXPECT_EQ(refusal(smp, kGiB, {"node,cpus=3-1"}), "-numa node,cpus=3-1: Parameter 'cpus' expects a uint64 value or range");
  EXPECT_EQ(refusal(smp, kGiB, {"node,nodeid=65536"}), "-numa node,nodeid=65536: Parameter 'nodeid' expects uint16_t");
  EXPECT_EQ(refusal(smp, kGiB, {"node,memdev=m0", "node,mem=512M"}, kTwoHalves),
            "-numa node,mem=512M: numa configuration should use either mem= or memdev=,mixing both is not allowed");
  EXPECT_EQ(refusal(smp, kGiB, {"node,mem=512M"}),
            "-numa node,mem=512M: Parameter -numa node,mem is not supported by this machine type; Use -numa "
            "node,memdev instead");
  EXPECT_EQ(refusal(smp, kGiB, {"foo"}), "-numa foo: Parameter 'type' does not accept value 'foo'");
}

}  // namespace
}  // namespace topolab
