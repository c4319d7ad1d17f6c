// SPDX-License-Identifier: GPL-2.0-or-later
// Guest physical RAM: one host reservation from guest-physical 0 to the top
// of RAM, shared by every vCPU's engine, with RAM in some ranges of it (the
// pc machine's below and above 4 GiB, base/memory_map.h) and nothing in the
// gaps, which the host never touches. So `data() + pa` is the host address
// of any RAM address, and only the pages a guest touches cost host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "base/memory_map.h"

namespace topolab {

using memory_map::RamRegion;

class GuestRam {
 public:
  // RAM at [0, bytes), rounded up to a whole 4 KiB page (the unit engines
  // map): the small flat machines of the unit tests and the fuzzers.
  explicit GuestRam(uint64_t bytes);
  // RAM in `regions`: sorted, apart, whole 4 KiB pages, the first from 0
  // (memory_map::pc_ram_regions gives the pc machine's). Anything else
  // throws std::invalid_argument.
  explicit GuestRam(std::vector<RamRegion> regions);
  ~GuestRam();
  GuestRam(const GuestRam&) = delete;
  GuestRam& operator=(const GuestRam&) = delete;

  // The host address of guest-physical 0; only RAM addresses may be used.
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  const std::vector<RamRegion>& regions() const { return regions_; }
  // The end of the highest region: how far the host reservation reaches.
  uint64_t top() const { return regions_.back().end(); }
  // What the guest has: the regions' sizes together.
  uint64_t total_bytes() const { return total_bytes_; }
  // Every byte zero again, and no page backed: a snapshot's RAM goes in after.
  void discard();

  // [addr, addr + len) lies in one region (len 0: addr is in one, or its end).
  bool is_ram(uint64_t addr, uint64_t len) const;
  // Bounds-checked views; an access outside RAM is a host bug, so it throws.
  std::span<uint8_t> bytes(uint64_t addr, uint64_t len);
  std::span<const uint8_t> bytes(uint64_t addr, uint64_t len) const;

  template <typename T>
  T read(uint64_t addr) const {
    T v;
    std::memcpy(&v, bytes(addr, sizeof(T)).data(), sizeof(T));
    return v;
  }
  template <typename T>
  void write(uint64_t addr, T v) {
    std::memcpy(bytes(addr, sizeof(T)).data(), &v, sizeof(T));
  }

  // The 4 KiB pages of RAM that may hold a non-zero byte, by guest-physical
  // address, ascending: those the host kernel has backed, in memory or in
  // swap (/proc/self/pagemap). A page never touched, or dropped by
  // discard(), reads zeros and is left out, so a pass over a large, mostly
  // untouched RAM costs what the guest used. Without pagemap, every page.
  std::vector<uint64_t> backed_pages() const;

 private:
  std::vector<RamRegion> regions_;
  uint64_t total_bytes_ = 0;
  uint8_t* data_ = nullptr;
};

}  // namespace topolab
