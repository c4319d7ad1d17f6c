// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cpuid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <gtest/gtest.h>

namespace topolab {
namespace {

CpuidModel make(const char* smp, const char* cpu) { return CpuidModel(Topology::parse(smp), parse_cpu(cpu)); }

// ---- decoders written the way guests decode (REFERENCE.md §3) -------------

unsigned ceil_log2(unsigned n) { return bit_width_for_count(n); }

uint32_t x2apic_id(const CpuidModel& m, unsigned cpu) { return m.query(cpu, 0xB, 0).edx; }

// Linux arch/x86/kernel/cpu/topology_ext.c: walk 0x1F (else 0xB) until a
// level of type 0; the last level's shift gives the package ID, the die
// level's (when reported) the die ID, the SMT level's the core ID.
struct LinuxTopo {
  uint32_t package, die, core;
  bool operator<(const LinuxTopo& o) const { return std::tie(package, die, core) < std::tie(o.package, o.die, o.core); }
};

LinuxTopo linux_topology(const CpuidModel& m, unsigned cpu) {
  uint32_t leaf = m.query(cpu, 0, 0).eax >= 0x1F && m.query(cpu, 0x1F, 0).ebx != 0 ? 0x1F : 0xB;
  uint32_t apicid = m.query(cpu, leaf, 0).edx;
  unsigned smt_shift = 0, pkg_shift = 0, die_shift = 0;
  bool has_die = false;
  for (uint32_t sub = 0;; ++sub) {
    CpuidRegs r = m.query(cpu, leaf, sub);
    uint32_t type = (r.ecx >> 8) & 0xff;
    if (type == 0 || (r.ebx & 0xffff) == 0) break;
    EXPECT_EQ(r.edx, apicid) << "APIC ID mismatch across subleaves (Linux: [Firmware Bug])";
    EXPECT_EQ(r.ecx & 0xff, sub);
    unsigned shift = r.eax & 0x1f;
    if (type == 1) smt_shift = shift;
    if (type == 5) has_die = true;
    // The die ID is what lies between the level below the die and the package.
    if (type != 5) die_shift = shift;
    pkg_shift = shift;
  }
  uint32_t die = has_die ? apicid >> die_shift : apicid >> pkg_shift;
  // AMD has no leaf 0x1F: Linux takes the die (node) from 0x8000001E ECX[7:0].
  bool topoext = m.query(cpu, 0x80000001, 0).ecx & (1u << 22);
  if (m.cpu().vendor() == Vendor::Amd && topoext) die = m.query(cpu, 0x8000001E, 0).ecx & 0xff;
  return {apicid >> pkg_shift, die, apicid >> smt_shift};
}

// Linux cacheinfo (cpuid4_cache_lookup_regs / get_cache_id): for each
// deterministic-cache subleaf, CPUs share it when apicid >> ceil_log2(n) match.
struct CacheIds {
  std::map<unsigned, uint32_t> by_level;  // level -> id (unified/data caches)
};

CacheIds linux_cache_ids(const CpuidModel& m, unsigned cpu) {
  bool amd = m.cpu().vendor() == Vendor::Amd;
  uint32_t leaf = amd ? 0x8000001D : 4;
  uint32_t apicid = x2apic_id(m, cpu);
  CacheIds ids;
  for (uint32_t sub = 0; sub < 16; ++sub) {
    CpuidRegs r = m.query(cpu, leaf, sub);
    uint32_t type = r.eax & 0x1f;
    if (type == 0) break;
    if (type == 2) continue;  // instruction caches share like data caches
    unsigned level = (r.eax >> 5) & 7;
    unsigned n = ((r.eax >> 14) & 0xfff) + 1;
    ids.by_level[level] = apicid >> ceil_log2(n);
    // hwloc computes the same groups with a mask instead of a shift.
    uint32_t hwloc_id = apicid & ~((1u << ceil_log2(n)) - 1);
    EXPECT_EQ(hwloc_id >> ceil_log2(n), ids.by_level[level]);
  }
  return ids;
}

// hwloc's legacy path (no x2APIC, max leaf < 0xB readers): leaf 1 EBX[23:16]
// and leaf 4 EAX[31:26] split the APIC ID into thread/core/package.
LinuxTopo hwloc_legacy_topology(const CpuidModel& m, unsigned cpu) {
  uint32_t apicid = m.query(cpu, 1, 0).ebx >> 24;
  unsigned max_log_proc = (m.query(cpu, 1, 0).ebx >> 16) & 0xff;
  unsigned max_cores = ((m.query(cpu, 4, 0).eax >> 26) & 0x3f) + 1;
  unsigned max_threads = max_log_proc / max_cores;
  return {apicid / max_log_proc, apicid / max_log_proc, apicid / max_threads};
}

struct Config {
  const char* smp;
  const char* cpu;
};

class LinuxDecodes : public testing::TestWithParam<Config> {};

// The heart of the model: what Linux and hwloc compute from the leaves must
// be the topology -smp asked for, CPU by CPU.
TEST_P(LinuxDecodes, TheConfiguredTopology) {
  for (bool l3 : {true, false}) {
    std::string cpu_arg = std::string(GetParam().cpu) + (l3 ? ",l3-cache=on" : ",l3-cache=off");
    CpuidModel m = make(GetParam().smp, cpu_arg.c_str());
    const Topology& t = m.topology();
    std::vector<LinuxTopo> topo;
    std::vector<CacheIds> caches;
    for (unsigned i = 0; i < t.cpus(); ++i) {
      ASSERT_EQ(x2apic_id(m, i), t.apic_id(i));
      EXPECT_EQ(m.query(i, 1, 0).ebx >> 24, t.apic_id(i) & 0xff);
      topo.push_back(linux_topology(m, i));
      caches.push_back(linux_cache_ids(m, i));
    }
    for (unsigned i = 0; i < t.cpus(); ++i) {
      for (unsigned j = 0; j < t.cpus(); ++j) {
        CpuCoords a = t.coords_of(i), b = t.coords_of(j);
        bool same_pkg = a.package == b.package, same_die = same_pkg && a.die == b.die;
        bool same_core = same_die && a.module == b.module && a.core == b.core;
        SCOPED_TRACE(testing::Message() << cpu_arg << " cpus " << i << "," << j);
        EXPECT_EQ(topo[i].package == topo[j].package, same_pkg);
        EXPECT_EQ(topo[i].die == topo[j].die && topo[i].package == topo[j].package, same_die);
        EXPECT_EQ(topo[i].core == topo[j].core, same_core);
        EXPECT_EQ(caches[i].by_level.at(1) == caches[j].by_level.at(1), same_core);
        EXPECT_EQ(caches[i].by_level.at(2) == caches[j].by_level.at(2), same_core);
        if (l3) {
          EXPECT_EQ(caches[i].by_level.at(3) == caches[j].by_level.at(3), same_die);
        }
      }
      EXPECT_EQ(caches[i].by_level.count(3), l3 ? 1u : 0u);
    }
  }
}

std::string config_name(const testing::TestParamInfo<Config>& info) {
  std::string name = std::string(info.param.cpu) + "_" + info.param.smp;
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    IssueConfigs, LinuxDecodes,
    testing::Values(Config{"1", "Skylake-Server"}, Config{"4", "Skylake-Server"},
                    Config{"16,sockets=1,cores=8,threads=2", "Skylake-Server"},
                    Config{"8,sockets=2,cores=4", "Skylake-Server"},
                    Config{"12,sockets=2,cores=3,threads=2", "Skylake-Server"},
                    Config{"32,sockets=2,dies=2,cores=4,threads=2", "Skylake-Server"},
                    Config{"16,modules=2,cores=4,threads=2", "Skylake-Server"},
                    Config{"300", "Skylake-Server,+x2apic"}, Config{"1", "EPYC"},
                    Config{"16,sockets=1,cores=8,threads=2", "EPYC"}, Config{"12,sockets=2,cores=3,threads=2", "EPYC"},
                    Config{"32,sockets=2,dies=2,cores=4,threads=2", "EPYC"}),
    config_name);

class HwlocLegacyDecodes : public testing::TestWithParam<Config> {};

TEST_P(HwlocLegacyDecodes, ThreadCoreAndPackage) {
  CpuidModel m = make(GetParam().smp, GetParam().cpu);
  const Topology& t = m.topology();
  for (unsigned i = 0; i < t.cpus(); ++i)
    for (unsigned j = 0; j < t.cpus(); ++j) {
      CpuCoords a = t.coords_of(i), b = t.coords_of(j);
      LinuxTopo x = hwloc_legacy_topology(m, i), y = hwloc_legacy_topology(m, j);
      EXPECT_EQ(x.package == y.package, a.package == b.package);
      EXPECT_EQ(x.core == y.core, a.package == b.package && a.core == b.core) << i << "," << j;
    }
}

INSTANTIATE_TEST_SUITE_P(IssueConfigs, HwlocLegacyDecodes,
                         testing::Values(Config{"4", "Skylake-Server"},
                                         Config{"16,sockets=1,cores=8,threads=2", "Skylake-Server"},
                                         Config{"8,sockets=2,cores=4", "Skylake-Server"},
                                         Config{"12,sockets=2,cores=3,threads=2", "Skylake-Server"}),
                         config_name);

// The hypervisor leaves: topolab's own signature, or KVM's with kvm=on
// (QEMU's default paravirtual features, no hints), and nothing without the
// hypervisor bit.
TEST(HypervisorLeaves, TopolabOrKvmSignature) {
  auto signature = [](const CpuidRegs& r) {
    std::string s;
    for (uint32_t w : {r.ebx, r.ecx, r.edx})
      for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(w >> (8 * i)));
    return s;
  };
  CpuidRegs own = make("2", "Skylake-Server").query(0, 0x40000000, 0);
  EXPECT_EQ(own.eax, 0x40000001u);
  EXPECT_EQ(signature(own), std::string("topolab\0\0\0\0\0", 12));
  CpuidModel kvm = make("2", "Skylake-Server,kvm=on");
  EXPECT_EQ(signature(kvm.query(0, 0x40000000, 0)), std::string("KVMKVMKVM\0\0\0", 12));
  // QEMU's kvm_default_props: CLOCKSOURCE (0), NOP_IO_DELAY (1),
  // CLOCKSOURCE2 (3), STEAL_TIME (5), PV_EOI (6), CLOCKSOURCE_STABLE_BIT
  // (24), and MSI_EXT_DEST_ID (15) unless turned off; no hints.
  EXPECT_EQ(kvm.query(0, 0x40000001, 0), (CpuidRegs{0x0100806B, 0, 0, 0}));
  EXPECT_EQ(make("2", "Skylake-Server,kvm=on,kvm-msi-ext-dest-id=off").query(0, 0x40000001, 0),
            (CpuidRegs{0x0100006B, 0, 0, 0}));
  EXPECT_EQ(make("2",
                 "Skylake-Server,kvm=on,kvm-msi-ext-dest-id=off,kvmclock=off,kvmclock-stable-bit=off,"
                 "kvm-nopiodelay=off,kvm-steal-time=off,-kvm-pv-eoi")
                .query(0, 0x40000001, 0),
            CpuidRegs{});
  EXPECT_EQ(make("2", "Skylake-Server").query(0, 0x40000001, 0), CpuidRegs{}) << "topolab's own leaves have none";
  EXPECT_EQ(make("2", "Skylake-Server,-hypervisor,kvm=on").query(0, 0x40000000, 0).ebx, 0u);
}

// Each kvm-* property sets its own bit (Documentation/virt/kvm/x86/cpuid.rst);
// kvm-hint-dedicated is KVM_HINTS_REALTIME, EDX bit 0.
TEST(HypervisorLeaves, EachKvmFeatureIsItsBit) {
  auto leaf = [](std::string_view extra) {
    return make("2", fmt::format("Skylake-Server,kvm=on,kvm-msi-ext-dest-id=off{}", extra).c_str()).query(0, 0x40000001, 0);
  };
  const uint32_t defaults = leaf("").eax;
  EXPECT_EQ(leaf(",kvm-pv-unhalt=on").eax, defaults | 1u << 7);
  EXPECT_EQ(leaf(",kvm-pv-tlb-flush=on").eax, defaults | 1u << 9);
  EXPECT_EQ(leaf(",+kvm-pv-ipi").eax, defaults | 1u << 11);
  EXPECT_EQ(leaf(",kvm-poll-control").eax, defaults | 1u << 12);
  EXPECT_EQ(leaf(",kvm-pv-sched-yield=on").eax, defaults | 1u << 13);
  EXPECT_EQ(leaf(",kvmclock=off").eax, defaults & ~(1u << 0 | 1u << 3));
  EXPECT_EQ(leaf(",kvm-hint-dedicated=on"), (CpuidRegs{defaults, 0, 0, 1}));
  EXPECT_EQ(leaf(",kvm-hint-dedicated=on,kvm-hint-dedicated=off").edx, 0u) << "the last one counts";
}

TEST(Leaf1, PowerOfTwoLogicalCountAndHtt) {
  CpuidModel m = make("12,sockets=2,cores=3,threads=2", "Skylake-Server");
  CpuidRegs r = m.query(7, 1, 0);
  EXPECT_EQ((r.ebx >> 16) & 0xff, 8u);  // 3 cores x 2 threads -> IDs 0..7
  EXPECT_EQ(r.ebx >> 24, 9u);           // CPU 7: package 1, core 0, thread 1
  EXPECT_TRUE(r.edx & (1u << 28));
  EXPECT_EQ((r.ebx >> 8) & 0xff, 8u);  // 64-byte CLFLUSH line
  CpuidRegs single = make("1", "Skylake-Server").query(0, 1, 0);
  EXPECT_FALSE(single.edx & (1u << 28));
  EXPECT_EQ((single.ebx >> 16) & 0xff, 0u);
}

TEST(Leaf1, SaturatesLogicalCountPast255) {
  CpuidModel m = make("300", "Skylake-Server,+x2apic");
  EXPECT_EQ((m.query(0, 1, 0).ebx >> 16) & 0xff, 0xffu);
  EXPECT_EQ(m.query(299, 1, 0).ebx >> 24, 299u & 0xff);
  EXPECT_EQ(m.query(299, 0xB, 1).edx, 299u);
  EXPECT_EQ(m.query(0, 0xB, 1).ebx & 0xffff, 300u);
  EXPECT_EQ(m.query(0, 4, 0).eax >> 26, 63u);  // 512 addressable cores saturate
}

TEST(Leaf1, FamilyModelSteppingEncoding) {
  EXPECT_EQ(make("1", "Skylake-Server").query(0, 1, 0).eax, 0x00050654u);  // 6/85/4
  EXPECT_EQ(make("1", "EPYC").query(0, 1, 0).eax, 0x00800f12u);            // 23/1/2
  EXPECT_EQ(make("1", "qemu64").query(0, 1, 0).eax, 0x00060fb1u);          // 15/107/1
}

TEST(Leaf4, Sixteen1s8c2tSharesL3AcrossThePackage) {
  CpuidModel m = make("16,sockets=1,cores=8,threads=2", "Skylake-Server,l3-cache=on");
  // L1d: 2 threads share, 8 addressable cores -> EAX[25:14] = 1, EAX[31:26] = 7.
  EXPECT_EQ(m.query(0, 4, 0).eax, (7u << 26) | (1u << 14) | (1u << 8) | (1u << 5) | 1u);
  EXPECT_EQ((m.query(0, 4, 3).eax >> 14) & 0xfff, 15u);
  EXPECT_EQ(m.query(0, 4, 4), CpuidRegs{});  // terminator
}

TEST(Leaf4, L3OffEndsTheListAfterL2) {
  CpuidModel m = make("16,sockets=1,cores=8,threads=2", "Skylake-Server,l3-cache=off");
  EXPECT_EQ(m.query(0, 4, 3), CpuidRegs{});
  EXPECT_EQ(m.query(0, 2, 0).ecx, 0u);
  EXPECT_EQ(m.query(0, 0x80000006, 0).edx, 0u);
}

TEST(Leaf4, GeometryMultipliesOutToTheSize) {
  for (const CpuModelDef& def : cpu_models()) {
    for (const CacheSet* set : {&def.caches, &def.amd_caches})
      for (const CacheInfo* c : {&set->l1d, &set->l1i, &set->l2, &set->l3})
        EXPECT_EQ(c->size, c->line_size * c->ways * c->partitions * c->sets) << def.name << " L" << c->level;
  }
}

TEST(Leaf4, NonPowerOfTwoSharingRoundsUp) {
  CpuidModel m = make("12,sockets=2,cores=3,threads=2", "Skylake-Server");
  EXPECT_EQ((m.query(0, 4, 3).eax >> 14) & 0xfff, 7u);   // 6 CPUs, 8 addressable IDs
  EXPECT_EQ((m.query(0, 4, 3).eax >> 26) & 0x3f, 3u);    // 3 cores, 4 addressable
}

TEST(LeafB, TwoLevelsThenATerminatorEveryReaderStopsAt) {
  CpuidModel m = make("12,sockets=2,cores=3,threads=2", "Skylake-Server");
  // CPU 6 is the first of package 1: APIC ID 8 (IDs 6 and 7 are a gap).
  EXPECT_EQ(m.query(6, 0xB, 0), (CpuidRegs{1, 2, 0x100, 8}));
  EXPECT_EQ(m.query(6, 0xB, 1), (CpuidRegs{3, 6, 0x201, 8}));
  CpuidRegs end = m.query(6, 0xB, 2);
  EXPECT_EQ(end, (CpuidRegs{0, 0, 2, 8}));  // EAX = EBX = 0, type 0, EDX = x2APIC ID
  EXPECT_EQ(m.query(6, 0xB, 200).ecx, 200u);
}

TEST(Leaf1F, ReportsDiesAndRaisesTheLevel) {
  CpuidModel m = make("32,sockets=2,dies=2,cores=4,threads=2", "Skylake-Server");
  EXPECT_EQ(m.query(0, 0, 0).eax, 0x1Fu);
  EXPECT_EQ(m.query(0, 0x1F, 0), (CpuidRegs{1, 2, 0x100, 0}));
  EXPECT_EQ(m.query(0, 0x1F, 1), (CpuidRegs{3, 8, 0x201, 0}));
  EXPECT_EQ(m.query(0, 0x1F, 2), (CpuidRegs{4, 16, 0x502, 0}));
  EXPECT_EQ(m.query(0, 0x1F, 3), (CpuidRegs{0, 0, 3, 0}));
  EXPECT_EQ(m.query(31, 0x1F, 3).edx, 31u);
  // Without dies or modules the leaf is out of range: the highest basic leaf answers.
  CpuidModel flat = make("8", "Skylake-Server");
  EXPECT_FALSE(flat.reports_leaf_1f());
  EXPECT_EQ(flat.query(0, 0x1F, 0), flat.query(0, 0xd, 0));
}

TEST(Leaf1F, ModulesSitBetweenCoreAndDie) {
  CpuidModel m = make("16,modules=2,cores=4,threads=2", "Skylake-Server");
  EXPECT_EQ(m.query(0, 0x1F, 1), (CpuidRegs{3, 8, 0x201, 0}));
  EXPECT_EQ(m.query(0, 0x1F, 2), (CpuidRegs{4, 16, 0x302, 0}));
  EXPECT_EQ((m.query(0, 0x1F, 3).ecx >> 8) & 0xff, 0u);
}

TEST(OutOfRange, AnswersTheHighestBasicLeaf) {
  CpuidModel m = make("4", "Skylake-Server,level=0xb");
  EXPECT_NE(m.query(0, 0xb, 1), CpuidRegs{});
  EXPECT_EQ(m.query(0, 0x20, 1), m.query(0, 0xb, 1));
  EXPECT_EQ(m.query(0, 0x80000009, 1), m.query(0, 0xb, 1));
}

TEST(OutOfRange, ExplicitLevelsAreKeptAsQemuKeepsThem) {
  CpuidModel m = make("32,sockets=2,dies=2,cores=4,threads=2", "Skylake-Server,level=0xd");
  EXPECT_EQ(m.max_basic_leaf(), 0xdu);
  EXPECT_FALSE(m.reports_leaf_1f());
  CpuidModel epyc = make("4", "EPYC,xlevel=0x80000008");
  EXPECT_EQ(epyc.max_extended_leaf(), 0x80000008u);
}

TEST(Vendor, LeafZeroSpellsIt) {
  CpuidRegs r = make("1", "Skylake-Server").query(0, 0, 0);
  EXPECT_EQ(r.ebx, 0x756e6547u);  // "Genu"
  EXPECT_EQ(r.edx, 0x49656e69u);  // "ineI"
  EXPECT_EQ(r.ecx, 0x6c65746eu);  // "ntel"
}

TEST(Brand, SpansThreeLeavesNulTerminated) {
  CpuidModel m = make("1", "EPYC");
  std::string s;
  for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; ++leaf) {
    CpuidRegs r = m.query(0, leaf, 0);
    for (uint32_t v : {r.eax, r.ebx, r.ecx, r.edx})
      for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  }
  EXPECT_STREQ(s.c_str(), "AMD EPYC Processor");
}

