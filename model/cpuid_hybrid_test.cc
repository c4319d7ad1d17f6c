// SPDX-License-Identifier: GPL-2.0-or-later
// Hybrid parts (CPUID.07H:EDX[15], leaf 1AH, per-type leaves 4/0xB/0x1F),
// -machine smp-cache and x-force-cpuid-0x1f. Each expectation is decoded
// the way a guest decodes the leaf, not compared with a dump.
#include "model/cpuid.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace topolab {
namespace {

constexpr const char* kAlderLakeSmp = "sockets=1,p-modules=8,p-threads=2,e-modules=2,e-cores=4";

CpuidModel make(const char* smp, const char* cpu, const char* machine = "") {
  return CpuidModel(Topology::parse(smp), parse_cpu(cpu), *machine ? parse_machine(machine) : MachineOptions{});
}

// Linux cacheinfo on one CPU: level -> (sharing count, cache id) for the
// data/unified caches of leaf 4. The id is Linux's cpu_l2c_id / cpu_llc_id
// form (init_intel_cacheinfo): the APIC ID with the sharing bits masked off,
// as hwloc takes it too. The shifted form of sysfs' cache "id" is not unique
// across core types: P-core 2's L2 (0x10 >> 1) and E-module 0's (0x40 >> 3)
// are both 8, as on the real part; Linux compares those only with one CPU's
// own shift.
std::map<unsigned, std::pair<unsigned, uint32_t>> leaf4_caches(const CpuidModel& m, unsigned cpu) {
  std::map<unsigned, std::pair<unsigned, uint32_t>> out;
  uint32_t apicid = m.query(cpu, 0xB, 0).edx;
  for (uint32_t sub = 0; sub < 16; ++sub) {
    CpuidRegs r = m.query(cpu, 4, sub);
    if ((r.eax & 0x1f) == 0) break;
    if ((r.eax & 0x1f) == 2) continue;
    unsigned n = ((r.eax >> 14) & 0xfff) + 1;
    out[(r.eax >> 5) & 7] = {n, apicid & ~((1u << bit_width_for_count(n)) - 1)};
  }
  return out;
}

uint64_t leaf4_size(const CpuidModel& m, unsigned cpu, uint32_t sub) {
  CpuidRegs r = m.query(cpu, 4, sub);
  return uint64_t((r.ebx >> 22) + 1) * (((r.ebx >> 12) & 0x3ff) + 1) * ((r.ebx & 0xfff) + 1) * (uint64_t(r.ecx) + 1);
}

struct HybridCpuCase {
  unsigned cpu;
  uint32_t leaf1a_eax;      // core type << 24 | native model ID
  uint32_t smt_count;       // leaf 0x1F subleaf 0 EBX
  uint32_t module_threads;  // leaf 0x1F subleaf 1 EBX (the core level: CPUs in the module)
  uint64_t l1d_size, l2_size;
  unsigned l2_sharing_ids;  // 1 + leaf 4 EAX[25:14]
};

class AlderLakeCpu : public testing::TestWithParam<HybridCpuCase> {};

TEST_P(AlderLakeCpu, ReportsItsOwnCoreTypeAndCaches) {
  const HybridCpuCase& c = GetParam();
  CpuidModel m = make(kAlderLakeSmp, "AlderLake");
  EXPECT_EQ(m.query(c.cpu, 0x1A, 0).eax, c.leaf1a_eax);
  EXPECT_EQ(m.query(c.cpu, 0x7, 0).edx & (1u << 15), 1u << 15) << "CPUID.07H:EDX[15] hybrid";
  EXPECT_EQ(m.query(c.cpu, 0x1F, 0).ebx & 0xffff, c.smt_count);
  EXPECT_EQ(m.query(c.cpu, 0xB, 0).ebx & 0xffff, c.smt_count);
  EXPECT_EQ(m.query(c.cpu, 0x1F, 1).ebx & 0xffff, c.module_threads);
  EXPECT_EQ(leaf4_size(m, c.cpu, 0), c.l1d_size);
  EXPECT_EQ(leaf4_size(m, c.cpu, 2), c.l2_size);
  EXPECT_EQ(leaf4_caches(m, c.cpu).at(2).first, c.l2_sharing_ids);
  // Family 6 model 0x97 on every core, as the part reports.
  EXPECT_EQ(m.query(c.cpu, 1, 0).eax, 0x00090672u);
}

INSTANTIATE_TEST_SUITE_P(
    PAndECores, AlderLakeCpu,
    testing::Values(HybridCpuCase{0, 0x40000001, 2, 2, 48 * 1024, 1280 * 1024, 2},
                    HybridCpuCase{15, 0x40000001, 2, 2, 48 * 1024, 1280 * 1024, 2},
                    HybridCpuCase{16, 0x20000001, 1, 4, 32 * 1024, 2048 * 1024, 8},
                    HybridCpuCase{23, 0x20000001, 1, 4, 32 * 1024, 2048 * 1024, 8}),
    [](const testing::TestParamInfo<HybridCpuCase>& info) { return "cpu" + std::to_string(info.param.cpu); });

// The layout leaves are the package's, the same on every core type (SDM:
// the shifts of leaf 0x1F describe one x2APIC-ID layout).
TEST(Hybrid, ShiftsAndPackageCountsAreTheSameOnEveryCore) {
  CpuidModel m = make(kAlderLakeSmp, "AlderLake");
  for (uint32_t sub = 0; sub < 4; ++sub) {
    EXPECT_EQ(m.query(0, 0x1F, sub).eax, m.query(16, 0x1F, sub).eax) << sub;
    EXPECT_EQ(m.query(0, 0x1F, sub).ecx, m.query(16, 0x1F, sub).ecx) << sub;
  }
  EXPECT_EQ((m.query(0, 0x1F, 2).ecx >> 8) & 0xff, 3u) << "subleaf 2 is the module level";
  EXPECT_EQ(m.query(0, 0x1F, 2).ebx & 0xffff, 24u);
  EXPECT_EQ(m.query(0, 1, 0).ebx & 0x00ff0000, m.query(16, 1, 0).ebx & 0x00ff0000);
  EXPECT_EQ(m.query(0, 4, 0).eax >> 26, m.query(16, 4, 0).eax >> 26);
}

// Linux's cluster domain is the L2 sharing: each P-core alone (with its
// sibling thread), each E-module's four cores together; the L3 spans both.
TEST(Hybrid, L2IsSharedPerEModuleAndL3ByThePackage) {
  CpuidModel m = make(kAlderLakeSmp, "AlderLake");
  const Topology& t = m.topology();
  for (unsigned i = 0; i < t.cpus(); ++i)
    for (unsigned j = 0; j < t.cpus(); ++j) {
      CpuCoords a = t.coords_of(i), b = t.coords_of(j);
      auto ci = leaf4_caches(m, i), cj = leaf4_caches(m, j);
      EXPECT_EQ(ci.at(2).second == cj.at(2).second, a.module == b.module) << i << "," << j;
      EXPECT_EQ(ci.at(1).second == cj.at(1).second, a.module == b.module && a.core == b.core) << i << "," << j;
      EXPECT_EQ(ci.at(3).second, cj.at(3).second);
    }
}

TEST(Hybrid, EnumerationFollowsEachCpusCoreType) {
  CpuidModel m = make(kAlderLakeSmp, "AlderLake");
  for (unsigned cpu : {0u, 1u, 16u, 22u})
    for (const auto& e : m.enumerate(cpu)) EXPECT_EQ(e.regs, m.query(cpu, e.leaf, e.subleaf)) << cpu << " " << e.leaf;
}

TEST(Hybrid, Leaf2PointsToLeaf4) {
  // Descriptor FFH in AL's neighbour byte: "use leaf 4" (SDM table 3-12).
  EXPECT_EQ(make(kAlderLakeSmp, "AlderLake").query(16, 2, 0), (CpuidRegs{0x0000ff01, 0, 0, 0}));
}

TEST(Hybrid, APlainTopologyOnAlderLakeIsNotHybrid) {
  CpuidModel m = make("8,cores=4,threads=2", "AlderLake");
  EXPECT_EQ(m.query(0, 0x7, 0).edx & (1u << 15), 0u);
  EXPECT_EQ(m.query(0, 0x1A, 0), CpuidRegs{});
  EXPECT_EQ(leaf4_size(m, 7, 0), 48u * 1024);  // P-cores throughout
}

// Alder Lake-N style: E-modules only. Every CPU is an Atom.
TEST(Hybrid, EModulesAlone) {
  CpuidModel m = make("e-modules=2,e-cores=4", "AlderLake");
  for (unsigned cpu = 0; cpu < m.topology().cpus(); ++cpu) {
    EXPECT_EQ(m.query(cpu, 0x1A, 0).eax >> 24, 0x20u) << cpu;
    EXPECT_EQ(m.enumerate(cpu).size(), m.enumerate(0).size());
  }
  EXPECT_EQ(leaf4_caches(m, 5).at(2).first, 4u);
}

TEST(Hybrid, NeedsAHybridCpuModel) {
  try {
    make(kAlderLakeSmp, "Skylake-Server");
    FAIL() << "accepted E-cores on Skylake-Server";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("hybrid CPU model"), std::string::npos) << e.what();
  }
}

