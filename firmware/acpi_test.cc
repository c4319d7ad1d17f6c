// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/acpi.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/memory_map.h"

namespace topolab {
namespace {

constexpr uint64_t kRamSize = 2u << 20;

// What a guest learns from the MADT about one CPU.
struct MadtCpu {
  uint8_t type;
  uint32_t uid, apic_id;
  bool enabled;
  bool operator==(const MadtCpu&) const = default;
};

uint8_t sum(const GuestRam& ram, uint64_t addr, uint32_t len) {
  uint8_t s = 0;
  for (uint8_t b : ram.bytes(addr, len)) s += b;
  return s;
}
std::string text(const GuestRam& ram, uint64_t addr, size_t len) {
  auto b = ram.bytes(addr, len);
  return std::string(b.begin(), b.end());
}

// The guest's side: everything below uses only what is in RAM.
class GuestView {
 public:
  explicit GuestView(const GuestRam& ram) : ram_(ram) {}

  // §5.2.5.1: scan the BIOS area on 16-byte boundaries for a signature
  // whose 20-byte checksum is valid.
  std::optional<uint32_t> find_rsdp() const {
    for (uint32_t a = 0xe0000; a < 0x100000; a += 16)
      if (text(ram_, a, 8) == "RSD PTR " && sum(ram_, a, 20) == 0) return a;
    return std::nullopt;
  }
  // A table with a valid checksum, or a test failure.
  uint32_t checked_table(uint32_t addr, const char* signature) const {
    EXPECT_EQ(text(ram_, addr, 4), signature);
    uint32_t len = ram_.read<uint32_t>(addr + 4);
    EXPECT_GE(len, 36u);
    EXPECT_EQ(sum(ram_, addr, len), 0) << signature << " checksum";
    return len;
  }
  // RSDT entries by signature.
  std::optional<uint32_t> find_table(const char* signature) const {
    auto rsdp = find_rsdp();
    if (!rsdp) return std::nullopt;
    uint32_t rsdt = ram_.read<uint32_t>(*rsdp + 16);
    uint32_t len = checked_table(rsdt, "RSDT");
    for (uint32_t off = 36; off + 4 <= len; off += 4) {
      uint32_t t = ram_.read<uint32_t>(rsdt + off);
      if (text(ram_, t, 4) == signature) return t;
    }
    return std::nullopt;
  }
  std::vector<MadtCpu> madt_cpus() const {
    std::vector<MadtCpu> cpus;
    auto madt = find_table("APIC");
    if (!madt) {
      ADD_FAILURE() << "no MADT";
      return cpus;
    }
    uint32_t len = checked_table(*madt, "APIC");
    for (uint32_t off = 44; off + 2 <= len;) {
      uint8_t type = ram_.read<uint8_t>(*madt + off), elen = ram_.read<uint8_t>(*madt + off + 1);
      uint32_t e = *madt + off;
      if (type == 0 && elen == 8)
        cpus.push_back({0, ram_.read<uint8_t>(e + 2), ram_.read<uint8_t>(e + 3), bool(ram_.read<uint32_t>(e + 4) & 1)});
      else if (type == 9 && elen == 16)
        cpus.push_back({9, ram_.read<uint32_t>(e + 12), ram_.read<uint32_t>(e + 4), bool(ram_.read<uint32_t>(e + 8) & 1)});
      else if ((type == 1 && elen == 12) || (type == 2 && elen == 10))
        ;  // the I/O APIC and its overrides: MadtListsTheIoApicAndQemusSourceOverrides
      else
        ADD_FAILURE() << "unexpected MADT entry type " << int(type) << " length " << int(elen);
      if (elen == 0) break;
      off += elen;
    }
    return cpus;
  }

