// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/ram_pages.h"

#include <gtest/gtest.h>

namespace topolab::ram_pages {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(RamPages, NonzeroPagesLeaveOutPagesThatOnlyReadZeros) {
  GuestRam ram(16 << 20);
  ram.write<uint32_t>(0x5000, 7);
  ram.write<uint32_t>(0x9000, 0);           // backed, zero
  EXPECT_EQ(ram.read<uint32_t>(0xa000), 0);  // backed by the zero page
  EXPECT_EQ(nonzero_pages(ram), (std::vector<uint64_t>{0x5000}));
}

TEST(RamPages, ChangedPagesMergesTwoLists) {
  const PageHashes before{{0x1000, 1}, {0x2000, 2}, {0x4000, 4}};
  const PageHashes after{{0x2000, 2}, {0x3000, 3}, {0x4000, 5}};
  // 0x1000 went back to zero, 0x3000 was zero, 0x4000 changed.
  EXPECT_EQ(changed_pages(before, after), (std::vector<uint64_t>{0x1000, 0x3000, 0x4000}));
  EXPECT_EQ(changed_pages(after, after), std::vector<uint64_t>{});
}

TEST(RamPages, DigestIsOfContentsNotOfWhatTheHostBacked) {
  GuestRam a(8 << 20), b(8 << 20), c(16 << 20);
  a.write<uint64_t>(0x3000, 42);
  b.write<uint64_t>(0x3000, 42);
  EXPECT_EQ(b.read<uint64_t>(0x7000), 0u);
  b.write<uint64_t>(0x6000, 0);
  EXPECT_EQ(digest(a), digest(b));
  c.write<uint64_t>(0x3000, 42);
  EXPECT_NE(digest(a), digest(c)) << "a different layout";
  b.write<uint8_t>(0x7fffff, 1);
  EXPECT_NE(digest(a), digest(b));
}

// A 16 GiB pc layout with a few pages written on both sides of the gap:
// hashing, comparing and digesting it read nothing else. Reading an
// untouched page would map the zero page there, which backed_pages() would
// then list: it does not grow.
TEST(RamPages, SixteenGiBIsNotReadWhole) {
  GuestRam ram(memory_map::pc_ram_regions(16 * kGiB));
  ram.write<uint64_t>(0x100000, 1);
  ram.write<uint64_t>(3 * kGiB - 8, 2);
  ram.write<uint64_t>(12 * kGiB, 3);
  const std::vector<uint64_t> backed = ram.backed_pages();
  ASSERT_LE(backed.size(), 3u * 512);  // at most a transparent huge page each
  const PageHashes first = hash_pages(ram);
  EXPECT_EQ(first.size(), 3u);
  ram.write<uint64_t>(12 * kGiB, 4);
  ram.write<uint64_t>(16 * kGiB + 8, 5);
  const std::vector<uint64_t> more = ram.backed_pages();
  const PageHashes second = hash_pages(ram);
  EXPECT_EQ(changed_pages(first, second), (std::vector<uint64_t>{12 * kGiB, 16 * kGiB}));
  digest(ram);
  nonzero_pages(ram);
  EXPECT_EQ(ram.backed_pages(), more);
}

}  // namespace
}  // namespace topolab::ram_pages
