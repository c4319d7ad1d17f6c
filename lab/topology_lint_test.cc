// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/topology_lint.h"
#include "lab/topology_lint_test_util.h"

#include <algorithm>
#include <functional>
#include <random>

#include <gtest/gtest.h>

namespace topolab {
namespace {

RawCpuid raw_of(const char* smp, const char* cpu) {
  return raw_cpuid_of(CpuidModel(Topology::parse(smp), parse_cpu(cpu)), "test");
}

std::vector<std::string> ids_of(const RawCpuid& raw) {
  std::vector<std::string> ids;
  for (const auto& f : lint_topology(decode_for_lint(raw, {}))) ids.push_back(f.id);
  return ids;
}

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A foreign VMM's leaves: topolab's, perturbed on every CPU.
RawCpuid perturbed(const char* smp, const char* cpu, const std::function<void(unsigned, RawCpuLeaves&)>& edit) {
  RawCpuid raw = raw_of(smp, cpu);
  raw.topology.reset();
  for (unsigned i = 0; i < raw.cpus.size(); ++i) edit(i, raw.cpus[i]);
  return raw;
}

void set_field(uint32_t& reg, unsigned hi, unsigned lo, uint32_t value) {
  uint32_t mask = (hi - lo == 31 ? 0xffffffffu : ((1u << (hi - lo + 1)) - 1)) << lo;
  reg = (reg & ~mask) | ((value << lo) & mask);
}

TEST(TopologyLint, TopolabsIntelMachinesAreClean) {
  for (const char* smp : {"1", "4", "16,sockets=1,cores=8,threads=2", "8,sockets=2,cores=4", "12,sockets=2,cores=3,threads=2",
                          "32,sockets=2,dies=2,cores=4,threads=2"})
    for (const char* cpu : {"Skylake-Server,l3-cache=on", "Skylake-Server,l3-cache=off"})
      EXPECT_EQ(ids_of(raw_of(smp, cpu)), std::vector<std::string>{}) << smp << " " << cpu;
}

TEST(TopologyLint, L3AcrossPackages) {
  // 2 sockets x 4 cores with an L3 said to be shared by 16 APIC IDs.
  auto raw = perturbed("8,sockets=2,cores=4", "Skylake-Server", [](unsigned, RawCpuLeaves& l) {
    set_field(l.leaves[{4, 3}].eax, 25, 14, 15);
  });
  auto ids = ids_of(raw);
  EXPECT_TRUE(has(ids, "l3-across-packages"));
  EXPECT_TRUE(has(ids, "llc-wider-than-package"));
  EXPECT_TRUE(has(ids, "consumers-disagree"));  // hwloc keeps the L3 inside each package
}

TEST(TopologyLint, SmtSiblingsWithPrivateL2) {
  auto raw = perturbed("4,cores=2,threads=2", "Skylake-Server", [](unsigned, RawCpuLeaves& l) {
    set_field(l.leaves[{4, 2}].eax, 25, 14, 0);
  });
  auto findings = lint_topology(decode_for_lint(raw, {Consumer::Linux6}));
  ASSERT_FALSE(findings.empty());
  auto f = std::find_if(findings.begin(), findings.end(), [](const Finding& x) { return x.id == "smt-not-sharing-l1-l2"; });
  ASSERT_NE(f, findings.end());
  EXPECT_NE(f->symptom.find("SMT domain not a subset of the CLS domain"), std::string::npos);
}

TEST(TopologyLint, X2apicIdInLeafBLeftZero) {
  // propolis #939: leaf 0xB EDX not filled in.
  auto raw = perturbed("4,cores=4", "Skylake-Server", [](unsigned, RawCpuLeaves& l) {
    for (uint32_t sub = 0; sub < 3; ++sub) l.leaves[{0xB, sub}].edx = 0;
  });
  EXPECT_TRUE(has(ids_of(raw), "x2apic-id-mismatch"));
}

TEST(TopologyLint, ConsumersStopOnDifferentRules) {
  auto raw = perturbed("4,cores=4", "Skylake-Server", [](unsigned, RawCpuLeaves& l) { l.leaves[{0xB, 2}] = {4, 0, 0x202, 0}; });
  EXPECT_TRUE(has(ids_of(raw), "ext-topology-stop-rules"));
}

TEST(TopologyLint, EmptyLeaf1FBelowTheMaximumLeaf) {
  EXPECT_TRUE(has(ids_of(raw_of("4", "Skylake-Server,level=0x1f")), "empty-leaf-1f"));
}

TEST(TopologyLint, ManyCpusWithoutX2apic) {
  auto raw = perturbed("300", "Skylake-Server,+x2apic", [](unsigned, RawCpuLeaves& l) { l.leaves[{1, 0}].ecx &= ~(1u << 21); });
  EXPECT_TRUE(has(ids_of(raw), "x2apic-needed"));
}

TEST(TopologyLint, DenseApicIdsWithNonPowerOfTwoCounts) {
  // 2 sockets x 3 cores numbered 0-5 with no gap: socket 1 starts at 3, but
  // the 0xB shift (2 bits) says packages start at multiples of 4.
  auto raw = perturbed("6,sockets=2,cores=3", "Skylake-Server", [](unsigned cpu, RawCpuLeaves& l) {
    for (uint32_t sub = 0; sub < 3; ++sub) l.leaves[{0xB, sub}].edx = cpu;
    set_field(l.leaves[{1, 0}].ebx, 31, 24, cpu);
  });
  EXPECT_TRUE(has(ids_of(raw), "apic-id-layout"));
}

TEST(TopologyLint, Leaf1AndLeaf4CountsAgainstTheLayout) {
  auto raw = perturbed("16,sockets=1,cores=8,threads=2", "Skylake-Server", [](unsigned, RawCpuLeaves& l) {
    set_field(l.leaves[{1, 0}].ebx, 23, 16, 4);  // says 4 logical processors: 2 bits, the layout has 4
    set_field(l.leaves[{4, 0}].eax, 31, 26, 1);  // says 2 cores: 1 bit, the layout has 3
  });
  auto ids = ids_of(raw);
  EXPECT_TRUE(has(ids, "leaf1-logical-count"));
  EXPECT_TRUE(has(ids, "leaf4-counts"));
}

TEST(TopologyLint, AmdWithoutTopoext) {
  auto ids = ids_of(raw_of("4,cores=2,threads=2", "EPYC,-topoext"));
  EXPECT_TRUE(has(ids, "amd-without-topoext"));
  EXPECT_TRUE(has(ids, "differs-from-intended"));
}

TEST(TopologyLint, AmdWithTopoextButZero8000001E) {
  auto raw = perturbed("4,cores=2,threads=2", "EPYC", [](unsigned, RawCpuLeaves& l) { l.leaves[{0x8000001E, 0}] = {}; });
  EXPECT_TRUE(has(ids_of(raw), "amd-topoext-bad-8000001e"));
}

TEST(TopologyLint, Amd8000001ECoreIdsWrapPastCore255) {
  EXPECT_TRUE(has(ids_of(raw_of("300", "EPYC,+x2apic")), "amd-8000001e-wraps"));
  EXPECT_FALSE(has(ids_of(raw_of("255", "EPYC,+x2apic")), "amd-8000001e-wraps"));
}

TEST(TopologyLint, HybridWithoutLeaf1A) {
  auto raw = perturbed("4", "Skylake-Server", [](unsigned, RawCpuLeaves& l) { l.leaves[{7, 0}].edx |= 1u << 15; });
  EXPECT_TRUE(has(ids_of(raw), "hybrid-without-1a"));
}

TEST(TopologyLint, EveryFindingNamesLeavesConsumersSymptomAndBugs) {
  auto raw = perturbed("8,sockets=2,cores=4", "Skylake-Server", [](unsigned, RawCpuLeaves& l) {
    set_field(l.leaves[{4, 3}].eax, 25, 14, 15);
    l.leaves[{7, 0}].edx |= 1u << 15;
  });
  auto findings = lint_topology(decode_for_lint(raw, {}));
  ASSERT_GE(findings.size(), 3u);
  expect_complete(findings);
}

}  // namespace
}  // namespace topolab

