// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/mmio_bus.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace topolab {

namespace {
constexpr uint64_t kPage = 4096;
}  // namespace

void MmioBus::attach(uint64_t base, uint64_t size, MmioDevice& device) {
  if (size == 0) throw std::invalid_argument(fmt::format("{}: empty MMIO range at {:#x}", device.name(), base));
  if (base + size < base)
    throw std::invalid_argument(fmt::format("{}: MMIO {:#x}+{:#x} wraps past 2^64", device.name(), base, size));
  if (base % kPage != 0 || size % kPage != 0)
    throw std::invalid_argument(
        fmt::format("{}: MMIO {:#x}+{:#x} is not whole 4 KiB pages", device.name(), base, size));
  for (const Range& r : ranges_)
    if (r.overlaps(base, size))
      throw std::invalid_argument(fmt::format("{}: MMIO {:#x}+{:#x} overlaps {} at {:#x}+{:#x}", device.name(), base,
                                              size, r.device->name(), r.base, r.size));
  const auto at = std::upper_bound(ranges_.begin(), ranges_.end(), base,
                                   [](uint64_t b, const Range& r) { return b < r.base; });
  ranges_.insert(at, Range{base, size, &device});
}

const MmioBus::Range* MmioBus::find(uint64_t address) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return it->contains(address) ? &*it : nullptr;
}

bool MmioBus::overlaps(uint64_t base, uint64_t size) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& r) { return r.overlaps(base, size); });
}

}  // namespace topolab