TEST(Amd, TopoextLeavesCarryPerCpuIds) {
  CpuidModel m = make("32,sockets=2,dies=2,cores=4,threads=2", "EPYC");
  CpuidRegs r = m.query(13, 0x8000001E, 0);  // package 0, die 1, core 2, thread 1
  EXPECT_EQ(r.eax, 13u);
  EXPECT_EQ(r.ebx, (1u << 8) | 6u);  // core ID 6: die 1's third core, unique in the package
  EXPECT_EQ(r.ecx, (1u << 8) | 1u);
  EXPECT_EQ(m.query(0, 4, 0), CpuidRegs{});
  EXPECT_EQ(m.query(0, 2, 0), CpuidRegs{});
  EXPECT_EQ(m.query(0, 0x80000008, 0).ecx, (4u << 12) | 15u);  // SMT 1 + core 2 + die 1 bits
}

TEST(Amd, L3Encoding80000006) {
  CpuidRegs r = make("1", "EPYC").query(0, 0x80000006, 0);
  // 8 MiB = 16 x 512 KiB, 16-way (encoded 8), 1 line per tag, 64-byte lines.
  EXPECT_EQ(r.edx, (16u << 18) | (8u << 12) | (1u << 8) | 64u);
  EXPECT_EQ(r.ecx, (512u << 16) | (6u << 12) | (1u << 8) | 64u);
}