 private:
  const GuestRam& ram_;
};

std::vector<MadtCpu> expected_cpus(const Topology& topo) {
  std::vector<MadtCpu> out;
  for (unsigned i = 0; i < topo.max_cpus(); ++i) {
    uint32_t id = topo.apic_id(i);
    out.push_back({uint8_t(id <= 254 ? 0 : 9), i, id, i < topo.cpus()});
  }
  return out;
}

std::vector<MadtCpu> build_and_read(const std::string& smp) {
  GuestRam ram(kRamSize);
  Topology topo = Topology::parse(smp);
  AcpiTables t = build_acpi_tables(ram, topo);
  EXPECT_GE(t.rsdp, 0xe0000u);
  EXPECT_LE(t.end, 0x100000u);
  GuestView guest(ram);
  EXPECT_EQ(guest.find_rsdp(), t.rsdp);
  return guest.madt_cpus();
}

TEST(Acpi, RsdpIsRevisionZeroAndPointsAtTheRsdt) {
  GuestRam ram(kRamSize);
  AcpiTables t = build_acpi_tables(ram, Topology::parse("1"));
  EXPECT_EQ(t.rsdp % 16, 0u);
  EXPECT_EQ(ram.read<uint8_t>(t.rsdp + 15), 0);  // revision
  EXPECT_EQ(ram.read<uint32_t>(t.rsdp + 16), t.rsdt);
  GuestView guest(ram);
  EXPECT_EQ(guest.checked_table(t.rsdt, "RSDT"), 36u + 8u);
  EXPECT_EQ(guest.find_table("FACP"), t.fadt);
  EXPECT_EQ(guest.find_table("APIC"), t.madt);
}

TEST(Acpi, FadtDescribesPiix4PowerManagementTheFacsAndTheDsdt) {
  GuestRam ram(kRamSize);
  AcpiTables t = build_acpi_tables(ram, Topology::parse("1"));
  GuestView guest(ram);
  EXPECT_EQ(guest.checked_table(t.fadt, "FACP"), 276u);
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 8), 6);             // revision
  EXPECT_EQ(ram.read<uint32_t>(t.fadt + 36), t.facs);       // FIRMWARE_CTRL
  EXPECT_EQ(ram.read<uint64_t>(t.fadt + 132), 0u);          // X_FIRMWARE_CTRL: one of the two
  EXPECT_EQ(ram.read<uint16_t>(t.fadt + 46), 9u);           // SCI_INT
  EXPECT_EQ(ram.read<uint32_t>(t.fadt + 48), 0u);           // SMI_CMD: always in ACPI mode
  EXPECT_EQ(ram.read<uint32_t>(t.fadt + 56), 0x600u);       // PM1a_EVT_BLK
  EXPECT_EQ(ram.read<uint32_t>(t.fadt + 64), 0x604u);       // PM1a_CNT_BLK
  EXPECT_EQ(ram.read<uint32_t>(t.fadt + 76), 0x608u);       // PM_TMR_BLK
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 88), 4);             // PM1_EVT_LEN
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 89), 2);             // PM1_CNT_LEN
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 91), 4);             // PM_TMR_LEN
  const uint32_t flags = ram.read<uint32_t>(t.fadt + 112);
  EXPECT_FALSE(flags & (1u << 20));  // not HW_REDUCED_ACPI
  EXPECT_FALSE(flags & (1u << 8));   // TMR_VAL_EXT clear: a 24-bit PM timer
  EXPECT_TRUE(flags & (1u << 10));   // RESET_REG_SUP
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 116), 1);            // RESET_REG: system I/O
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 117), 8);
  EXPECT_EQ(ram.read<uint64_t>(t.fadt + 120), 0xcf9u);
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 128), 6);            // RESET_VALUE
  EXPECT_EQ(ram.read<uint64_t>(t.fadt + 208 + 4), 0x608u);  // X_PM_TMR_BLK
  EXPECT_EQ(ram.read<uint8_t>(t.fadt + 208 + 1), 32);
  uint32_t dsdt = ram.read<uint32_t>(t.fadt + 40);
  EXPECT_EQ(dsdt, t.dsdt);
  EXPECT_EQ(ram.read<uint64_t>(t.fadt + 140), 0u);  // X_DSDT unused
  // Name (\_S5, Package (4) {0, 0, 0, 0}).
  ASSERT_EQ(guest.checked_table(dsdt, "DSDT"), 36u + 13u);
  EXPECT_EQ(text(ram, dsdt + 36, 6), std::string("\x08\\_S5_", 6));
}

