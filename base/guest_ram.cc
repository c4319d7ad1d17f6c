// SPDX-License-Identifier: GPL-2.0-or-later
#include "base/guest_ram.h"

#include <sys/mman.h>

#include <cstring>

#include <fmt/format.h>

namespace topolab {

GuestRam::GuestRam(uint64_t bytes) {
  size_ = (bytes + 0xfff) & ~uint64_t{0xfff};
  if (size_ == 0) throw std::invalid_argument("guest RAM size must be positive");
  // mmap gives page-aligned, zeroed memory that is only backed when touched,
  // so a large -m costs nothing until the guest uses it.
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(fmt::format("cannot allocate {} MiB of guest RAM", size_ >> 20));
  data_ = static_cast<uint8_t*>(p);
}

GuestRam::~GuestRam() { munmap(data_, size_); }

void GuestRam::discard() {
  // A private anonymous mapping reads zeros after MADV_DONTNEED, and the
  // engines that map it keep the same host addresses.
  if (madvise(data_, size_, MADV_DONTNEED) != 0) std::memset(data_, 0, size_);
}

std::span<uint8_t> GuestRam::bytes(uint64_t addr, uint64_t len) {
  if (!contains(addr, len))
    throw std::out_of_range(fmt::format("guest RAM access [{:#x}, +{:#x}) is outside {:#x} bytes", addr, len, size_));
  return {data_ + addr, static_cast<size_t>(len)};
}

std::span<const uint8_t> GuestRam::bytes(uint64_t addr, uint64_t len) const {
  return const_cast<GuestRam*>(this)->bytes(addr, len);
}

}  // namespace topolab