TEST(Monitor, Leaf5FollowsTheFlag) {
  EXPECT_EQ(make("1", "Skylake-Server,+monitor").query(0, 5, 0).eax, 64u);
  EXPECT_TRUE(make("1", "Skylake-Server,+monitor").query(0, 1, 0).ecx & (1u << 3));
  EXPECT_EQ(make("1", "Skylake-Server,-monitor").query(0, 5, 0), (CpuidRegs{0, 0, 3, 0}));
  EXPECT_FALSE(make("1", "Skylake-Server,monitor=off").query(0, 1, 0).ecx & (1u << 3));
}

TEST(Enumerate, ListsEverySubleafAndItsTerminator) {
  CpuidModel m = make("16,sockets=1,cores=8,threads=2", "Skylake-Server");
  std::vector<std::pair<uint32_t, uint32_t>> keys;
  for (const auto& e : m.enumerate(0)) keys.push_back({e.leaf, e.subleaf});
  auto count = [&](uint32_t leaf) { return std::count_if(keys.begin(), keys.end(), [&](auto& k) { return k.first == leaf; }); };
  EXPECT_EQ(count(4), 5);    // L1d L1i L2 L3 + terminator
  EXPECT_EQ(count(0xB), 3);  // SMT, core, terminator
  EXPECT_EQ(count(0x80000008), 1);
  EXPECT_EQ(keys.front(), (std::pair<uint32_t, uint32_t>{0, 0}));
  EXPECT_EQ(keys.back().first, 0x80000008u);
}