// ---- -machine smp-cache (QEMU 10.0) -----------------------------------------

TEST(SmpCache, MovesTheSharingLevelOfLeaf4) {
  const char* smp = "16,sockets=1,modules=2,cores=4,threads=2";
  auto l2_sharing = [&](const char* machine) { return leaf4_caches(make(smp, "Skylake-Server", machine), 0).at(2).first; };
  EXPECT_EQ(l2_sharing(""), 2u);  // the model's default: per core
  EXPECT_EQ(l2_sharing("smp-cache.0.cache=l2,smp-cache.0.topology=module"), 8u);
  EXPECT_EQ(l2_sharing("pc,smp-cache.0.cache=l2,smp-cache.0.topology=default"), 2u);
  auto l3 = [&](const char* machine) { return leaf4_caches(make(smp, "Skylake-Server", machine), 0).at(3).first; };
  EXPECT_EQ(l3("smp-cache.0.cache=l3,smp-cache.0.topology=module"), 8u);
  EXPECT_EQ(l3("smp-cache.0.cache=l3,smp-cache.0.topology=socket"), 16u);
  // The E-module L2 follows it too: per core on request.
  EXPECT_EQ(leaf4_caches(make(kAlderLakeSmp, "AlderLake", "smp-cache.0.cache=l2,smp-cache.0.topology=core"), 16)
                .at(2)
                .first,
            2u);
}

