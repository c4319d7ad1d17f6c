// SPDX-License-Identifier: GPL-2.0-or-later
// The NUMA patterns on topolab machines with -numa nodes, each a command
// line QEMU 7.2 accepts (tests/CMakeLists.txt runs the same ones through
// `topolab check` and QEMU 7.2).
#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lab/topology_lint.h"
#include "lab/topology_lint_test_util.h"
#include "model/machine_spec.h"

namespace topolab {
namespace {

// A node: its cpus= (QEMU repeats the key for a list: "0,cpus=2"; empty for
// none) and its memory (0: no memdev).
struct Node {
  std::string cpus;
  unsigned mib = 256;
};

// -smp SMP -cpu CPU -m (the nodes' sum) with one memory-backend-ram per node
// that has memory, then `extra` (-numa dist ...).
MachineSpec numa_spec(const char* smp, const char* cpu, const std::vector<Node>& nodes, const std::vector<std::string>& extra = {}) {
  MachineSpec spec(smp, cpu);
  unsigned total = 0;
  for (unsigned i = 0; i < nodes.size(); ++i) {
    std::string node = fmt::format("node,nodeid={}", i);
    if (nodes[i].mib) {
      spec.objects.push_back(fmt::format("memory-backend-ram,id=m{},size={}M", i, nodes[i].mib));
      node += fmt::format(",memdev=m{}", i);
      total += nodes[i].mib;
    }
    if (!nodes[i].cpus.empty()) node += ",cpus=" + nodes[i].cpus;
    spec.numa.push_back(node);
  }
  for (const auto& e : extra) spec.numa.push_back(e);
  spec.memory = fmt::format("{}M", total);
  return spec;
}

std::vector<Finding> findings_of(const MachineSpec& spec, const std::vector<Consumer>& consumers = {}) {
  ParsedMachine m = parse_machine_spec(spec);
  RawCpuid raw = raw_cpuid_of(m.cpuid_model(), spec.label());
  return lint_topology(decode_for_lint(raw, consumers, &m.numa));
}

std::vector<std::string> ids_of(const MachineSpec& spec) {
  std::vector<std::string> ids;
  for (const auto& f : findings_of(spec)) ids.push_back(f.id);
  return ids;
}

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

const Finding& the(const std::vector<Finding>& findings, const std::string& id) {
  auto f = std::find_if(findings.begin(), findings.end(), [&](const Finding& x) { return x.id == id; });
  if (f == findings.end()) throw std::runtime_error("no finding " + id);
  return *f;
}

using Ids = std::vector<std::string>;

TEST(TopologyLintNuma, GoodConfigurationsHaveNoFindings) {
  // A node per socket.
  EXPECT_EQ(ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", {{"0-3"}, {"4-7"}})), Ids{});
  EXPECT_EQ(ids_of(numa_spec("16,sockets=2,cores=4,threads=2", "Skylake-Server,l3-cache=off", {{"0-7"}, {"8-15"}})), Ids{});
  EXPECT_EQ(ids_of(numa_spec("16,sockets=2,cores=8", "EPYC", {{"0-7"}, {"8-15"}}, {"dist,src=0,dst=1,val=21"})), Ids{});
  // Sub-NUMA clustering: four nodes in one socket, each with its own L3 (QEMU
  // 7.2 shares the L3 per die).
  EXPECT_EQ(ids_of(numa_spec("16,sockets=1,dies=4,cores=4", "Skylake-Server", {{"0-3"}, {"4-7"}, {"8-11"}, {"12-15"}})), Ids{});
  // EPYC with a node per die: the NodeIds are the dies, and Zen 1's core
  // complex (APIC ID >> 3) is the die.
  EXPECT_EQ(ids_of(numa_spec("32,sockets=1,dies=4,cores=4,threads=2", "EPYC", {{"0-7"}, {"8-15"}, {"16-23"}, {"24-31"}})), Ids{});
  // A distance given one way is completed symmetrically.
  EXPECT_EQ(ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", {{"0-3"}, {"4-7"}}, {"dist,src=1,dst=0,val=30"})), Ids{});
}

TEST(TopologyLintNuma, NothingWithoutNumaNodes) {
  RawCpuid raw = raw_cpuid_of(parse_machine_spec(MachineSpec("4", "qemu64")).cpuid_model(), "test");
  NumaConfig none;
  EXPECT_TRUE(lint_topology(decode_for_lint(raw, {}, &none)).empty());
  EXPECT_TRUE(lint_topology(decode_for_lint(raw, {}, nullptr)).empty());
}

TEST(TopologyLintNuma, LlcAcrossNodesWarnsAsLinuxDoes) {
  // qemu64 (AMD family 15): Linux's LLC is the package; Linux 6.1 under QEMU
  // 7.2 prints exactly this (docs/check.md, "NUMA").
  auto findings = findings_of(numa_spec("4", "qemu64", {{"0-1"}, {"2-3"}}));
  const Finding& f = the(findings, "llc-across-nodes");
  EXPECT_NE(f.symptom.find("sched: CPU #2's llc-sibling CPU #0 is not on the same node! [node: 1 != 0]. Ignoring dependency."),
            std::string::npos)
      << f.symptom;
  EXPECT_EQ(f.inferences.front().first, "intended");
}

TEST(TopologyLintNuma, IntelLlcAcrossNodesIsTakenForSncByLinux6) {
  auto findings = findings_of(numa_spec("8,sockets=1,cores=8", "Skylake-Server", {{"0-3"}, {"4-7"}}));
  const Finding& f = the(findings, "llc-across-nodes");
  auto linux6 = std::find_if(f.inferences.begin(), f.inferences.end(), [](const auto& i) { return i.first == "linux-6.x"; });
  auto linux4 = std::find_if(f.inferences.begin(), f.inferences.end(), [](const auto& i) { return i.first == "linux-4.x"; });
  ASSERT_NE(linux6, f.inferences.end());
  ASSERT_NE(linux4, f.inferences.end());
  EXPECT_NE(linux6->second.find("no warning"), std::string::npos) << linux6->second;
  EXPECT_NE(linux4->second.find("llc-sibling"), std::string::npos) << linux4->second;
}

TEST(TopologyLintNuma, DieAcrossNodes) {
  // 2 dies of 8 cores, 4 nodes: each die (and its L3) holds two nodes.
  auto findings = findings_of(numa_spec("16,sockets=1,dies=2,cores=8", "Skylake-Server", {{"0-3"}, {"4-7"}, {"8-11"}, {"12-15"}}),
                              {Consumer::Linux6});
  EXPECT_NE(the(findings, "llc-across-nodes").inferences.back().second.find("die 0-7 (nodes 0, 1)"), std::string::npos);
}

TEST(TopologyLintNuma, SmtSiblingsAcrossNodes) {
  auto findings = findings_of(numa_spec("4,sockets=2,cores=1,threads=2", "Skylake-Server", {{"0,cpus=2"}, {"1,cpus=3"}}));
  const Finding& f = the(findings, "smt-siblings-across-nodes");
  EXPECT_NE(f.symptom.find("sched: CPU #1's smt-sibling CPU #0 is not on the same node! [node: 1 != 0]"), std::string::npos)
      << f.symptom;
}

TEST(TopologyLintNuma, MemorylessAndCpulessNodes) {
  Ids memoryless = ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", {{"0-3", 512}, {"4-7", 0}}));
  EXPECT_EQ(memoryless, Ids{"numa-node-memoryless"});
  Ids cpuless = ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", {{"0-3"}, {"4-7"}, {""}}));
  EXPECT_EQ(cpuless, Ids{"numa-node-cpuless"});
}

TEST(TopologyLintNuma, Distances) {
  const std::vector<Node> two{{"0-3"}, {"4-7"}};
  EXPECT_EQ(ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", two, {"dist,src=0,dst=1,val=20", "dist,src=1,dst=0,val=30"})),
            Ids{"numa-distances-asymmetric"});
  EXPECT_EQ(ids_of(numa_spec("8,sockets=2,cores=4", "Skylake-Server", two, {"dist,src=0,dst=1,val=10"})), Ids{"numa-slit-invalid"});
}

TEST(TopologyLintNuma, AmdNodeIdAgainstTheSrat) {
  // Two nodes on one socket: every CPU has NodeId 0.
  Ids one_socket = ids_of(numa_spec("8,sockets=1,cores=8", "EPYC", {{"0-3"}, {"4-7"}}));
  EXPECT_TRUE(has(one_socket, "amd-node-id-vs-numa"));
  // Nodes crosswise over two sockets: each node has both sockets' NodeIds.
  const std::vector<Node> crosswise{{"0-3,cpus=8-11"}, {"4-7,cpus=12-15"}};
  EXPECT_TRUE(has(ids_of(numa_spec("16,sockets=2,cores=8", "EPYC", crosswise)), "amd-node-id-vs-numa"));
  // Intel has no such leaf: the same nodes are only an LLC over nodes.
  EXPECT_FALSE(has(ids_of(numa_spec("16,sockets=2,cores=8", "Skylake-Server", crosswise)), "amd-node-id-vs-numa"));
}

TEST(TopologyLintNuma, NodesSplittingPackagesWithoutL3) {
  auto findings = findings_of(numa_spec("8,sockets=1,cores=8", "Skylake-Server,l3-cache=off", {{"0-3"}, {"4-7"}}));
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = the(findings, "numa-split-without-l3");
  auto linux6 = std::find_if(f.inferences.begin(), f.inferences.end(), [](const auto& i) { return i.first == "linux-6.x"; });
  ASSERT_NE(linux6, f.inferences.end());
  EXPECT_NE(linux6->second.find("the MC domain is one core"), std::string::npos) << linux6->second;
  // With the L3 the LLC spans the nodes instead.
  EXPECT_FALSE(has(ids_of(numa_spec("8,sockets=1,cores=8", "Skylake-Server", {{"0-3"}, {"4-7"}})), "numa-split-without-l3"));
}

TEST(TopologyLintNuma, EveryFindingNamesLeavesViewsSymptomAndBugs) {
  std::vector<MachineSpec> bad{
      numa_spec("4,sockets=1,cores=2,threads=2", "qemu64", {{"0,cpus=2"}, {"1,cpus=3", 0}, {""}},
                {"dist,src=0,dst=1,val=10", "dist,src=0,dst=2,val=20", "dist,src=1,dst=2,val=20"}),
      numa_spec("8,sockets=1,cores=8", "EPYC,l3-cache=off", {{"0-3"}, {"4-7"}}, {"dist,src=0,dst=1,val=20", "dist,src=1,dst=0,val=30"}),
  };
  size_t found = 0;
  for (const auto& spec : bad) {
    auto findings = findings_of(spec);
    found += findings.size();
    expect_complete(findings);
  }
  EXPECT_GE(found, 8u);
}

}  // namespace
}  // namespace topolab