// The guest reads the entries the dump lists, on every vCPU of every core
// type, and the tables are in the key order lookups search.
TEST(Table, QueryReadsTheEnumeratedEntries) {
  for (auto [smp, cpu] : std::vector<std::pair<const char*, const char*>>{
           {"32,sockets=2,dies=2,cores=4,threads=2", "EPYC"},
           {"12,sockets=2,cores=3,threads=2", "Skylake-Server"},
           {"sockets=1,p-modules=2,p-threads=2,e-modules=2,e-cores=4", "AlderLake"}}) {
    CpuidModel m = make(smp, cpu);
    for (unsigned i = 0; i < m.topology().cpus(); ++i) {
      const std::vector<CpuidModel::Entry> entries = m.enumerate(i);
      EXPECT_TRUE(std::is_sorted(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return std::pair{a.leaf, a.subleaf} < std::pair{b.leaf, b.subleaf};
      })) << smp;
      for (const CpuidModel::Entry& e : entries)
        EXPECT_EQ(m.query(i, e.leaf, e.subleaf), e.regs) << smp << " cpu " << i << " leaf " << e.leaf << "." << e.subleaf;
    }
  }
}

TEST(Table, SubleavesPastTheListFollowTheirLeafsRule) {
  CpuidModel m = make("12,sockets=2,cores=3,threads=2", "Skylake-Server");
  EXPECT_EQ(m.query(6, 4, 9), CpuidRegs{});
  EXPECT_EQ(m.query(6, 7, 1), CpuidRegs{});
  EXPECT_EQ(m.query(6, 1, 5), m.query(6, 1, 0));  // no subleaves: ECX ignored
  EXPECT_EQ(m.query(6, 0xB, 7), (CpuidRegs{0, 0, 7, 8}));
  // Leaf 0x1F in range (level=) but not reported: an invalid level on every
  // subleaf, as leaf 0xB past its levels.
  CpuidModel level = make("8", "Skylake-Server,level=0x1f");
  ASSERT_FALSE(level.reports_leaf_1f());
  EXPECT_EQ(level.query(3, 0x1F, 0), (CpuidRegs{0, 0, 0, 3}));
  EXPECT_EQ(level.query(3, 0x1F, 2), (CpuidRegs{0, 0, 2, 3}));
  // Without the hypervisor bit its leaves are in range and zero.
  EXPECT_EQ(make("2", "Skylake-Server,-hypervisor").query(0, 0x40000001, 0), CpuidRegs{});
}