TEST(Acpi, FacsIsSixtyFourAlignedBytesOfVersionTwo) {
  GuestRam ram(kRamSize);
  AcpiTables t = build_acpi_tables(ram, Topology::parse("4"));
  EXPECT_EQ(t.facs % 64, 0u);
  EXPECT_EQ(text(ram, t.facs, 4), "FACS");
  EXPECT_EQ(ram.read<uint32_t>(t.facs + 4), 64u);
  EXPECT_EQ(ram.read<uint32_t>(t.facs + 12), 0u);  // firmware waking vector
  EXPECT_EQ(ram.read<uint8_t>(t.facs + 32), 2);
  EXPECT_EQ(t.end, t.facs + 64);
}

TEST(Acpi, MadtListsTheIoApicAndQemusSourceOverrides) {
  GuestRam ram(kRamSize);
  AcpiTables t = build_acpi_tables(ram, Topology::parse("2"));
  GuestView guest(ram);
  const uint32_t len = guest.checked_table(t.madt, "APIC");
  uint32_t at = t.madt + 44 + 2 * 8;  // after the two local APICs
  EXPECT_EQ(ram.read<uint8_t>(at), 1);
  EXPECT_EQ(ram.read<uint8_t>(at + 1), 12);
  EXPECT_EQ(ram.read<uint8_t>(at + 2), 0);  // I/O APIC ID
  EXPECT_EQ(ram.read<uint32_t>(at + 4), 0xfec00000u);
  EXPECT_EQ(ram.read<uint32_t>(at + 8), 0u);  // GSI base
  at += 12;
  struct Override {
    uint8_t irq;
    uint32_t gsi;
    uint16_t flags;
    bool operator==(const Override&) const = default;
  };
  std::vector<Override> seen;
  for (; at < t.madt + len; at += 10) {
    EXPECT_EQ(ram.read<uint8_t>(at), 2);
    EXPECT_EQ(ram.read<uint8_t>(at + 1), 10);
    EXPECT_EQ(ram.read<uint8_t>(at + 2), 0);  // ISA
    seen.push_back({ram.read<uint8_t>(at + 3), ram.read<uint32_t>(at + 4), ram.read<uint16_t>(at + 8)});
  }
  EXPECT_EQ(seen, (std::vector<Override>{{0, 2, 0}, {5, 5, 0xd}, {9, 9, 0xd}, {10, 10, 0xd}, {11, 11, 0xd}}));
}

TEST(Acpi, MadtHeaderNamesTheLocalApicAndPcatCompat) {
  GuestRam ram(kRamSize);
  AcpiTables t = build_acpi_tables(ram, Topology::parse("1"));
  EXPECT_EQ(ram.read<uint32_t>(t.madt + 36), 0xfee00000u);
  EXPECT_EQ(ram.read<uint32_t>(t.madt + 40), 1u);
}

TEST(Acpi, OneCpu) {
  EXPECT_EQ(build_and_read("1"), (std::vector<MadtCpu>{{0, 0, 0, true}}));
}

TEST(Acpi, SixteenAsOneSocketEightCoresTwoThreads) {
  auto cpus = build_and_read("16,sockets=1,cores=8,threads=2");
  ASSERT_EQ(cpus.size(), 16u);
  for (uint32_t i = 0; i < 16; ++i) EXPECT_EQ(cpus[i], (MadtCpu{0, i, i, true}));
}

TEST(Acpi, TwelveSparseIdsLeaveTheGaps) {
  auto cpus = build_and_read("12,sockets=2,cores=3,threads=2");
  std::vector<uint32_t> ids;
  for (const MadtCpu& c : cpus) ids.push_back(c.apic_id);
  EXPECT_EQ(ids, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13}));
  for (uint32_t i = 0; i < cpus.size(); ++i) EXPECT_EQ(cpus[i].uid, i);
}

