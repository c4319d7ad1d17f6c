// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/guest_ram.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

namespace topolab {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

TEST(GuestRam, FlatRamIsOneRegionFromZero) {
  GuestRam ram(1000);
  EXPECT_EQ(ram.regions(), (std::vector<RamRegion>{{0, 4096}}));
  EXPECT_EQ(ram.top(), 4096u);
  EXPECT_EQ(ram.total_bytes(), 4096u);
  EXPECT_TRUE(ram.is_ram(0, 4096));
  EXPECT_TRUE(ram.is_ram(4096, 0));
  EXPECT_FALSE(ram.is_ram(4095, 2));
  EXPECT_THROW(GuestRam(0), std::invalid_argument);
}

TEST(GuestRam, RefusesRegionsThatAreNotPagesApartAndInOrder) {
  EXPECT_THROW(GuestRam(std::vector<RamRegion>{{4096, 4096}}), std::invalid_argument);  // not from 0
  EXPECT_THROW(GuestRam(std::vector<RamRegion>{{0, 4096}, {4096 + 1, 4096}}), std::invalid_argument);
  EXPECT_THROW(GuestRam(std::vector<RamRegion>{{0, 8192}, {4096, 4096}}), std::invalid_argument);
  EXPECT_THROW(GuestRam(std::vector<RamRegion>{{0, 4096}, {8192, 0}}), std::invalid_argument);
}

// 16 GiB as the pc machine lays it out: the host reserves 0..17 GiB, and
// `data() + pa` reaches RAM on both sides of the gap.
TEST(GuestRam, RegionsAroundTheGapBelow4GiB) {
  GuestRam ram(memory_map::pc_ram_regions(16 * kGiB));
  EXPECT_EQ(ram.top(), 17 * kGiB);
  EXPECT_EQ(ram.total_bytes(), 16 * kGiB);
  EXPECT_TRUE(ram.is_ram(3 * kGiB - 8, 8));
  EXPECT_FALSE(ram.is_ram(3 * kGiB - 8, 9));  // runs into the gap
  EXPECT_FALSE(ram.is_ram(3 * kGiB, 1));
  EXPECT_FALSE(ram.is_ram(0xfee00000, 4));  // the local APIC's page
  EXPECT_TRUE(ram.is_ram(4 * kGiB, 8));
  EXPECT_TRUE(ram.is_ram(17 * kGiB - 8, 8));
  EXPECT_FALSE(ram.is_ram(17 * kGiB - 8, 9));
  EXPECT_FALSE(ram.is_ram(~uint64_t{0}, 1));
  ram.write<uint64_t>(16 * kGiB, 0x1122334455667788);
  EXPECT_EQ(ram.data()[16 * kGiB], 0x88);
  EXPECT_EQ(ram.read<uint64_t>(16 * kGiB), 0x1122334455667788u);
  EXPECT_THROW(ram.read<uint32_t>(3 * kGiB + 4), std::out_of_range);
}

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Only what the guest touches is backed, and only that is listed: 64 GiB of
// RAM with three pages written lists three pages, and neither backs nor
// reads the rest.
TEST(GuestRam, BackedPagesAreTheTouchedOnes) {
  GuestRam ram(memory_map::pc_ram_regions(64 * kGiB));
  EXPECT_TRUE(ram.backed_pages().empty());
  ram.write<uint8_t>(0x1234, 1);
  ram.write<uint8_t>(3 * kGiB - 1, 2);
  ram.write<uint8_t>(40 * kGiB + 5, 3);
  const long rss_before = max_rss_kib();
  const std::vector<uint64_t> pages = ram.backed_pages();
  // A transparent huge page may back the neighbours of a touched page too;
  // the touched ones are there, and the list is nowhere near 16M pages.
  for (const uint64_t page : {uint64_t{0x1000}, 3 * kGiB - 4096, 40 * kGiB})
    EXPECT_TRUE(std::binary_search(pages.begin(), pages.end(), page)) << std::hex << page;
  EXPECT_LE(pages.size(), 3u * 512);
  EXPECT_LT(max_rss_kib() - rss_before, 64 * 1024) << "listing backed pages backed memory";
  EXPECT_EQ(ram.backed_pages(), pages) << "listing read RAM (a read maps the zero page, which pagemap shows)";
  ram.discard();
  EXPECT_TRUE(ram.backed_pages().empty());
  EXPECT_EQ(ram.read<uint8_t>(40 * kGiB + 5), 0);
}

}  // namespace
}  // namespace topolab