// The two bits that follow guest state. The defaults are the reset state:
// what the dump shows.
TEST(Dynamic, OspkeFollowsCr4PkeWherePkuIs) {
  constexpr uint32_t kPku = 1u << 3, kOspke = 1u << 4;
  CpuidModel m = make("2", "Skylake-Server");
  ASSERT_TRUE(m.query(1, 7, 0).ecx & kPku);
  EXPECT_FALSE(m.query(1, 7, 0).ecx & kOspke);
  EXPECT_EQ(m.query(1, 7, 0, CpuidDynamic{.cr4_pke = true}).ecx, m.query(1, 7, 0).ecx | kOspke);
  EXPECT_EQ(m.query(1, 7, 1, CpuidDynamic{.cr4_pke = true}), CpuidRegs{});
  EXPECT_FALSE(make("2", "Skylake-Server,-pku").query(1, 7, 0, CpuidDynamic{.cr4_pke = true}).ecx & kOspke);
}

TEST(Dynamic, ApicBitFollowsApicBaseEnable) {
  constexpr uint32_t kApic = 1u << 9;
  CpuidModel m = make("2", "Skylake-Server");
  const CpuidRegs on = m.query(1, 1, 0), off = m.query(1, 1, 0, CpuidDynamic{.apic_enabled = false});
  ASSERT_TRUE(on.edx & kApic);
  EXPECT_EQ(off.edx, on.edx & ~kApic);
  EXPECT_EQ((CpuidRegs{off.eax, off.ebx, off.ecx, on.edx}), on);  // nothing else moves
  EXPECT_EQ(m.query(1, 0xB, 0, CpuidDynamic{.apic_enabled = false}), m.query(1, 0xB, 0));
}

