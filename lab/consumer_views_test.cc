// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/consumer_views.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lab/cpuid_dump.h"

namespace topolab {
namespace {

RawCpuid raw_of(const char* smp, const char* cpu) {
  return raw_cpuid_of(CpuidModel(Topology::parse(smp), parse_cpu(cpu)), "test");
}

CpuGroups groups(std::initializer_list<std::vector<unsigned>> g) { return CpuGroups(g); }

// ---- the dump parser ---------------------------------------------------------

TEST(CpuidDump, ParsesWhatFormatCpuidRawWrites) {
  RawCpuid model = raw_of("4,cores=2,threads=2", "Skylake-Server");
  std::string text;
  for (size_t cpu = 0; cpu < model.cpus.size(); ++cpu) {
    text += fmt::format("CPU {}:\n", cpu);
    for (const auto& [key, r] : model.cpus[cpu].leaves)
      text += fmt::format("   0x{:08x} 0x{:02x}: eax=0x{:08x} ebx=0x{:08x} ecx=0x{:08x} edx=0x{:08x}\n", key.first, key.second,
                          r.eax, r.ebx, r.ecx, r.edx);
  }
  text += "PASS: 4 of 4 CPUs dumped\n";  // the guest's closing line is skipped
  RawCpuid parsed = parse_cpuid_raw_dump(text, "dump.txt");
  ASSERT_EQ(parsed.cpus.size(), 4u);
  for (size_t cpu = 0; cpu < 4; ++cpu) EXPECT_EQ(parsed.cpus[cpu].leaves, model.cpus[cpu].leaves) << cpu;
  EXPECT_FALSE(parsed.topology);
}

TEST(CpuidDump, OneCpuHeaderWithoutNumber) {
  RawCpuid r = parse_cpuid_raw_dump("CPU:\n   0x00000000 0x00: eax=0x0000000d ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n", "x");
  ASSERT_EQ(r.cpus.size(), 1u);
  EXPECT_EQ(r.cpus[0].max_basic_leaf(), 0xDu);
}

TEST(CpuidDump, BadDumpsNameTheLine) {
  EXPECT_THROW(parse_cpuid_raw_dump("", "empty"), DumpError);
  EXPECT_THROW(parse_cpuid_raw_dump("hello\n", "words"), DumpError);
  try {
    parse_cpuid_raw_dump("CPU 0:\n   0x00000000 0x00: eax=0xZZ\n", "bad.txt");
    FAIL();
  } catch (const DumpError& e) {
    EXPECT_STREQ(e.what(), "bad.txt:2: not a `cpuid -r` leaf line: 0x00000000 0x00: eax=0xZZ");
  }
  EXPECT_THROW(parse_cpuid_raw_dump("CPU 1:\n   0x00000000 0x00: eax=0x0000000d ebx=0x0 ecx=0x0 edx=0x0\n", "gap"), DumpError);
  EXPECT_THROW(parse_cpuid_raw_dump("   0x00000000 0x00: eax=0x00000001 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n", "x"),
               DumpError);
}

// ---- the decoders --------------------------------------------------------------

TEST(ConsumerViews, EveryConsumerSeesTheSparseTopology) {
  // 2 sockets x 3 cores x 2 threads: APIC IDs 0-5 and 8-13 (gaps at 6, 7).
  RawCpuid raw = raw_of("12,sockets=2,cores=3,threads=2", "Skylake-Server");
  for (Consumer c : kConsumers) {
    ConsumerView v = decode_as(c, raw);
    EXPECT_EQ(v.groups(Level::Package), groups({{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}})) << consumer_name(c);
    EXPECT_EQ(v.groups(Level::Core).size(), 6u) << consumer_name(c);
    EXPECT_EQ(v.threads_per_core(), 2u) << consumer_name(c);
    EXPECT_TRUE(v.messages.empty()) << consumer_name(c) << ": " << v.messages.front();
  }
}

TEST(ConsumerViews, OnlyLeaf1FReadersSeeDies) {
  RawCpuid raw = raw_of("16,sockets=2,dies=2,cores=2,threads=2", "Skylake-Server");
  EXPECT_EQ(decode_as(Consumer::Linux6, raw).groups(Level::Die).size(), 4u);
  EXPECT_EQ(decode_as(Consumer::Edk2, raw).groups(Level::Die).size(), 4u);
  ConsumerView old = decode_as(Consumer::Linux4, raw);  // 0x1F came in Linux 5.2
  EXPECT_EQ(old.topology_source, "leaf 0xB");
  EXPECT_EQ(old.groups(Level::Die).size(), 2u);
  EXPECT_EQ(old.groups(Level::Package).size(), 2u);
}

TEST(ConsumerViews, Linux6MatchesTheProjectsLinuxDecoder) {
  // report/cpuid_report.cc decodes caches and the LLC from the model; the
  // consumer view must agree from raw leaves alone.
  for (const char* cpu : {"Skylake-Server", "EPYC", "qemu64"})
    for (const char* smp : {"1", "4", "16,sockets=1,cores=8,threads=2", "8,sockets=2,cores=4"}) {
      RawCpuid raw = raw_of(smp, cpu);
      ConsumerView v = decode_as(Consumer::Linux6, raw);
      CpuidModel m(Topology::parse(smp), parse_cpu(cpu));
      EXPECT_EQ(v.groups(Level::Package).size(), m.topology().counts().sockets) << smp << " " << cpu;
      EXPECT_EQ(v.apic_ids[raw.cpus.size() - 1], m.topology().apic_id(static_cast<unsigned>(raw.cpus.size() - 1)));
    }
}

TEST(ConsumerViews, HwlocDividesAmdCacheIdsWhereLinuxShifts) {
  // An AMD L2 said to be shared by 3 APIC IDs: Linux's range rule and
  // hwloc's division agree (0-2, 3-5), but Intel's shift rule would take 4.
  RawCpuid raw = raw_of("6,cores=6", "EPYC");
  for (auto& cpu : raw.cpus) {
    CpuidRegs& l2 = cpu.leaves[{0x8000001D, 2}];
    l2.eax = (l2.eax & ~(0xfffu << 14)) | (2u << 14);
  }
  EXPECT_EQ(decode_as(Consumer::Linux6, raw).cache(2, 'u')->groups, groups({{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(decode_as(Consumer::Hwloc, raw).cache(2, 'u')->groups, groups({{0, 1, 2}, {3, 4, 5}}));
}

TEST(ConsumerViews, StopRulesDifferOnAHalfTerminator) {
  // Subleaf 2 of 0xB with a zero count but a core type: Linux 6.x stops,
  // the type-0 readers take it as a third level.
  RawCpuid raw = raw_of("4,cores=4", "Skylake-Server");
  raw.cpus[0].leaves[{0xB, 2}] = {4, 0, 0x202, 0};
  EXPECT_EQ(read_ext_topology(raw.cpus[0], 0xB, ExtStopRule::CountOrTypeZero).size(), 2u);
  EXPECT_EQ(read_ext_topology(raw.cpus[0], 0xB, ExtStopRule::TypeZero).size(), 3u);
  EXPECT_EQ(read_ext_topology(raw.cpus[0], 0xB, ExtStopRule::EaxEbxZero).size(), 3u);
}

TEST(ConsumerViews, Edk2AssertsWhenLeaf1FDoesNotStartWithSmt) {
  RawCpuid raw = raw_of("8,sockets=1,dies=2,cores=4", "Skylake-Server");
  for (auto& cpu : raw.cpus) cpu.leaves[{0x1F, 0}].ecx = (cpu.leaves[{0x1F, 0}].ecx & ~0xff00u) | (2u << 8);
  ConsumerView v = decode_as(Consumer::Edk2, raw);
  ASSERT_FALSE(v.messages.empty());
  EXPECT_NE(v.messages.front().find("ASSERT"), std::string::npos);
}

TEST(ConsumerViews, AmdWithoutTopoextLosesSmtInLinux) {
  RawCpuid raw = raw_of("4,cores=2,threads=2", "EPYC,-topoext");
  EXPECT_EQ(decode_as(Consumer::Linux6, raw).threads_per_core(), 1u);
  EXPECT_EQ(decode_as(Consumer::Linux4, raw).threads_per_core(), 1u);
  EXPECT_EQ(decode_as(Consumer::Edk2, raw).threads_per_core(), 2u);  // edk2 reads 0xB on any vendor
}

}  // namespace
}  // namespace topolab