TEST(Acpi, ThreeHundredUseX2ApicEntriesFrom255) {
  Topology topo = Topology::parse("300");
  auto cpus = build_and_read("300");
  EXPECT_EQ(cpus, expected_cpus(topo));
  ASSERT_EQ(cpus.size(), 300u);
  EXPECT_EQ(cpus[254], (MadtCpu{0, 254, 254, true}));
  EXPECT_EQ(cpus[255], (MadtCpu{9, 255, 255, true}));
  EXPECT_EQ(cpus[299], (MadtCpu{9, 299, 299, true}));
}

TEST(Acpi, FourThousandNinetySixFitTheBiosArea) {
  for (const char* smp : {"4096", "4096,sockets=16,cores=128,threads=2"}) {
    Topology topo = Topology::parse(smp);
    EXPECT_EQ(build_and_read(smp), expected_cpus(topo)) << smp;
  }
}

TEST(Acpi, HotPluggableCpusAreListedDisabled) {
  auto cpus = build_and_read("2,maxcpus=4");
  EXPECT_EQ(cpus, (std::vector<MadtCpu>{{0, 0, 0, true}, {0, 1, 1, true}, {0, 2, 2, false}, {0, 3, 3, false}}));
}

TEST(Acpi, TablesThatDoNotFitAreAOneLineError) {
  GuestRam ram(kRamSize);
  try {
    build_acpi_tables(ram, Topology::parse("300"), {}, AcpiWindow{0xe0000, 0x800});
    FAIL() << "accepted";
  } catch (const AcpiError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    EXPECT_NE(msg.find("300 CPUs"), std::string::npos) << msg;
  }
  GuestRam small(0x80000);
  EXPECT_THROW(build_acpi_tables(small, Topology::parse("1")), AcpiError);
}

TEST(Acpi, WritesNothingOutsideItsTables) {
  GuestRam ram(kRamSize);
  std::memset(ram.data(), 0xaa, ram.top());
  AcpiTables t = build_acpi_tables(ram, Topology::parse("4"));
  EXPECT_EQ(ram.read<uint8_t>(t.rsdp - 1), 0xaa);
  EXPECT_EQ(ram.read<uint8_t>(t.end), 0xaa);
}

// One SRAT memory entry as the guest reads it.
struct SratMemoryEntry {
  uint32_t node;
  uint64_t base, length;
  uint32_t flags;
  bool operator==(const SratMemoryEntry&) const = default;
};
std::ostream& operator<<(std::ostream& os, const SratMemoryEntry& e) {
  return os << "{" << e.node << ", " << std::hex << e.base << ", " << e.length << ", " << e.flags << std::dec << "}";
}

struct SratView {
  std::vector<std::pair<uint32_t, uint32_t>> cpus;  // (APIC ID, node), every entry enabled
  std::vector<SratMemoryEntry> memory;
};

SratView read_srat(const GuestRam& ram) {
  SratView out;
  GuestView guest(ram);
  const std::optional<uint32_t> srat = guest.find_table("SRAT");
  if (!srat) {
    ADD_FAILURE() << "no SRAT";
    return out;
  }
  const uint32_t len = guest.checked_table(*srat, "SRAT");
  EXPECT_EQ(ram.read<uint8_t>(*srat + 8), 1);  // revision
  EXPECT_EQ(ram.read<uint32_t>(*srat + 36), 1u);
  for (uint32_t off = 48; off + 2 <= len;) {
    const uint32_t e = *srat + off;
    const uint8_t type = ram.read<uint8_t>(e), elen = ram.read<uint8_t>(e + 1);
    if (type == 0 && elen == 16) {
      EXPECT_EQ(ram.read<uint32_t>(e + 4), 1u);
      out.cpus.emplace_back(ram.read<uint8_t>(e + 3), ram.read<uint8_t>(e + 2));
    } else if (type == 2 && elen == 24) {
      EXPECT_EQ(ram.read<uint32_t>(e + 12), 1u);
      out.cpus.emplace_back(ram.read<uint32_t>(e + 8), ram.read<uint32_t>(e + 4));
    } else if (type == 1 && elen == 40) {
      out.memory.push_back({ram.read<uint32_t>(e + 2), ram.read<uint64_t>(e + 8), ram.read<uint64_t>(e + 16),
                            ram.read<uint32_t>(e + 28)});
    } else {
      ADD_FAILURE() << "unexpected SRAT entry type " << int(type) << " length " << int(elen);
      break;
    }
    off += elen;
  }
  return out;
}

