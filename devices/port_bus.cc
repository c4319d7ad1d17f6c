// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/port_bus.h"

#include <stdexcept>

#include <fmt/format.h>

namespace topolab {

void PortBus::attach(uint16_t base, uint32_t size, PortDevice& device) {
  if (size == 0) throw std::invalid_argument(fmt::format("{}: empty port range at {:#x}", device.name(), base));
  if (base + size > 0x10000)
    throw std::invalid_argument(fmt::format("{}: ports {:#x}+{} run past 0xffff", device.name(), base, size));
  for (const auto& [other_base, r] : ranges_)
    if (base < other_base + r.size && other_base < base + size)
      throw std::invalid_argument(fmt::format("{}: ports {:#x}+{} overlap {} at {:#x}+{}", device.name(), base, size,
                                              r.device->name(), other_base, r.size));
  ranges_[base] = {size, &device};
}

const std::pair<const uint16_t, PortBus::Range>* PortBus::find(uint16_t port) const {
  auto it = ranges_.upper_bound(port);
  if (it == ranges_.begin()) return nullptr;
  --it;
  return port < it->first + it->second.size ? &*it : nullptr;
}

uint32_t PortBus::read(uint16_t port, unsigned size) {
  if (auto* r = find(port)) return r->second.device->read(port - r->first, size);
  ++unclaimed_;
  return size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
}

void PortBus::write(uint16_t port, unsigned size, uint32_t value) {
  if (auto* r = find(port)) return r->second.device->write(port - r->first, size, value);
  ++unclaimed_;
}

}  // namespace topolab
