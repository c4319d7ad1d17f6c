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

// -machine hmat=on. QEMU 7.2's runs (docs/numa.md): node 0 with the CPUs,
// node 1 memory only.
NumaConfig hmat(std::vector<std::string> options, const std::string& smp = "4") {
  return NumaOptions(std::move(options), kTwoHalves, true).complete(Topology::parse(smp), 2 * kGiB);
}

std::string hmat_refusal(std::vector<std::string> options, const std::string& smp = "4") {
  try {
    hmat(std::move(options), smp);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

const std::string kN0 = "node,nodeid=0,memdev=m0,cpus=0-3", kN1 = "node,nodeid=1,memdev=m1";
std::string lb(const std::string& rest) { return "hmat-lb,hierarchy=memory," + rest; }

TEST(NumaHmat, OffByDefaultAndRefusedWithoutMachineHmat) {
  EXPECT_FALSE(numa("4", 2 * kGiB, {kN0, kN1}, kTwoHalves).hmat_enabled());
  const std::string disabled =
      "ACPI Heterogeneous Memory Attribute Table (HMAT) is disabled, enable it with -machine hmat=on before using "
      "any of hmat specific options";
  EXPECT_EQ(refusal("4", 2 * kGiB, {kN0, kN1 + ",initiator=0"}, kTwoHalves),
            "-numa node,nodeid=1,memdev=m1,initiator=0: " + disabled);
  EXPECT_EQ(refusal("4", 2 * kGiB, {kN0, kN1, lb("initiator=0,target=0,data-type=access-latency,latency=5")},
                    kTwoHalves),
            "-numa hmat-lb,hierarchy=memory,initiator=0,target=0,data-type=access-latency,latency=5: " + disabled);
  EXPECT_EQ(refusal("4", 2 * kGiB,
                    {kN0, kN1, "hmat-cache,node-id=0,size=10K,level=1,associativity=direct,policy=write-back,line=8"},
                    kTwoHalves),
            "-numa hmat-cache,node-id=0,size=10K,level=1,associativity=direct,policy=write-back,line=8: " + disabled);
}

TEST(NumaHmat, InitiatorsAsQemuSetsThem) {
  const NumaConfig n = hmat({kN0, kN1 + ",initiator=0"});
  EXPECT_TRUE(n.hmat_enabled());
  EXPECT_EQ(n.hmat().initiator, (std::vector<std::optional<unsigned>>{0, 0}));
  // A memory-only node without initiator= has none; a node with CPUs is
  // its own, also through the default mapping.
  EXPECT_EQ(hmat({kN0, kN1}).hmat().initiator, (std::vector<std::optional<unsigned>>{0, std::nullopt}));
  EXPECT_EQ(hmat({"node,memdev=m0", "node,memdev=m1"}, "4,sockets=2,cores=2").hmat().initiator,
            (std::vector<std::optional<unsigned>>{0, 1}));
  // A node without CPUs may name another node with them.
  EXPECT_EQ(hmat({"node,nodeid=0,memdev=m0,initiator=1", "node,nodeid=1,memdev=m1,cpus=0-3"}).hmat().initiator,
            (std::vector<std::optional<unsigned>>{1, 1}));
}

TEST(NumaHmat, InitiatorRefusalsInQemusWords) {
  EXPECT_EQ(hmat_refusal({kN0, kN1 + ",initiator=2"}),
            "-numa: NUMA node 2 is missing, use '-numa node' option to declare it first");
  EXPECT_EQ(hmat_refusal({kN0, kN1 + ",initiator=1"}), "-numa: The initiator of NUMA node 1 is invalid");
  EXPECT_EQ(hmat_refusal({"node,nodeid=0,memdev=m0,cpus=0-1,initiator=1", "node,nodeid=1,memdev=m1,cpus=2-3"}),
            "-numa node,nodeid=0,memdev=m0,cpus=0-1,initiator=1: The initiator of CPU NUMA node 0 should be itself "
            "(got 1)");
  // The same through -numa cpu, and through the default mapping (no option
  // to name).
  EXPECT_EQ(hmat_refusal({"node,nodeid=0,memdev=m0,initiator=1", "node,nodeid=1,memdev=m1,cpus=2-3",
                          "cpu,node-id=0,socket-id=0,core-id=0"}),
            "-numa cpu,node-id=0,socket-id=0,core-id=0: The initiator of CPU NUMA node 0 should be itself (got 1)");
  EXPECT_EQ(hmat_refusal({"node,memdev=m0", "node,memdev=m1,initiator=0"}, "4,sockets=2,cores=2"),
            "-numa: The initiator of CPU NUMA node 1 should be itself (got 0)");
  EXPECT_EQ(hmat_refusal({kN0, kN1 + ",initiator=128"}),
            "-numa node,nodeid=1,memdev=m1,initiator=128: The initiator id 128 expects an integer between 0 and 127");
  EXPECT_EQ(hmat_refusal({kN0, kN1 + ",initiator=65536"}),
            "-numa node,nodeid=1,memdev=m1,initiator=65536: Parameter 'initiator' expects uint16_t");
}

TEST(NumaHmat, LocalityRefusalsInQemusWords) {
  const auto lb_refusal = [](const std::string& rest, std::vector<std::string> before = {}) {
    std::vector<std::string> options = {kN0, kN1 + ",initiator=0"};
    options.insert(options.end(), before.begin(), before.end());
    options.push_back(lb(rest));
    const std::string why = hmat_refusal(options);
    const std::string prefix = "-numa " + lb(rest) + ": ";
    return why.starts_with(prefix) ? why.substr(prefix.size()) : why;
  };
  EXPECT_EQ(lb_refusal("initiator=1,target=0,data-type=access-latency,latency=10"),
            "Invalid initiator=1, it isn't an initiator proximity domain");
  EXPECT_EQ(lb_refusal("initiator=3,target=0,data-type=access-latency,latency=10"),
            "Invalid initiator=3, it should be less than 2");
  EXPECT_EQ(lb_refusal("initiator=2,target=0,data-type=access-latency,latency=10"),
            "Invalid initiator=2, it isn't an initiator proximity domain");  // QEMU's ">"
  EXPECT_EQ(lb_refusal("initiator=0,target=3,data-type=access-latency,latency=10"),
            "Invalid target=3, it should be less than 2");
  EXPECT_EQ(lb_refusal("initiator=0,target=2,data-type=access-latency,latency=10"),
            "The target=2 should point to an existing node");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-latency"), "Missing 'latency' option");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=read-bandwidth"), "Missing 'bandwidth' option");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=write-latency,latency=10,bandwidth=1G"),
            "Invalid option 'bandwidth' since the data type is latency");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-bandwidth,bandwidth=1G,latency=5"),
            "Invalid option 'latency' since the data type is bandwidth");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-bandwidth,bandwidth=1000"),
            "Bandwidth 1000 between initiator=0 and target=0 should be 1MB aligned");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-latency,latency=7",
                       {lb("initiator=0,target=0,data-type=access-latency,latency=5")}),
            "Duplicate configuration of the latency for initiator=0 and target=0");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-bandwidth,bandwidth=2G",
                       {lb("initiator=0,target=0,data-type=access-bandwidth,bandwidth=1G")}),
            "Duplicate configuration of the bandwidth for initiator=0 and target=0");
  EXPECT_EQ(lb_refusal("initiator=0,target=1,data-type=access-latency,latency=70000",
                       {lb("initiator=0,target=0,data-type=access-latency,latency=1")}),
            "Latency 70000 between initiator=0 and target=1 should not differ from previously entered min or max "
            "values on more than 65534");
  EXPECT_EQ(lb_refusal("initiator=0,target=1,data-type=access-bandwidth,bandwidth=1T",
                       {lb("initiator=0,target=0,data-type=access-bandwidth,bandwidth=1M")}),
            "Bandwidth 1099511627776 between initiator=0 and target=1 should not differ from previously entered "
            "values on more than 65534");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=fast,latency=1"),
            "Parameter 'data-type' does not accept value 'fast'");
  EXPECT_EQ(lb_refusal("target=0,data-type=access-latency,latency=1"), "Parameter 'initiator' is missing");
  EXPECT_EQ(lb_refusal("initiator=0,target=0,data-type=access-latency,latency=1,foo=2"), "Invalid parameter 'foo'");
}

