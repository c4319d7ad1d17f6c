// SPDX-License-Identifier: GPL-2.0-or-later
// Guest RAM as the pages that hold something: what a snapshot saves, what a
// checkpoint compares, and the digest a snapshot's fingerprint carries,
// found without reading any page the host never backed
// (GuestRam::backed_pages). A 16 GiB guest that used 200 MiB costs a pass
// over 200 MiB, not 16 GiB; a page never listed reads zeros.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/guest_ram.h"

namespace topolab::ram_pages {

inline constexpr uint64_t kPageBytes = 4096;

// (guest-physical address, xxHash3 of its 4 KiB) for each page that holds
// a non-zero byte, ascending by address.
using PageHashes = std::vector<std::pair<uint64_t, uint64_t>>;
PageHashes hash_pages(const GuestRam& ram);

// The addresses of the pages whose contents differ between two lists of
// the same RAM (a page missing from a list is zero there), ascending.
std::vector<uint64_t> changed_pages(const PageHashes& before, const PageHashes& after);

// The pages that hold a non-zero byte, by address, ascending.
std::vector<uint64_t> nonzero_pages(const GuestRam& ram);

// One digest of RAM's layout and contents: equal for equal RAM whichever of
// its zero pages the host happens to back.
uint64_t digest(const GuestRam& ram);

}  // namespace topolab::ram_pages
