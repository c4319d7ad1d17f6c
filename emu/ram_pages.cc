// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/ram_pages.h"

#include <array>
#include <cstring>

#include <xxhash.h>

namespace topolab::ram_pages {
namespace {

bool all_zero(const uint8_t* page) {
  static const std::array<uint8_t, kPageBytes> zero{};
  return std::memcmp(page, zero.data(), kPageBytes) == 0;
}

}  // namespace

std::vector<uint64_t> nonzero_pages(const GuestRam& ram) {
  std::vector<uint64_t> pages;
  for (const uint64_t page : ram.backed_pages())
    if (!all_zero(ram.data() + page)) pages.push_back(page);
  return pages;
}

PageHashes hash_pages(const GuestRam& ram) {
  PageHashes hashes;
  for (const uint64_t page : nonzero_pages(ram)) hashes.emplace_back(page, XXH3_64bits(ram.data() + page, kPageBytes));
  return hashes;
}

std::vector<uint64_t> changed_pages(const PageHashes& before, const PageHashes& after) {
  std::vector<uint64_t> changed;
  auto b = before.begin(), a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      changed.push_back((b++)->first);  // zero now
    } else if (b == before.end() || a->first < b->first) {
      changed.push_back((a++)->first);  // was zero
    } else {
      if (a->second != b->second) changed.push_back(a->first);
      ++a, ++b;
    }
  }
  return changed;
}

uint64_t digest(const GuestRam& ram) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const RamRegion& r : ram.regions()) {
    const std::array<uint64_t, 2> words = {r.base, r.size};
    XXH3_64bits_update(state, words.data(), sizeof words);
  }
  for (const uint64_t page : nonzero_pages(ram)) {
    XXH3_64bits_update(state, &page, sizeof page);
    XXH3_64bits_update(state, ram.data() + page, kPageBytes);
  }
  const uint64_t value = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return value;
}

}  // namespace topolab::ram_pages