namespace topolab {
namespace {

// Any leaves at all, as a hostile or broken dump may hold: every decoder
// and check must run to the end (no division by zero, no shift past the
// width, no endless walk). Seeded, so a failure repeats.
TEST(TopologyLint, SurvivesArbitraryLeaves) {
  std::mt19937 random(13);  // issue 13
  auto next = [&] { return static_cast<uint32_t>(random()); };
  const uint32_t leaves[] = {0x0, 0x1, 0x4, 0x7, 0xB, 0x1A, 0x1F, 0x80000000, 0x80000001, 0x80000005, 0x80000006,
                             0x80000008, 0x8000001D, 0x8000001E};
  for (int round = 0; round < 300; ++round) {
    RawCpuid raw;
    raw.cpus.resize(1 + next() % 9);
    for (auto& cpu : raw.cpus)
      for (uint32_t leaf : leaves)
        for (uint32_t sub = 0; sub < (CpuidModel::has_subleaves(leaf) ? 5u : 1u); ++sub) {
          CpuidRegs r{next(), next(), next(), next()};
          if (next() % 4 == 0) r = {};  // terminators, sometimes
          if (leaf == 0 && next() % 2) r.eax = 0x1F;
          if (leaf == 0x80000000 && next() % 2) r.eax = 0x8000001E;
          cpu.leaves[{leaf, sub}] = r;
        }
    EXPECT_NO_THROW(lint_topology(decode_for_lint(raw, {}))) << round;
  }
}

}  // namespace
}  // namespace topolab