NumaConfig numa_of(const std::string& smp, uint64_t ram_bytes, std::vector<std::string> numa,
                   std::vector<std::string> objects, bool hmat = false) {
  return NumaOptions(std::move(numa), std::move(objects), hmat).complete(Topology::parse(smp), ram_bytes);
}

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

TEST(Acpi, NoNumaNoSratNoSlit) {
  GuestRam ram(kRamSize);
  const AcpiTables t = build_acpi_tables(ram, Topology::parse("2"));
  EXPECT_EQ(t.srat, 0u);
  EXPECT_EQ(t.slit, 0u);
  EXPECT_FALSE(GuestView(ram).find_table("SRAT"));
}

// The tables QEMU 7.2 gives -m 1G with two 512 MiB nodes and
// -numa dist,src=0,dst=1,val=21 (dumped from guest RAM under QEMU).
TEST(Acpi, SratAndSlitAsQemuBuildsThemBelow4G) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const Topology topo = Topology::parse("4,sockets=2,cores=2");
  const NumaConfig numa = numa_of("4,sockets=2,cores=2", kGiB,
                                  {"node,nodeid=0,memdev=m0", "node,nodeid=1,memdev=m1", "dist,src=0,dst=1,val=21"},
                                  {"memory-backend-ram,id=m0,size=512M", "memory-backend-ram,id=m1,size=512M"});
  const AcpiTables t = build_acpi_tables(ram, topo, numa);
  const SratView srat = read_srat(ram);
  EXPECT_EQ(srat.cpus, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
  EXPECT_EQ(srat.memory, (std::vector<SratMemoryEntry>{{0, 0, 0xa0000, 1},
                                                        {0, 0x100000, 0x20000000 - 0x100000, 1},
                                                        {1, 0x20000000, 0x20000000, 1},
                                                        {0, 0, 0, 0}}));
  GuestView guest(ram);
  ASSERT_EQ(guest.find_table("SLIT"), t.slit);
  EXPECT_EQ(guest.checked_table(t.slit, "SLIT"), 48u);
  EXPECT_EQ(ram.read<uint64_t>(t.slit + 36), 2u);
  EXPECT_EQ(ram.read<uint32_t>(t.slit + 44), 0x0a15150au);  // 10 21 / 21 10
}

// -m 6G as 3G + 3G: 3 GiB stay below 4 GiB, node 1 starts at 4 GiB.
TEST(Acpi, SratFollowsRamAbove4G) {
  GuestRam ram(memory_map::pc_ram_regions(6 * kGiB));
  const NumaConfig numa = numa_of("2,sockets=2", 6 * kGiB, {"node,memdev=m0", "node,memdev=m1"},
                                  {"memory-backend-ram,id=m0,size=3G", "memory-backend-ram,id=m1,size=3G"});
  const AcpiTables t = build_acpi_tables(ram, Topology::parse("2,sockets=2"), numa);
  EXPECT_EQ(t.slit, 0u);  // no -numa dist: no SLIT
  EXPECT_EQ(read_srat(ram).memory, (std::vector<SratMemoryEntry>{{0, 0, 0xa0000, 1},
                                                                  {0, 0x100000, 3 * kGiB - kMiB, 1},
                                                                  {1, 4 * kGiB, 3 * kGiB, 1},
                                                                  {0, 0, 0, 0}}));
}