// The run QEMU 7.2 and Linux 6.1 were seen with (docs/numa.md): latencies
// 10 and 20 ns (base 10 ns), bandwidths 10G and 5G (base 1 GiB/s).
TEST(NumaHmat, LocalitiesKeepQemusBaseAndOrder) {
  const NumaConfig n =
      hmat({kN0, kN1 + ",initiator=0", lb("initiator=0,target=0,data-type=access-bandwidth,bandwidth=10G"),
            lb("initiator=0,target=0,data-type=access-latency,latency=10"),
            lb("initiator=0,target=1,data-type=access-latency,latency=20"),
            lb("initiator=0,target=1,data-type=access-bandwidth,bandwidth=5G"),
            "hmat-lb,initiator=0,target=1,hierarchy=first-level,data-type=read-latency,latency=0"});
  const std::vector<HmatLocality>& l = n.hmat().localities;
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].data_type, 0);  // access latency first, though given second
  EXPECT_EQ(l[0].base, 10u);
  EXPECT_EQ(l[0].entries, (std::vector<HmatLocality::Entry>{{0, 0, 10}, {0, 1, 20}}));
  EXPECT_EQ(l[1].data_type, 3);
  EXPECT_EQ(l[1].base, uint64_t{1} << 30);
  EXPECT_EQ(l[2].hierarchy, 1);
  EXPECT_EQ(l[2].base, UINT64_MAX);  // only a 0 latency: QEMU's base stays
}

