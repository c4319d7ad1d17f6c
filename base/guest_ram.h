// SPDX-License-Identifier: GPL-2.0-or-later
// Guest physical RAM: one host buffer, shared by every vCPU's engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>

namespace topolab {

class GuestRam {
 public:
  // `bytes` is rounded up to a whole 4 KiB page, the unit engines map.
  explicit GuestRam(uint64_t bytes);
  ~GuestRam();
  GuestRam(const GuestRam&) = delete;
  GuestRam& operator=(const GuestRam&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Every byte zero again, and no page backed: a snapshot's RAM goes in after.
  void discard();

  bool contains(uint64_t addr, uint64_t len) const {
    return addr <= size_ && len <= size_ - addr;
  }
  // Bounds-checked views; out-of-range access is a host bug, so it throws.
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

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace topolab