// A node with CPUs and no memory has processor entries and no memory
// entry; the padding grows to nodes + 2.
TEST(Acpi, SratMemorylessNode) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const NumaConfig numa = numa_of("4,sockets=2,cores=2", kGiB, {"node,memdev=m0", "node"},
                                  {"memory-backend-ram,id=m0,size=1G"});
  build_acpi_tables(ram, Topology::parse("4,sockets=2,cores=2"), numa);
  const SratView srat = read_srat(ram);
  EXPECT_EQ(srat.cpus, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
  EXPECT_EQ(srat.memory, (std::vector<SratMemoryEntry>{
                             {0, 0, 0xa0000, 1}, {0, 0x100000, kGiB - kMiB, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}}));
}

// APIC IDs from 255 on take x2APIC affinity entries (§5.2.16.3).
TEST(Acpi, SratUsesX2ApicEntriesPast254) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const std::string smp = "288,sockets=2,cores=72,threads=2";
  const NumaConfig numa = numa_of(smp, kGiB, {"node,memdev=m0", "node,memdev=m1"},
                                  {"memory-backend-ram,id=m0,size=512M", "memory-backend-ram,id=m1,size=512M"});
  const Topology topo = Topology::parse(smp);
  build_acpi_tables(ram, topo, numa);
  const SratView srat = read_srat(ram);
  ASSERT_EQ(srat.cpus.size(), 288u);
  for (unsigned i = 0; i < 288; ++i) {
    EXPECT_EQ(srat.cpus[i].first, topo.apic_id(i));
    EXPECT_EQ(srat.cpus[i].second, i / 144);
  }
}

// -machine hmat=on with QEMU 7.2's verified run (docs/numa.md): node 0 has
// the CPUs, node 1 names it as initiator; latencies 10 and 20 ns,
// bandwidths 10G and 5G, a 10 KiB direct-mapped write-back L1 with 8-byte
// lines before node 0's memory.
const std::vector<std::string> kHmatRun = {
    "node,nodeid=0,memdev=m0,cpus=0-3",
    "node,nodeid=1,memdev=m1,initiator=0",
    "hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=10",
    "hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=10G",
    "hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=20",
    "hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G",
    "hmat-cache,node-id=0,size=10K,level=1,associativity=direct,policy=write-back,line=8"};
const std::vector<std::string> kTwoHalfGiB = {"memory-backend-ram,id=m0,size=512M",
                                              "memory-backend-ram,id=m1,size=512M"};