TEST(NumaHmat, CachesAndTheirRefusals) {
  const std::vector<std::string> lbs = {kN0, kN1, lb("initiator=0,target=0,data-type=access-latency,latency=10"),
                                        lb("initiator=0,target=0,data-type=access-bandwidth,bandwidth=1G")};
  const auto with = [&](std::vector<std::string> caches) {
    std::vector<std::string> options = lbs;
    for (const std::string& c : caches) options.push_back("hmat-cache,node-id=0," + c);
    return options;
  };
  const std::string l1 = "size=10K,level=1,associativity=direct,policy=write-back,line=8";
  const NumaConfig n = hmat(with({l1, "size=20K,level=2,associativity=complex,policy=write-through,line=64"}));
  EXPECT_EQ(n.hmat().caches,
            (std::vector<HmatCache>{{0, 1, 10240, 1, 1, 8}, {0, 2, 20480, 2, 2, 64}}));
  const auto cache_refusal = [&](std::vector<std::string> caches) {
    const std::string why = hmat_refusal(with(caches));
    return why.substr(why.find(": ") + 2);
  };
  EXPECT_EQ(cache_refusal({"size=1K,level=0,associativity=none,policy=none,line=8"}),
            "Invalid level=0, it should be larger than 0 and less than or equal to 3");
  EXPECT_EQ(cache_refusal({"size=1K,level=2,associativity=none,policy=none,line=8"}),
            "Cache level=1 shall be defined first");
  EXPECT_EQ(cache_refusal({l1, l1}), "Duplicate configuration of the side cache for node-id=0 and level=1");
  EXPECT_EQ(cache_refusal({l1, "size=5K,level=2,associativity=none,policy=none,line=8"}),
            "Invalid size=5120, the size of level=2 should be larger than the size(10240) of level=1");
  EXPECT_EQ(hmat_refusal({kN0, kN1, "hmat-cache,node-id=2," + l1}),
            "-numa hmat-cache,node-id=2," + l1 + ": Invalid node-id=2, it should be less than 2");
  EXPECT_EQ(hmat_refusal({kN0, kN1, "hmat-cache,node-id=0," + l1}),
            "-numa hmat-cache,node-id=0," + l1 +
                ": The latency and bandwidth information of node-id=0 should be provided before memory side cache "
                "attributes");
}

}  // namespace
}  // namespace topolab
