// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/linux_sysfs.h"

#include <gtest/gtest.h>

#include "lab/cpuid_dump.h"
#include "model/machine_spec.h"

namespace topolab {
namespace {

ParsedMachine machine(const std::string& words) { return parse_machine_spec(parse_machine_words(words, "test")); }

LinuxNumaView view_of(const ParsedMachine& m) { return linux_numa_view(m.numa, m.topology, m.ram_mib << 20); }

TEST(LinuxNuma, OneFakeNodeWithoutNuma) {
  const ParsedMachine m = machine("-smp 4,maxcpus=8 -m 512");
  const LinuxNumaView v = view_of(m);
  EXPECT_EQ(format_linux_nodes(v),
            "topolab-numa nodes=1 srat=no slit=none complaints=none\n"
            "topolab-node node0 cpulist=0-3 distance=10 memory_kb=524288\n");
}

// Linux numbers nodes as the SRAT first names them: CPU 0's node is node0.
TEST(LinuxNuma, NodesNumberedInSratOrderWithTheSlit) {
  const ParsedMachine m = machine(
      "-smp 4,sockets=2,cores=2 -m 1G -object memory-backend-ram,id=a,size=256M "
      "-object memory-backend-ram,id=b,size=768M -numa node,memdev=a,cpus=2-3 -numa node,memdev=b,cpus=0-1 "
      "-numa dist,src=0,dst=1,val=31");
  EXPECT_EQ(format_linux_nodes(view_of(m)),
            "topolab-numa nodes=2 srat=yes slit=used complaints=none\n"
            "topolab-node node0 cpulist=0-1 distance=10,31 memory_kb=786432\n"
            "topolab-node node1 cpulist=2-3 distance=31,10 memory_kb=262144\n");
}

// A node with neither CPUs nor memory is in no SRAT entry: no Linux node.
// A memory-only node comes after the CPUs' nodes.
TEST(LinuxNuma, EmptyNodesAreNoLinuxNodes) {
  const ParsedMachine m = machine(
      "-smp 2 -m 1G -object memory-backend-ram,id=a,size=512M -object memory-backend-ram,id=b,size=512M "
      "-numa node,memdev=a -numa node -numa node,memdev=b,cpus=0-1");
  const LinuxNumaView v = view_of(m);
  ASSERT_EQ(v.nodes.size(), 2u);
  EXPECT_EQ(v.nodes[0].proximity, 2u);  // CPU 0's
  EXPECT_EQ(v.nodes[1].proximity, 0u);  // memory only
  EXPECT_TRUE(v.nodes[1].cpus.empty());
}

// slit_valid(): a remote distance of 10 makes Linux drop the SLIT.
TEST(LinuxNuma, ASlitLinuxRejectsLeavesTenAndTwenty) {
  const ParsedMachine m = machine(
      "-smp 2,sockets=2 -m 1G -object memory-backend-ram,id=a,size=512M -object memory-backend-ram,id=b,size=512M "
      "-numa node,memdev=a -numa node,memdev=b -numa dist,src=0,dst=1,val=10");
  const LinuxNumaView v = view_of(m);
  EXPECT_TRUE(v.slit_rejected);
  EXPECT_EQ(v.distance[0][1], 20);
}

// AMD: the L3 Linux shows is cpu_llc_shared_mask, cut at the nodes, and
// Linux complains; Intel's stays leaf 4's and Intel is SNC-exempt.
TEST(LinuxNuma, ANodeThroughAnAmdLlcCutsItsL3) {
  for (const char* cpu : {"qemu64", "Skylake-Server"}) {
    const ParsedMachine m = machine(
        std::string("-smp 8,sockets=1,cores=8 -cpu ") + cpu +
        " -m 1G -object memory-backend-ram,id=a,size=512M -object memory-backend-ram,id=b,size=512M "
        "-numa node,memdev=a,cpus=0-3 -numa node,memdev=b,cpus=4-7");
    const RawCpuid raw = raw_cpuid_of(m.cpuid_model(), "");
    ConsumerView linux = decode_as(Consumer::Linux6, raw);
    LinuxNumaView v = view_of(m);
    const bool amd = identify(raw.cpus.front()).amd;
    apply_linux_numa(linux, v, amd);
    const CacheView* l3 = linux.cache(3, 'u');
    ASSERT_NE(l3, nullptr) << cpu;
    if (amd) {
      EXPECT_EQ(l3->groups, (CpuGroups{{0, 1, 2, 3}, {4, 5, 6, 7}})) << cpu;
      EXPECT_EQ(v.complaints, (std::vector<std::string>{"llc"})) << cpu;
    } else {
      EXPECT_EQ(l3->groups, (CpuGroups{{0, 1, 2, 3, 4, 5, 6, 7}})) << cpu;
      EXPECT_TRUE(v.complaints.empty()) << cpu;
    }
  }
}

// SMT siblings on two nodes: the smt complaint, whatever the vendor.
TEST(LinuxNuma, SmtSiblingsOnTwoNodes) {
  const ParsedMachine m = machine(
      "-smp 4,sockets=1,cores=2,threads=2 -cpu Skylake-Server -m 1G -object memory-backend-ram,id=a,size=512M "
      "-object memory-backend-ram,id=b,size=512M -numa node,memdev=a,cpus=0,cpus=2 -numa node,memdev=b,cpus=1,cpus=3");
  ConsumerView linux = decode_as(Consumer::Linux6, raw_cpuid_of(m.cpuid_model(), ""));
  LinuxNumaView v = view_of(m);
  apply_linux_numa(linux, v, false);
  ASSERT_FALSE(v.complaints.empty());
  EXPECT_EQ(v.complaints.front(), "smt");
}

}  // namespace
}  // namespace topolab
