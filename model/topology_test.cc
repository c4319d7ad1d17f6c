// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/topology.h"

#include <set>

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(BitWidth, IsCeilLog2) {
  EXPECT_EQ(bit_width_for_count(0), 0u);
  EXPECT_EQ(bit_width_for_count(1), 0u);
  EXPECT_EQ(bit_width_for_count(2), 1u);
  EXPECT_EQ(bit_width_for_count(3), 2u);
  EXPECT_EQ(bit_width_for_count(4), 2u);
  EXPECT_EQ(bit_width_for_count(5), 3u);
  EXPECT_EQ(bit_width_for_count(4096), 12u);
}

struct SmpCase {
  const char* smp;
  unsigned cpus, max_cpus, sockets, dies, modules, cores, threads;
};

class SmpParse : public testing::TestWithParam<SmpCase> {};

TEST_P(SmpParse, FillsInAsQemu72) {
  const SmpCase& c = GetParam();
  Topology t = Topology::parse(c.smp);
  EXPECT_EQ(t.cpus(), c.cpus);
  EXPECT_EQ(t.max_cpus(), c.max_cpus);
  EXPECT_EQ(t.counts().sockets, c.sockets);
  EXPECT_EQ(t.counts().dies, c.dies);
  EXPECT_EQ(t.counts().modules, c.modules);
  EXPECT_EQ(t.counts().cores, c.cores);
  EXPECT_EQ(t.counts().threads, c.threads);
  // The canonical form parses back to the same topology.
  Topology again = Topology::parse(t.to_smp_arg());
  EXPECT_EQ(again.to_smp_arg(), t.to_smp_arg());
}

INSTANTIATE_TEST_SUITE_P(
    Qemu72Rules, SmpParse,
    testing::Values(
        SmpCase{"1", 1, 1, 1, 1, 1, 1, 1},
        SmpCase{"4", 4, 4, 1, 1, 1, 4, 1},  // cores preferred over sockets
        SmpCase{"cpus=4", 4, 4, 1, 1, 1, 4, 1},
        SmpCase{"16,sockets=1,cores=8,threads=2", 16, 16, 1, 1, 1, 8, 2},
        SmpCase{"8,sockets=2,cores=4", 8, 8, 2, 1, 1, 4, 1},
        SmpCase{"12,sockets=2,cores=3,threads=2", 12, 12, 2, 1, 1, 3, 2},
        SmpCase{"32,sockets=2,dies=2,cores=4,threads=2", 32, 32, 2, 2, 1, 4, 2},
        SmpCase{"sockets=2,cores=2", 4, 4, 2, 1, 1, 2, 1},  // no count: product
        SmpCase{"8,cores=2", 8, 8, 4, 1, 1, 2, 1},           // sockets derived
        SmpCase{"8,sockets=2,cores=2", 8, 8, 2, 1, 1, 2, 2},  // threads derived last
        SmpCase{"2,maxcpus=8", 2, 8, 1, 1, 1, 8, 1},
        SmpCase{"16,modules=2,cores=4,threads=2", 16, 16, 1, 1, 2, 4, 2},
        SmpCase{"300", 300, 300, 1, 1, 1, 300, 1},
        SmpCase{"4096,sockets=4,cores=512,threads=2", 4096, 4096, 4, 1, 1, 512, 2}),
    [](const testing::TestParamInfo<SmpCase>& info) { return "case" + std::to_string(info.index); });