TEST(SmpCache, RefusesWhatQemuRefuses) {
  for (auto [machine, fragment] : std::vector<std::pair<const char*, const char*>>{
           {"smp-cache.0.cache=l2,smp-cache.0.topology=thread", "thread level cache not supported"},
           {"smp-cache.0.cache=l2,smp-cache.0.topology=cluster", "invalid topology level: cluster"},
           {"smp-cache.0.cache=l3,smp-cache.0.topology=drawer", "invalid topology level: drawer"},
           {"smp-cache.0.cache=l2,smp-cache.0.topology=core,smp-cache.1.cache=l2,smp-cache.1.topology=die",
            "l2. The cache properties are duplicated"},
           {"smp-cache.0.cache=l4,smp-cache.0.topology=core", "must be l1d, l1i, l2 or l3"},
           {"smp-cache.0.cache=l2,smp-cache.0.topology=node", "must be thread, core"},
           {"smp-cache.0.cache=l2", "needs both cache= and topology="},
           {"smp-cache.x.cache=l2", "is not smp-cache.N.cache"},
           {"smp-cache.0.size=2", "is not smp-cache.N.cache"},
           {"accel=kvm", "unknown property 'accel=kvm'"},
           {"", "unknown property ''"}}) {
    try {
      parse_machine(machine);
      ADD_FAILURE() << "accepted -machine " << machine;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(SmpCache, KeepsEachLevelAtLeastAsWideAsTheOneBelow) {
  // machine_check_smp_cache(): L2 not below L1, L3 not below L2, with the
  // CPU model's own levels in place of "default".
  EXPECT_THROW(make("8,cores=4,threads=2", "Skylake-Server",
                    "smp-cache.0.cache=l1d,smp-cache.0.topology=die"),
               ConfigError);
  EXPECT_THROW(make("8,cores=4,threads=2", "Skylake-Server", "smp-cache.0.cache=l2,smp-cache.0.topology=socket"),
               ConfigError);  // the L3 stays per die
  EXPECT_NO_THROW(make("8,cores=4,threads=2", "Skylake-Server",
                       "smp-cache.0.cache=l2,smp-cache.0.topology=socket,smp-cache.1.cache=l3,smp-cache.1.topology=socket"));
  // AlderLake's E-module L2 (module) above an L3 per core.
  EXPECT_THROW(make(kAlderLakeSmp, "AlderLake", "smp-cache.0.cache=l3,smp-cache.0.topology=core"), ConfigError);
}

// ---- x-force-cpuid-0x1f (QEMU 10.1) -----------------------------------------

TEST(ForceLeaf1F, ReportsItWithoutDiesOrModules) {
  CpuidModel plain = make("8,cores=4,threads=2", "Skylake-Server");
  CpuidModel forced = make("8,cores=4,threads=2", "Skylake-Server,x-force-cpuid-0x1f=on");
  EXPECT_FALSE(plain.reports_leaf_1f());
  EXPECT_TRUE(forced.reports_leaf_1f());
  EXPECT_EQ(forced.max_basic_leaf(), 0x1Fu);
  // Same levels as leaf 0xB: SMT then core, then the terminator.
  for (uint32_t sub = 0; sub < 3; ++sub) EXPECT_EQ(forced.query(3, 0x1F, sub), forced.query(3, 0xB, sub)) << sub;
  EXPECT_FALSE(make("8", "Skylake-Server,x-force-cpuid-0x1f=off").reports_leaf_1f());
  EXPECT_THROW(parse_cpu("Skylake-Server,x-force-cpuid-0x1f=maybe"), ConfigError);
}

}  // namespace
}  // namespace topolab
