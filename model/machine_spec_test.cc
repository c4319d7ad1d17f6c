// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/machine_spec.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab {
namespace {

TEST(MachineSpec, DefaultsAreQemus) {
  const ParsedMachine m = parse_machine_spec({});
  EXPECT_EQ(m.topology.to_smp_arg(), "1,sockets=1,dies=1,cores=1,threads=1");
  EXPECT_EQ(m.cpu.arg, "qemu64");
  EXPECT_FALSE(m.machine_options.scope_of(SmpCache::L3));
}

// -machine hmat=on reaches the NUMA options: without it hmat-lb is refused.
TEST(MachineSpec, MachineHmatReachesTheNumaOptions) {
  const std::string words =
      "-smp 2 -m 1G -object memory-backend-ram,id=m,size=1G -numa node,memdev=m,cpus=0-1 "
      "-numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=5";
  EXPECT_THROW(parse_machine_spec(parse_machine_words(words, "test")), ConfigError);
  const ParsedMachine m = parse_machine_spec(parse_machine_words(words + " -machine hmat=on", "test"));
  EXPECT_TRUE(m.machine_options.hmat);
  EXPECT_TRUE(m.numa.hmat_enabled());
  EXPECT_EQ(m.numa.hmat().localities.size(), 1u);
  EXPECT_FALSE(parse_machine("pc,hmat=off").hmat);
  EXPECT_THROW(parse_machine("hmat=maybe"), ConfigError);
}

TEST(MachineSpec, LabelNamesMachineOnlyWhenGiven) {
  EXPECT_EQ((MachineSpec{"4", "EPYC", ""}).label(), "-smp 4 -cpu EPYC");
  EXPECT_EQ((MachineSpec{"4", "EPYC", "smp-cache.0.cache=l3,smp-cache.0.topology=core"}).label(),
            "-smp 4 -cpu EPYC -machine smp-cache.0.cache=l3,smp-cache.0.topology=core");
}

TEST(MachineSpec, MachineReachesTheCpuidModel) {
  const MachineSpec plain{"8,sockets=1,cores=4,threads=2", "Skylake-Server", ""};
  MachineSpec per_core = plain;
  per_core.machine = "smp-cache.0.cache=l3,smp-cache.0.topology=core";
  const ParsedMachine m = parse_machine_spec(per_core);
  ASSERT_TRUE(m.machine_options.scope_of(SmpCache::L3));
  // Leaf 4's L3 (subleaf 3): EAX[25:14] is the sharing count minus 1.
  auto l3_sharing = [](const CpuidModel& model) { return ((model.query(0, 4, 3).eax >> 14) & 0xfff) + 1; };
  EXPECT_EQ(l3_sharing(parse_machine_spec(plain).cpuid_model()), 8u);
  EXPECT_EQ(l3_sharing(m.cpuid_model()), 2u);
}

TEST(MachineSpec, BadPartsThrowTheModelsErrors) {
  EXPECT_THROW(parse_machine_spec({"0", "qemu64", ""}), ConfigError);
  EXPECT_THROW(parse_machine_spec({"1", "NoSuchCpu", ""}), ConfigError);
  EXPECT_THROW(parse_machine_spec({"1", "qemu64", "smp-cache.0.cache=l9"}), ConfigError);
}

TEST(MachineWords, ReadsEachSpellingOfTheThreeOptions) {
  EXPECT_EQ(parse_machine_words("-smp 4 -cpu EPYC", "--diff"), (MachineSpec{"4", "EPYC", ""}));
  EXPECT_EQ(parse_machine_words("--smp=4 --cpu=EPYC,-topoext", "--diff"), (MachineSpec{"4", "EPYC,-topoext", ""}));
  EXPECT_EQ(parse_machine_words("-cpu EPYC -machine smp-cache.0.cache=l3,smp-cache.0.topology=core", "--diff"),
            (MachineSpec{"1", "EPYC", "smp-cache.0.cache=l3,smp-cache.0.topology=core"}));
  EXPECT_EQ(parse_machine_words("", "--diff"), MachineSpec{});
}

TEST(MachineWords, TakesMemoryAndEveryNumaAndObjectInOrder) {
  const MachineSpec spec = parse_machine_words(
      "-smp 4 -m 2G -object memory-backend-ram,id=a,size=1G -object memory-backend-ram,id=b,size=1G "
      "-numa node,memdev=a -numa node,memdev=b",
      "--diff");
  EXPECT_EQ(spec.memory, "2G");
  EXPECT_EQ(spec.objects, (std::vector<std::string>{"memory-backend-ram,id=a,size=1G", "memory-backend-ram,id=b,size=1G"}));
  EXPECT_EQ(spec.numa, (std::vector<std::string>{"node,memdev=a", "node,memdev=b"}));
  EXPECT_EQ(spec.label(),
            "-smp 4 -cpu qemu64 -m 2G -object memory-backend-ram,id=a,size=1G -object memory-backend-ram,id=b,size=1G "
            "-numa node,memdev=a -numa node,memdev=b");
  const ParsedMachine m = parse_machine_spec(spec);
  EXPECT_EQ(m.ram_mib, 2048u);
  ASSERT_EQ(m.numa.node_count(), 2u);
  EXPECT_EQ(m.numa.nodes()[1].cpus, (std::vector<unsigned>{}));  // one socket: every CPU on node 0
  EXPECT_EQ(m.numa.nodes()[0].cpus, (std::vector<unsigned>{0, 1, 2, 3}));
}

TEST(MachineWords, RefusesAnythingElseNamingTheText) {
  for (const char* text : {"-smp", "-hda disk", "-smp 4 extra", "-cpu="}) {
    try {
      parse_machine_words(text, "--diff");
      ADD_FAILURE() << text << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), fmt::format("--diff \"{}\": expected \"-smp N,... -cpu MODEL,... [-machine ...] [-m SIZE] [-object ...] "
                                                   "[-numa ...]\"",
                                                   text));
    }
  }
}

}  // namespace
}  // namespace topolab