class SmpRejects : public testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(SmpRejects, WithAMessageNamingTheProblem) {
  auto [smp, expected_fragment] = GetParam();
  try {
    Topology::parse(smp);
    FAIL() << "accepted -smp " << smp;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(expected_fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "must be one line";
  }
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, SmpRejects,
    testing::Values(std::pair{"", "empty"}, std::pair{"0", "greater than zero"},
                    std::pair{"4,cores=0", "cores=0"}, std::pair{"abc", "whole number"},
                    std::pair{"4,cores=two", "cores expects a whole number"},
                    std::pair{"4,bogus=1", "unknown parameter 'bogus'"},
                    std::pair{"4,cores=2,cores=2", "given twice"},
                    std::pair{"7,sockets=2,cores=2", "must equal maxcpus (7)"},
                    std::pair{"2,threads=4", "must equal maxcpus (2)"},
                    std::pair{"8,maxcpus=4", "must be at least"},
                    std::pair{"4097", "4096"}, std::pair{"4,clusters=2", "modules"},
                    std::pair{"4,clusters=0", "clusters=0"},
                    std::pair{"sockets=2,4", "key=value"}, std::pair{"-1", "whole number"},
                    std::pair{"99999999999", "whole number"},
                    std::pair{"4,sockets=4096,dies=4096,threads=4096", "must equal maxcpus (4)"},
                    std::pair{"sockets=4096,cores=4096", "16777216 CPUs, more than the 4096"},
                    std::pair{"sockets=4096,dies=4096,modules=4096,cores=4096,threads=4096", "more than the 4096"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// APIC IDs in QEMU's layout, as cloud-hypervisor tests get_x2apic_id.
struct ApicCase {
  Topology::Counts counts;
  unsigned index;
  uint32_t apic_id;
  CpuCoords coords;
};

class ApicIds : public testing::TestWithParam<ApicCase> {};

TEST_P(ApicIds, IndexCoordsAndIdAgree) {
  const ApicCase& c = GetParam();
  Topology t = Topology::from_counts(c.counts);
  EXPECT_EQ(t.coords_of(c.index), c.coords);
  EXPECT_EQ(t.apic_id(c.index), c.apic_id);
  EXPECT_EQ(t.index_of(c.coords), c.index);
  ASSERT_TRUE(t.coords_of_apic_id(c.apic_id).has_value());
  EXPECT_EQ(*t.coords_of_apic_id(c.apic_id), c.coords);
  EXPECT_EQ(t.index_of_apic_id(c.apic_id), c.index);
}

INSTANTIATE_TEST_SUITE_P(
    QemuLayout, ApicIds,
    testing::Values(
        ApicCase{{1, 1, 1, 1, 1}, 0, 0, {0, 0, 0, 0, 0}},
        ApicCase{{1, 1, 1, 8, 2}, 15, 15, {0, 0, 0, 7, 1}},
        ApicCase{{2, 1, 1, 3, 2}, 5, 5, {0, 0, 0, 2, 1}},
        ApicCase{{2, 1, 1, 3, 2}, 6, 8, {1, 0, 0, 0, 0}},  // the gap: 6 and 7 unused
        ApicCase{{2, 1, 1, 3, 2}, 11, 13, {1, 0, 0, 2, 1}},
        ApicCase{{2, 2, 1, 4, 2}, 8, 8, {0, 1, 0, 0, 0}},
        ApicCase{{2, 2, 1, 4, 2}, 31, 31, {1, 1, 0, 3, 1}},
        ApicCase{{1, 1, 2, 3, 1}, 3, 4, {0, 0, 1, 0, 0}},  // modules above cores
        ApicCase{{1, 1, 1, 300, 1}, 299, 299, {0, 0, 0, 299, 0}},
        ApicCase{{6, 1, 1, 2, 3}, 8, 0xA, {1, 0, 0, 0, 2}},  // 3 threads: 2-bit field, package at bit 3
        ApicCase{{4, 1, 1, 512, 2}, 4095, 4095, {3, 0, 0, 511, 1}}),
    [](const testing::TestParamInfo<ApicCase>& info) { return "case" + std::to_string(info.index); });

TEST(ApicIds, GapsAreNotCpus) {
  Topology t = Topology::parse("12,sockets=2,cores=3,threads=2");
  EXPECT_FALSE(t.index_of_apic_id(6).has_value());
  EXPECT_FALSE(t.index_of_apic_id(7).has_value());
  EXPECT_FALSE(t.index_of_apic_id(16).has_value());
  EXPECT_EQ(t.max_apic_id(), 13u);
}

TEST(ApicIds, HotpluggableCpusAreNotPresent) {
  Topology t = Topology::parse("2,maxcpus=4");
  EXPECT_EQ(t.index_of_apic_id(1), 1u);
  EXPECT_FALSE(t.index_of_apic_id(2).has_value());
  EXPECT_EQ(t.max_apic_id(), 1u);
}

TEST(ApicIds, AreUniqueForEveryCpuOfLargeSparseMachines) {
  for (const char* smp : {"12,sockets=2,cores=3,threads=2", "300", "4095,sockets=5,cores=273,threads=3"}) {
    Topology t = Topology::parse(smp);
    std::set<uint32_t> seen;
    for (unsigned i = 0; i < t.cpus(); ++i) {
      uint32_t id = t.apic_id(i);
      EXPECT_TRUE(seen.insert(id).second) << smp << " cpu " << i;
      EXPECT_EQ(t.index_of_apic_id(id), i);
    }
  }
}

TEST(X2Apic, NeededOnlyPastApicId254) {
  EXPECT_FALSE(Topology::parse("255").needs_x2apic());  // IDs 0..254 (8-bit core field)
  EXPECT_TRUE(Topology::parse("256").needs_x2apic());
  EXPECT_TRUE(Topology::parse("300").needs_x2apic());
  // 96 CPUs in 2 sockets x 48 cores: core field 6 bits, socket 1 at ID 64, max 111.
  EXPECT_FALSE(Topology::parse("96,sockets=2,cores=48").needs_x2apic());
  // 3 threads widen the IDs: 3 sockets x 32 cores x 3 threads reaches 0x17F.
  EXPECT_TRUE(Topology::parse("288,sockets=3,cores=32,threads=3").needs_x2apic());
  EXPECT_TRUE(Topology::parse("8,maxcpus=4096").needs_x2apic());  // hot-pluggable CPUs count
}

TEST(Describe, NamesOnlyTheLevelsThatExist) {
  EXPECT_EQ(Topology::parse("16,sockets=1,cores=8,threads=2").describe(), "1 socket x 8 cores x 2 threads");
  EXPECT_EQ(Topology::parse("32,sockets=2,dies=2,cores=4,threads=2").describe(),
            "2 sockets x 2 dies x 4 cores x 2 threads");
  EXPECT_EQ(Topology::parse("2,maxcpus=4").describe(), "1 socket x 4 cores x 1 thread (2 of 4 CPUs present)");
}

// Alder Lake: 8 P-cores x 2 threads, each its own module (its own L2), and 2
// modules of 4 E-cores. Fields: thread 1 bit, core 2 bits (4 E-cores), module
// 4 bits (10 modules); the P-modules leave cores 1-3 unused, the E-cores
// thread 1.
constexpr const char* kAlderLake = "sockets=1,p-modules=8,p-threads=2,e-modules=2,e-cores=4";

struct HybridCase {
  const char* smp;
  unsigned index;
  uint32_t apic_id;
  CpuCoords coords;
  CoreType type;
};

class HybridIds : public testing::TestWithParam<HybridCase> {};

TEST_P(HybridIds, IndexCoordsIdAndCoreTypeAgree) {
  const HybridCase& c = GetParam();
  Topology t = Topology::parse(c.smp);
  EXPECT_EQ(t.coords_of(c.index), c.coords);
  EXPECT_EQ(t.apic_id(c.index), c.apic_id);
  EXPECT_EQ(t.index_of(c.coords), c.index);
  EXPECT_EQ(t.index_of_apic_id(c.apic_id), c.index);
  EXPECT_EQ(t.core_type(c.index), c.type);
}

INSTANTIATE_TEST_SUITE_P(
    ModuleField, HybridIds,
    testing::Values(HybridCase{kAlderLake, 0, 0x00, {0, 0, 0, 0, 0}, CoreType::Core},
                    HybridCase{kAlderLake, 1, 0x01, {0, 0, 0, 0, 1}, CoreType::Core},
                    HybridCase{kAlderLake, 15, 0x39, {0, 0, 7, 0, 1}, CoreType::Core},
                    HybridCase{kAlderLake, 16, 0x40, {0, 0, 8, 0, 0}, CoreType::Atom},
                    HybridCase{kAlderLake, 19, 0x46, {0, 0, 8, 3, 0}, CoreType::Atom},
                    HybridCase{kAlderLake, 20, 0x48, {0, 0, 9, 0, 0}, CoreType::Atom},
                    HybridCase{kAlderLake, 23, 0x4e, {0, 0, 9, 3, 0}, CoreType::Atom},
                    // Two sockets: the package field starts at bit 7.
                    HybridCase{"sockets=2,p-modules=8,p-threads=2,e-modules=2,e-cores=4", 24, 0x80, {1, 0, 0, 0, 0},
                               CoreType::Core},
                    // E-modules only ask for nothing wider than they need.
                    HybridCase{"e-modules=3,e-cores=2", 5, 0x5, {0, 0, 2, 1, 0}, CoreType::Atom},
                    // A P-kind with 2 cores per module and 3 threads: 2-bit thread field.
                    HybridCase{"p-modules=1,p-cores=2,p-threads=3,e-modules=1,e-cores=4", 6, 0x10, {0, 0, 1, 0, 0},
                               CoreType::Atom}),
    [](const testing::TestParamInfo<HybridCase>& info) { return "case" + std::to_string(info.index); });

TEST(Hybrid, AlderLakeCountsAndGaps) {
  Topology t = Topology::parse(kAlderLake);
  EXPECT_TRUE(t.is_hybrid());
  EXPECT_EQ(t.cpus(), 24u);
  EXPECT_EQ(t.threads_per_package(), 24u);
  EXPECT_EQ(t.counts().modules, 10u);
  EXPECT_EQ(t.module_offset(), 3u);
  EXPECT_EQ(t.package_offset(), 7u);
  EXPECT_FALSE(t.index_of_apic_id(0x02).has_value());  // P-module: core 1 unused
  EXPECT_FALSE(t.index_of_apic_id(0x41).has_value());  // E-core: no thread 1
  EXPECT_FALSE(t.index_of_apic_id(0x50).has_value());  // module 10 does not exist
  EXPECT_EQ(t.describe(), "1 socket x [8 P-modules x 1 core x 2 threads + 2 E-modules x 4 cores x 1 thread]");
  EXPECT_EQ(Topology::parse(t.to_smp_arg()).to_smp_arg(), t.to_smp_arg());
  EXPECT_FALSE(Topology::parse("16,sockets=1,cores=8,threads=2").is_hybrid());
}

TEST(Hybrid, EveryCpuHasOneApicIdAndItsKind) {
  Topology t = Topology::parse("4,sockets=2,dies=2,p-modules=3,p-threads=2,e-modules=3,e-cores=3,maxcpus=60");
  std::set<uint32_t> seen;
  for (unsigned i = 0; i < t.max_cpus(); ++i) {
    CpuCoords c = t.coords_of(i);
    EXPECT_EQ(t.index_of(c), i);
    EXPECT_TRUE(seen.insert(t.apic_id(i)).second) << i;
    EXPECT_EQ(t.coords_of_apic_id(t.apic_id(i)), c) << i;
    EXPECT_EQ(t.core_type(i), c.module < 3 ? CoreType::Core : CoreType::Atom) << i;
  }
  EXPECT_EQ(t.cpus(), 4u);
}

INSTANTIATE_TEST_SUITE_P(
    HybridBadInput, SmpRejects,
    testing::Values(std::pair{"p-modules=2,cores=2", "cannot be combined"},
                    std::pair{"p-modules=2,modules=2", "modules= cannot be combined"},
                    std::pair{"p-cores=2", "p-cores needs p-modules"},
                    std::pair{"e-modules=2,e-threads=2,p-threads=2", "p-threads needs p-modules"},
                    std::pair{"20,p-modules=8,p-threads=2,e-modules=2,e-cores=4", "must equal maxcpus (20)"},
                    std::pair{"p-modules=0", "p-modules=0"},
                    std::pair{"sockets=64,p-modules=64,p-threads=2", "more than the 4096"},
                    std::pair{"e-modules=2,e-cores=x", "e-cores expects a whole number"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace topolab
