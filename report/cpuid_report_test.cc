// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/cpuid_report.h"

#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

namespace topolab {
namespace {

CpuidModel make(const char* smp, const char* cpu) { return CpuidModel(Topology::parse(smp), parse_cpu(cpu)); }

TEST(CpuList, CompressesRuns) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({5}), "5");
  EXPECT_EQ(format_cpu_list({}), "");
}

TEST(RawDump, IsCpuidDashRFormat) {
  std::string raw = format_cpuid_raw(make("2", "Skylake-Server"));
  std::istringstream in(raw);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "CPU 0:");
  EXPECT_EQ(second, "   0x00000000 0x00: eax=0x0000000d ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69");
  EXPECT_NE(raw.find("\nCPU 1:\n"), std::string::npos);
  EXPECT_NE(raw.find("   0x0000000b 0x01: eax=0x00000001 ebx=0x00000002 ecx=0x00000201 edx=0x00000001\n"),
            std::string::npos);
}

TEST(HwlocDir, OneFilePerPuWithMaskedEntries) {
  auto dir = std::filesystem::temp_directory_path() / ("topolab-hwloc-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  write_hwloc_cpuid_dir(make("16", "Skylake-Server"), dir);  // an earlier, larger dump
  write_hwloc_cpuid_dir(make("4,sockets=2,cores=2", "Skylake-Server"), dir);
  std::ifstream info(dir / "hwloc-cpuid-info");
  std::string line;
  std::getline(info, line);
  EXPECT_EQ(line, "Architecture: x86");
  for (int pu = 0; pu < 4; ++pu) EXPECT_TRUE(std::filesystem::exists(dir / ("pu" + std::to_string(pu))));
  EXPECT_FALSE(std::filesystem::exists(dir / "pu4"));
  std::ifstream pu3(dir / "pu3");
  std::stringstream text;
  text << pu3.rdbuf();
  EXPECT_NE(text.str().find("\n1 0 0 0 0 => d 756e6547 6c65746e 49656e69\n"), std::string::npos);
  // CPU 3: package 1 core 1 -> APIC ID 3, leaf 0xB subleaf 1 selected by EAX and ECX.
  EXPECT_NE(text.str().find("\n5 b 0 1 0 => 1 2 201 3\n"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(HwlocDir, UnwritablePathIsAClearError) {
  try {
    write_hwloc_cpuid_dir(make("1", "qemu64"), "/proc/definitely/not/here");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/definitely/not/here"), std::string::npos);
  }
}

TEST(DecodedCaches, FollowLinuxNotTheConfig) {
  auto caches = decode_caches_as_linux(make("12,sockets=2,cores=3,threads=2", "Skylake-Server"));
  ASSERT_EQ(caches.size(), 4u);
  EXPECT_EQ(caches[0].groups.size(), 6u);  // L1d per core
  EXPECT_EQ(caches[0].groups[3], (std::vector<unsigned>{6, 7}));
  EXPECT_EQ(caches[3].level, 3u);
  EXPECT_EQ(caches[3].size, 16u << 20);
  EXPECT_EQ(caches[3].groups.size(), 2u);  // L3 per package
  EXPECT_EQ(caches[3].groups[1], (std::vector<unsigned>{6, 7, 8, 9, 10, 11}));
}

TEST(Llc, L3OffMakesIntelFallBackToTheL2) {
  auto m = make("16,sockets=1,cores=8,threads=2", "Skylake-Server,l3-cache=off");
  auto llc = linux_llc(m, decode_caches_as_linux(m));
  EXPECT_EQ(llc.groups.size(), 8u);
  auto on = make("16,sockets=1,cores=8,threads=2", "Skylake-Server,l3-cache=on");
  EXPECT_EQ(linux_llc(on, decode_caches_as_linux(on)).groups.size(), 1u);
}

TEST(Llc, OldAmdFamiliesIgnoreL3Cache) {
  for (const char* cpu : {"qemu64,l3-cache=on", "qemu64,l3-cache=off"}) {
    auto m = make("8,sockets=2,cores=4", cpu);
    auto llc = linux_llc(m, decode_caches_as_linux(m));
    EXPECT_EQ(llc.groups.size(), 2u) << cpu;
  }
}

TEST(Llc, Zen1IsTheEightThreadCoreComplex) {
  // EPYC is family 0x17 model 1: Linux takes APIC ID >> 3, whatever 0x8000001D says.
  auto m = make("16,sockets=1,cores=8,threads=2", "EPYC");
  auto llc = linux_llc(m, decode_caches_as_linux(m));
  ASSERT_EQ(llc.groups.size(), 2u);
  EXPECT_EQ(llc.groups[1], (std::vector<unsigned>{8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(Llc, AmdWithoutL3FallsBackToTheDie) {
  auto m = make("32,sockets=2,dies=2,cores=4,threads=2", "EPYC,l3-cache=off");
  EXPECT_EQ(linux_llc(m, decode_caches_as_linux(m)).groups.size(), 4u);
}

TEST(DecodedCaches, NoneWhenTheLeafIsOutOfRange) {
  EXPECT_TRUE(decode_caches_as_linux(make("4", "Skylake-Server,level=1")).empty());
  EXPECT_NE(format_topology_table(make("4", "Skylake-Server,level=1")).find("beyond the maximum"), std::string::npos);
}

TEST(Table, ShowsTreeCachesAndTheLlcVerdict) {
  std::string table = format_topology_table(make("16,sockets=1,cores=8,threads=2", "Skylake-Server"));
  EXPECT_NE(table.find("1 socket x 8 cores x 2 threads = 16 CPUs"), std::string::npos) << table;
  EXPECT_NE(table.find("core 7: cpu 14 (APIC 0xe), cpu 15 (APIC 0xf)\n"), std::string::npos) << table;
  EXPECT_NE(table.find("L3 #0: CPUs 0-15"), std::string::npos) << table;
  EXPECT_NE(table.find("L1d #7: CPUs 14-15"), std::string::npos) << table;
  EXPECT_NE(table.find("1 group of up to 16 CPUs"), std::string::npos) << table;
}

TEST(Table, LargeMachinesStayReadable) {
  std::string table = format_topology_table(make("4096,sockets=4,cores=512,threads=2", "Skylake-Server,+x2apic"));
  EXPECT_LT(std::count(table.begin(), table.end(), '\n'), 40);
  EXPECT_NE(table.find("needs x2APIC"), std::string::npos);
}

}  // namespace
}  // namespace topolab
