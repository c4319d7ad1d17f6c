// SPDX-License-Identifier: GPL-2.0-or-later
// The pc machine's RAM layout against QEMU 7.2's rules (hw/i386/pc_piix.c
// pc_init1, hw/i386/pc.c pc_memory_init).
#include "base/memory_map.h"

#include <gtest/gtest.h>

namespace topolab::memory_map {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

TEST(PcRamSplit, AllBelow4GUpToTheTraditionalSplit) {
  EXPECT_EQ(pc_ram_split(128 * kMiB), (RamSplit{128 * kMiB, 0}));
  EXPECT_EQ(pc_ram_split(3 * kGiB), (RamSplit{3 * kGiB, 0}));
  // Between 3 GiB and 3.5 GiB nothing splits: QEMU's "qemu -m 3.25G" has it all low.
  EXPECT_EQ(pc_ram_split(3 * kGiB + 256 * kMiB), (RamSplit{3 * kGiB + 256 * kMiB, 0}));
  EXPECT_EQ(pc_ram_split(0xe0000000 - kMiB), (RamSplit{0xe0000000 - kMiB, 0}));
}

TEST(PcRamSplit, AtMaxRamBelow4gTheSplitIsGigabyteAligned) {
  // QEMU's own examples: "qemu -M pc -m 4G -> 3072M low, 1024M high".
  EXPECT_EQ(pc_ram_split(0xe0000000), (RamSplit{3 * kGiB, 512 * kMiB}));
  EXPECT_EQ(pc_ram_split(4 * kGiB), (RamSplit{3 * kGiB, 1 * kGiB}));
  EXPECT_EQ(pc_ram_split(16 * kGiB), (RamSplit{3 * kGiB, 13 * kGiB}));
  EXPECT_EQ(pc_ram_split(64 * kGiB), (RamSplit{3 * kGiB, 61 * kGiB}));
}

TEST(PcRamRegions, LowRegionThenOneFrom4GiB) {
  EXPECT_EQ(pc_ram_regions(512 * kMiB), (std::vector<RamRegion>{{0, 512 * kMiB}}));
  EXPECT_EQ(pc_ram_regions(16 * kGiB), (std::vector<RamRegion>{{0, 3 * kGiB}, {4 * kGiB, 13 * kGiB}}));
  EXPECT_EQ(pc_ram_regions(64 * kGiB).back().end(), 65 * kGiB);
}

TEST(E820Regions, OneRegionIsTheMapTopolabAlwaysGave) {
  const std::vector<RamRegion> ram = pc_ram_regions(3 * kGiB);
  EXPECT_EQ(e820_regions(ram), (std::vector<E820Region>{{0, 0x9fc00, kE820Ram},
                                                        {0x9fc00, 0x400, kE820Reserved},
                                                        {0xe0000, 0x20000, kE820Reserved},
                                                        {0x100000, 3 * kGiB - 0x100000, kE820Ram}}));
}

TEST(E820Regions, RamAbove4GiBIsOneMoreEntry) {
  for (const uint64_t gib : {4, 16, 64}) {
    const std::vector<E820Region> map = e820_regions(pc_ram_regions(gib * kGiB));
    ASSERT_EQ(map.size(), 5u) << gib;
    EXPECT_EQ(map[3], (E820Region{0x100000, 3 * kGiB - 0x100000, kE820Ram}));
    EXPECT_EQ(map[4], (E820Region{4 * kGiB, (gib - 3) * kGiB, kE820Ram}));
  }
}

TEST(E820Regions, RefusesALayoutWithoutLowRam) {
  const std::vector<RamRegion> none{{0, kMiB}};
  EXPECT_THROW(e820_regions(none), std::invalid_argument);
}

TEST(PcMaxUsedAddress, The64BitPciWindowFollowsRamFromTheNextGiB) {
  // No RAM above 4 GiB: the window starts at 4 GiB.
  EXPECT_EQ(pc_max_used_address(128 * kMiB), 6 * kGiB - 1);
  EXPECT_EQ(pc_max_used_address(16 * kGiB), 19 * kGiB - 1);
  // 0xE0000000 puts 512 MiB above 4 GiB; the window starts at 5 GiB.
  EXPECT_EQ(pc_max_used_address(0xe0000000), 7 * kGiB - 1);
}

TEST(RamSizeProblem, FitsWithQemusDefaultPhysBits) {
  EXPECT_EQ(ram_size_problem(128, 40), "");
  EXPECT_EQ(ram_size_problem(16 * 1024, 40), "");
  EXPECT_EQ(ram_size_problem(64 * 1024, 40), "");
  EXPECT_EQ(ram_size_problem(64 * 1024, 37), "");
}

TEST(RamSizeProblem, PhysBitsTooLowAsQemuSaysIt) {
  // 36 bits reach 64 GiB; -m 64G ends at 65 GiB, and the PCI window at 67 GiB.
  EXPECT_EQ(ram_size_problem(64 * 1024, 36),
            "-m 65536M: address space limit 0xfffffffff < 0x10bfffffff phys-bits too low (36): RAM ends at "
            "0x1040000000 and QEMU's 2 GiB 64-bit PCI window follows it; raise -cpu ...,phys-bits= or lower -m");
  // The largest that fits 36 bits: RAM to 62 GiB, the window to 64 GiB.
  EXPECT_EQ(ram_size_problem(61 * 1024, 36), "");
  EXPECT_NE(ram_size_problem(61 * 1024 + 1, 36), "");
}

TEST(RamSizeProblem, At32BitsTheRamMustEndBelow4GiB) {
  EXPECT_EQ(ram_size_problem(3 * 1024, 32), "");
  EXPECT_EQ(ram_size_problem(0xe0000000 >> 20, 32),
            "-m 3584M: address space limit 0xffffffff < 0x11fffffff phys-bits too low (32): RAM ends at 0x120000000; "
            "raise -cpu ...,phys-bits= or lower -m");
}

TEST(RamSizeProblem, TheEngineReachesOneTiB) {
  EXPECT_EQ(kMaxRamMib, 1023u * 1024);
  EXPECT_EQ(ram_size_problem(kMaxRamMib, 52), "");
  EXPECT_NE(ram_size_problem(kMaxRamMib + 1, 52).find("topolab's engine addresses 40 bits"), std::string::npos);
  // With QEMU's default 40 bits, the PCI window after the RAM comes first.
  EXPECT_NE(ram_size_problem(kMaxRamMib, 40).find("phys-bits too low (40)"), std::string::npos);
}

}  // namespace
}  // namespace topolab::memory_map