TEST(Acpi, HmatAsQemuBuildsIt) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const Topology topo = Topology::parse("4");
  const AcpiTables t = build_acpi_tables(ram, topo, numa_of("4", kGiB, kHmatRun, kTwoHalfGiB, true));
  GuestView guest(ram);
  ASSERT_EQ(guest.find_table("HMAT"), t.hmat);
  // Header and reserved u32, 2 proximity structures, 2 locality
  // structures of 32 + 4 + 8 + 4 bytes, one cache structure.
  EXPECT_EQ(guest.checked_table(t.hmat, "HMAT"), 40u + 2 * 40 + 2 * 48 + 32);
  EXPECT_EQ(ram.read<uint8_t>(t.hmat + 8), 2);  // revision
  EXPECT_GT(t.hmat, t.srat);
  uint32_t at = t.hmat + 40;
  for (uint32_t node = 0; node < 2; ++node, at += 40) {
    EXPECT_EQ(ram.read<uint16_t>(at), 0);
    EXPECT_EQ(ram.read<uint32_t>(at + 4), 40u);
    EXPECT_EQ(ram.read<uint16_t>(at + 8), 1);      // initiator valid
    EXPECT_EQ(ram.read<uint32_t>(at + 12), 0u);    // node 0
    EXPECT_EQ(ram.read<uint32_t>(at + 16), node);  // memory domain
  }
  // Access latency, then access bandwidth (data type order).
  const struct {
    uint8_t type;
    uint64_t unit;
    uint16_t to0, to1;
  } localities[] = {{0, 10000, 1, 2}, {3, 1024, 10, 5}};
  for (const auto& l : localities) {
    EXPECT_EQ(ram.read<uint16_t>(at), 1);
    EXPECT_EQ(ram.read<uint32_t>(at + 4), 48u);
    EXPECT_EQ(ram.read<uint8_t>(at + 8), 0);  // memory hierarchy
    EXPECT_EQ(ram.read<uint8_t>(at + 9), l.type);
    EXPECT_EQ(ram.read<uint32_t>(at + 12), 1u);  // initiators
    EXPECT_EQ(ram.read<uint32_t>(at + 16), 2u);  // targets: every node
    EXPECT_EQ(ram.read<uint64_t>(at + 24), l.unit);
    EXPECT_EQ(ram.read<uint32_t>(at + 32), 0u);  // initiator list
    EXPECT_EQ(ram.read<uint32_t>(at + 36), 0u);  // target list
    EXPECT_EQ(ram.read<uint32_t>(at + 40), 1u);
    EXPECT_EQ(ram.read<uint16_t>(at + 44), l.to0);
    EXPECT_EQ(ram.read<uint16_t>(at + 46), l.to1);
    at += 48;
  }
  EXPECT_EQ(ram.read<uint16_t>(at), 2);
  EXPECT_EQ(ram.read<uint32_t>(at + 4), 32u);
  EXPECT_EQ(ram.read<uint32_t>(at + 8), 0u);
  EXPECT_EQ(ram.read<uint64_t>(at + 16), 10240u);
  EXPECT_EQ(ram.read<uint32_t>(at + 24), 0x81111u);  // 1 level, L1, direct, write-back, 8-byte lines
  EXPECT_EQ(ram.read<uint32_t>(at + 28), 0u);        // no SMBIOS handles
}

// QEMU's quirks: a node without an initiator says 128 with flags 0; a
// latency range checked against the old base lets 10^6 ns then 1 ns in,
// and the first entry is cut to 16 bits; a structure whose latencies are
// all 0 keeps the base UINT64_MAX, which in 32-bit picoseconds wraps to
// 0xfffffc18.
TEST(Acpi, HmatKeepsQemusQuirks) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const AcpiTables t = build_acpi_tables(
      ram, Topology::parse("4"),
      numa_of("4", kGiB,
              {"node,nodeid=0,memdev=m0,cpus=0-3", "node,nodeid=1,memdev=m1",
               "hmat-lb,initiator=0,target=1,hierarchy=third-level,data-type=write-latency,latency=0",
               "hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=1000000",
               "hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=1"},
              kTwoHalfGiB, true));
  ASSERT_NE(t.hmat, 0u);
  EXPECT_EQ(ram.read<uint32_t>(t.hmat + 4), 40u + 2 * 40 + 2 * 48);
  EXPECT_EQ(ram.read<uint16_t>(t.hmat + 80 + 8), 0);
  EXPECT_EQ(ram.read<uint32_t>(t.hmat + 80 + 12), 128u);
  const uint32_t memory = t.hmat + 120, third = memory + 48;
  EXPECT_EQ(ram.read<uint8_t>(memory + 8), 0);
  EXPECT_EQ(ram.read<uint64_t>(memory + 24), 1000u);  // 1 ns
  EXPECT_EQ(ram.read<uint16_t>(memory + 44), 1000000 & 0xffff);
  EXPECT_EQ(ram.read<uint16_t>(memory + 46), 1);
  EXPECT_EQ(ram.read<uint8_t>(third + 8), 3);
  EXPECT_EQ(ram.read<uint8_t>(third + 9), 2);
  EXPECT_EQ(ram.read<uint64_t>(third + 24), 0xfffffc18u);
  EXPECT_EQ(ram.read<uint32_t>(third + 44), 0u);
}