TEST(FieldHelper, NamesTheSdmFieldOnOverflow) {
  uint32_t reg = 0;
  CpuidField f{4, 'a', 31, 26, "max addressable core IDs in the package"};
  try {
    put_field(reg, f, 70);
    FAIL();
  } catch (const CpuidFieldError& e) {
    EXPECT_STREQ(e.what(), "CPUID.04H:EAX[31:26] (max addressable core IDs in the package) overflow: 70");
  }
  put_field(reg, f, 63);
  EXPECT_EQ(reg, 63u << 26);
  put_field_saturated(reg, f, 1000);
  EXPECT_EQ(reg, 63u << 26);
}

TEST(CpuArg, RejectsWhatItDoesNotKnow) {
  for (auto [arg, fragment] : std::vector<std::pair<const char*, const char*>>{
           {"Pentium9", "unknown CPU model 'Pentium9'"},
           {"qemu64,+bogus", "unknown feature 'bogus'"},
           {"qemu64,l3-cache=maybe", "on or off"},
           {"qemu64,frobnicate=1", "unknown property 'frobnicate'"},
           {"qemu64,vendor=Intel", "12 characters"},
           {"qemu64,level=zz", "expects a number"},
           {"qemu64,xlevel=5", "0x80000000"},
           {"qemu64,,+x2apic", "empty property"},
           {"qemu64,+vmx,enforce", "cannot execute VMX"},
           {"host", "requires KVM or HVF"}}) {
    try {
      parse_cpu(arg);
      ADD_FAILURE() << "accepted " << arg;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
}

TEST(CpuArg, X2ApicIsRequiredPastApicId254) {
  EXPECT_THROW(make("300", "Skylake-Server"), ConfigError);
  EXPECT_NO_THROW(make("300", "Skylake-Server,+x2apic"));
  EXPECT_NO_THROW(make("300", "qemu64,x2apic=on"));
  EXPECT_TRUE(make("300", "qemu64,x2apic=on").query(0, 1, 0).ecx & (1u << 21));
}

TEST(CpuArg, VendorOverrideSwitchesCacheLeaves) {
  CpuidModel m = make("4", "qemu64,vendor=GenuineIntel");
  EXPECT_NE(m.query(0, 4, 0).eax & 0x1f, 0u);
  EXPECT_EQ(m.query(0, 0, 0).ebx, 0x756e6547u);
}

}  // namespace
}  // namespace topolab
