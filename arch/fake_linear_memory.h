// SPDX-License-Identifier: GPL-2.0-or-later
// A LinearMemory for the pure rules' tests: a flat buffer at linear address
// `base`, identity "paging", and an optional page that faults. Accesses
// outside the buffer, or touching the faulting page, raise #PF(P=0) with
// the W/R and U/S bits the access implies (SDM Vol. 3A 4.7) and write
// nothing. It records every accessor it saw, to check implicit accesses.
#pragma once

#include <cstring>
#include <optional>
#include <vector>

#include "arch/x86_arch.h"

namespace topolab::x86 {

class FakeLinearMemory : public LinearMemory {
 public:
  explicit FakeLinearMemory(uint64_t base = 0, size_t size = 0x20000) : base_(base), bytes_(size, 0) {}

  // Any access touching [linear, linear + len) raises #PF.
  void fault_at(uint64_t linear, uint64_t len = 1) { faulting_.push_back({linear, linear + len}); }

  std::optional<Fault> read(uint64_t linear, void* out, size_t len, Accessor who) override {
    if (auto f = check(linear, len, who, false)) return f;
    std::memcpy(out, &bytes_[linear - base_], len);
    accessors.push_back(who);
    return std::nullopt;
  }
  std::optional<Fault> write(uint64_t linear, const void* in, size_t len, Accessor who) override {
    if (auto f = check(linear, len, who, true)) return f;
    std::memcpy(&bytes_[linear - base_], in, len);
    accessors.push_back(who);
    return std::nullopt;
  }

  template <typename T>
  void put(uint64_t linear, T value) {
    std::memcpy(&bytes_[linear - base_], &value, sizeof value);
  }
  template <typename T>
  T get(uint64_t linear) const {
    T value;
    std::memcpy(&value, &bytes_[linear - base_], sizeof value);
    return value;
  }
  std::vector<uint8_t> bytes(uint64_t linear, size_t len) const {
    return {bytes_.begin() + (linear - base_), bytes_.begin() + (linear - base_ + len)};
  }

  std::vector<Accessor> accessors;

 private:
  struct Range {
    uint64_t begin, end;
  };
  std::optional<Fault> check(uint64_t linear, size_t len, Accessor who, bool write) const {
    const uint32_t ec = (write ? kPfErrorWr : 0) | (who.cpl == 3 && !who.implicit_supervisor ? kPfErrorUs : 0);
    for (uint64_t a = linear; a < linear + len; ++a) {
      bool bad = a < base_ || a >= base_ + bytes_.size();
      for (const Range& r : faulting_) bad = bad || (a >= r.begin && a < r.end);
      if (bad) return Fault{.vector = kPageFault, .error_code = ec, .cr2 = a};
    }
    return std::nullopt;
  }

  uint64_t base_;
  std::vector<uint8_t> bytes_;
  std::vector<Range> faulting_;
};

}  // namespace topolab::x86
