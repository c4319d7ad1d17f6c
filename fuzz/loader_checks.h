// SPDX-License-Identifier: GPL-2.0-or-later
// What the Linux and PVH loader harnesses check alike: a refusal's message,
// RAM a refusal must not have touched, and where boot data may lie.
#pragma once


#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/guest_ram.h"
#include "base/memory_map.h"
#include "fuzz/fuzz_check.h"

namespace topolab::fuzz {

// A loader's refusal: one ImageError line.
inline void check_refusal_message(const std::string& what) {
  FUZZ_CHECK(!what.empty() && what.find('\n') == std::string::npos, "ImageError not one line: '{}'", what);
}

// Whether bytes [p, p + n) are all zero.
inline bool all_zero(const uint8_t* p, uint64_t n) {
  static const std::vector<uint8_t> zeros(1 << 16);
  for (uint64_t done = 0; done < n;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - done, zeros.size()));
    if (std::memcmp(p + done, zeros.data(), chunk) != 0) return false;
    done += chunk;
  }
  return true;
}

// Whether `ram` (fresh from its mmap, zero and not yet backed) is still as
// it was: every page the kernel backed since is all zero. GuestRam lists
// the backed pages, so a refusal costs a look at the pages it touched, not
// at all of RAM.
inline bool untouched(const GuestRam& ram) {
  constexpr size_t kPage = 4096;
  for (const uint64_t at : ram.backed_pages())
    if (!all_zero(ram.data() + at, kPage)) return false;
  return true;
}

// The largest initrd the harnesses give a loader: 0x7FFF units of 32 bytes.
constexpr size_t kMaxTestInitrd = size_t{0x7fff} << 5;

// The first `length` bytes (at most kMaxTestInitrd) of a test initrd whose
// byte i is i * Mul + Add, so a misplaced copy shows. Built once: filling
// up to a MiB per input, a compare per byte under libFuzzer's coverage, was
// most of each loader harness's time.
template <unsigned Mul, unsigned Add>
std::span<const uint8_t> test_initrd(size_t length) {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> b(kMaxTestInitrd);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * Mul + Add);
    return b;
  }();
  return std::span<const uint8_t>(bytes).first(std::min(length, bytes.size()));
}

struct Span {
  uint64_t start, end;  // [start, end)
  const char* name;
};

// [start, end) lies in RAM and inside one region the e820 map gives the
// guest as RAM (type 1): not in the EBDA or the BIOS area, where the
// firmware's tables are.
inline void check_in_ram(const GuestRam& ram, const Span& s) {
  if (s.start == s.end) return;  // nothing placed
  FUZZ_CHECK(s.start < s.end && ram.is_ram(s.start, s.end - s.start), "{} [{:#x}, {:#x}) outside RAM (top {:#x})",
             s.name, s.start, s.end, ram.top());
  bool inside = false;
  for (const auto& r : memory_map::e820_regions(ram.regions()))
    if (r.type == memory_map::kE820Ram && s.start >= r.base && s.end <= r.base + r.length) inside = true;
  FUZZ_CHECK(inside, "{} [{:#x}, {:#x}) is not in one RAM region of the e820 map", s.name, s.start, s.end);
}

inline void check_disjoint(const std::vector<Span>& spans) {
  for (size_t i = 0; i < spans.size(); ++i)
    for (size_t j = i + 1; j < spans.size(); ++j)
      FUZZ_CHECK(spans[i].start == spans[i].end || spans[j].start == spans[j].end || spans[i].end <= spans[j].start || spans[j].end <= spans[i].start,
                 "{} [{:#x}, {:#x}) overlaps {} [{:#x}, {:#x})", spans[i].name, spans[i].start, spans[i].end,
                 spans[j].name, spans[j].start, spans[j].end);
}

}  // namespace topolab::fuzz