// The RSDT lists SRAT, SLIT, HMAT in QEMU's order; no HMAT without
// hmat=on, and none with hmat=on but no -numa.
TEST(Acpi, HmatFollowsTheSlitInTheRsdt) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  std::vector<std::string> options = kHmatRun;
  options.push_back("dist,src=0,dst=1,val=21");
  const AcpiTables t = build_acpi_tables(ram, Topology::parse("4"), numa_of("4", kGiB, options, kTwoHalfGiB, true));
  const uint32_t rsdt = ram.read<uint32_t>(t.rsdp + 16);
  EXPECT_EQ(ram.read<uint32_t>(rsdt + 4), 36u + 5 * 4);
  EXPECT_EQ(ram.read<uint32_t>(rsdt + 44), t.srat);
  EXPECT_EQ(ram.read<uint32_t>(rsdt + 48), t.slit);
  EXPECT_EQ(ram.read<uint32_t>(rsdt + 52), t.hmat);
  GuestRam plain(memory_map::pc_ram_regions(kGiB));
  EXPECT_EQ(build_acpi_tables(plain, Topology::parse("4"),
                              numa_of("4", kGiB, {"node,memdev=m0", "node,memdev=m1"}, kTwoHalfGiB))
                .hmat,
            0u);
  EXPECT_EQ(build_acpi_tables(plain, Topology::parse("4"), NumaOptions({}, {}, true).complete(Topology::parse("4"), kGiB))
                .hmat,
            0u);
}

// acpidump -b's files: every table, named as acpidump names it, exactly
// the bytes in RAM its header's length covers.
TEST(Acpi, TableFilesAreTheTablesAsAcpidumpNamesThem) {
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  std::vector<std::string> options = kHmatRun;
  options.push_back("dist,src=0,dst=1,val=21");
  const AcpiTables t = build_acpi_tables(ram, Topology::parse("4"), numa_of("4", kGiB, options, kTwoHalfGiB, true));
  const std::vector<AcpiTableFile> files = acpi_table_files(ram, t);
  std::vector<std::string> names;
  for (const AcpiTableFile& f : files) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"rsdp.dat", "rsdt.dat", "facp.dat", "dsdt.dat", "facs.dat", "apic.dat",
                                             "srat.dat", "slit.dat", "hmat.dat"}));
  const std::vector<uint32_t> at = {t.rsdp, t.rsdt, t.fadt, t.dsdt, t.facs, t.madt, t.srat, t.slit, t.hmat};
  for (size_t i = 0; i < files.size(); ++i) {
    const size_t length = i == 0 ? 20 : ram.read<uint32_t>(at[i] + 4);
    ASSERT_EQ(files[i].bytes.size(), length) << files[i].name;
    EXPECT_EQ(std::memcmp(files[i].bytes.data(), ram.data() + at[i], length), 0) << files[i].name;
  }
  EXPECT_EQ(text(ram, t.facs, 4), "FACS");
  EXPECT_EQ(files[4].bytes.size(), 64u);

  GuestRam plain(kRamSize);
  EXPECT_EQ(acpi_table_files(plain, build_acpi_tables(plain, Topology::parse("2"))).size(), 6u);
}

// The HMAT counts toward the window like every table.
TEST(Acpi, HmatThatDoesNotFitIsAnAcpiError) {
  const NumaConfig numa = numa_of("4", kGiB, kHmatRun, kTwoHalfGiB, true);
  GuestRam ram(memory_map::pc_ram_regions(kGiB));
  const uint32_t end = build_acpi_tables(ram, Topology::parse("4"), numa).end;
  GuestRam again(memory_map::pc_ram_regions(kGiB));
  const uint32_t without = build_acpi_tables(again, Topology::parse("4"), numa_of("4", kGiB, {kHmatRun[0], "node,memdev=m1"}, kTwoHalfGiB)).end;
  EXPECT_GT(end, without);
  AcpiWindow window;
  window.size = end - window.base - 1;
  EXPECT_THROW(build_acpi_tables(again, Topology::parse("4"), numa, window), AcpiError);
  window.size = end - window.base;
  EXPECT_NO_THROW(build_acpi_tables(again, Topology::parse("4"), numa, window));
}

}  // namespace
}  // namespace topolab
