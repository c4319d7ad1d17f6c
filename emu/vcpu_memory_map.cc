// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/vcpu_memory_map.h"

#include "emu/vcpu_blocks.h"
#include "emu/vcpu_contexts.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace topolab::vcpu_internal {

void map_guest_ram(uc_engine* uc, GuestRam& ram, const char* what) {
  for (const RamRegion& r : ram.regions())
    check(uc_mem_map_ptr(uc, r.base, r.size, UC_PROT_ALL, ram.data() + r.base), what);
}

std::vector<std::pair<uint64_t, uint64_t>> ranges_without_ram(const GuestRam& ram) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  const std::vector<RamRegion>& regions = ram.regions();
  for (size_t i = 0; i + 1 < regions.size(); ++i)
    if (regions[i].end() < regions[i + 1].base) ranges.emplace_back(regions[i].end(), regions[i + 1].base - 1);
  ranges.emplace_back(ram.top(), ~uint64_t{0});
  return ranges;
}

uint64_t GuestMemoryMap::on_device_read(uc_engine*, uint64_t offset, unsigned size, void* user) {
  auto& w = *static_cast<DeviceWindow*>(user);
  return w.map->owner_.device_read(*w.device, offset, size);
}

void GuestMemoryMap::on_device_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user) {
  auto& w = *static_cast<DeviceWindow*>(user);
  w.map->owner_.device_write(*w.device, offset, size, value);
}

void GuestMemoryMap::map_device(uint64_t base, uint64_t size, MmioHandler& device) {
  if (size == 0 || base % kPageSize || size % kPageSize || base + size < base)
    throw std::invalid_argument(fmt::format("MMIO window {:#x}+{:#x} is not whole 4 KiB pages", base, size));
  for (const RamRegion& r : ram_.regions())
    if (base < r.end() && r.base < base + size)
      throw std::invalid_argument(
          fmt::format("MMIO window at {:#x} overlaps RAM ({:#x}..{:#x})", base, r.base, r.end()));
  // Open bus gives the place up: its windows there are mapped again around
  // the device.
  const std::vector<uint64_t> open = open_windows_in(base, size);
  for (uint64_t window : open) unmap_open_bus_window(window);
  auto window = std::make_unique<DeviceWindow>(DeviceWindow{this, &device, size});
  const uc_err err = uc_mmio_map(uc_, base, size, on_device_read, window.get(), on_device_write, window.get());
  if (err == UC_ERR_OK) devices_.emplace(base, std::move(window));
  for (uint64_t w : open) map_open_bus_window(w);
  if (err != UC_ERR_OK)
    throw std::invalid_argument(fmt::format("MMIO window {:#x}+{:#x}: {}", base, size, uc_strerror(err)));
}

void GuestMemoryMap::unmap_device(uint64_t base, uint64_t size) {
  const auto it = devices_.find(base);
  if (it == devices_.end() || it->second->size != size)
    throw std::invalid_argument(fmt::format("no MMIO window {:#x}+{:#x}", base, size));
  check(uc_mem_unmap(uc_, base, size), "uc_mem_unmap (MMIO)");
  devices_.erase(it);
  // The place is open bus again where its window is open (else once touched).
  for (uint64_t window : open_windows_in(base, size)) {
    unmap_open_bus_window(window);
    map_open_bus_window(window);
  }
}

std::vector<uint64_t> GuestMemoryMap::open_windows_in(uint64_t base, uint64_t size) const {
  std::vector<uint64_t> open;
  for (auto it = open_bus_windows_.lower_bound(base & ~(kOpenBusWindow - 1));
       it != open_bus_windows_.end() && *it < base + size; ++it)
    open.push_back(*it);
  return open;
}

void GuestMemoryMap::map_open_bus_window(uint64_t window) {
  // What is taken in the window, in order: RAM's regions and the devices.
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (const RamRegion& r : ram_.regions()) taken.emplace_back(r.base, r.end());
  for (const auto& [base, device] : devices_) taken.emplace_back(base, base + device->size);
  std::sort(taken.begin(), taken.end());
  const uint64_t end = window + kOpenBusWindow;  // 0 for the top window: it wraps
  uint64_t free_from = window;
  auto map_free = [&](uint64_t to) {
    if (to - 1 < free_from || free_from - window >= kOpenBusWindow) return;
    const uint64_t size = to - free_from;
    auto& slot = open_bus_data_[free_from];
    if (!slot) slot = std::make_unique<OpenBusRegion>(OpenBusRegion{this, free_from});
    OpenBusRegion* data = slot.get();
    check(uc_mmio_map(uc_, free_from, size, on_open_bus_read, data, on_open_bus_write, data),
          "uc_mmio_map (open bus)");
    open_bus_regions_.emplace(free_from, size);
  };
  for (const auto& [from, to] : taken) {
    if (to <= window || (end != 0 && from >= end)) continue;
    if (from > free_from) map_free(from);
    free_from = std::max(free_from, to);
  }
  map_free(end);
}

void GuestMemoryMap::unmap_open_bus_window(uint64_t window) {
  for (auto it = open_bus_regions_.lower_bound(window);
       it != open_bus_regions_.end() && it->first - window < kOpenBusWindow;) {
    check(uc_mem_unmap(uc_, it->first, it->second), "uc_mem_unmap (open bus)");
    it = open_bus_regions_.erase(it);
  }
}

// The offset is from the region's start.
uint64_t GuestMemoryMap::on_open_bus_read(uc_engine*, uint64_t offset, unsigned size, void* user) {
  auto& region = *static_cast<OpenBusRegion*>(user);
  region.map->owner_.open_bus_access(region.base + offset, size, false);
  return ~uint64_t{0};
}

void GuestMemoryMap::on_open_bus_write(uc_engine*, uint64_t offset, unsigned size, uint64_t, void* user) {
  auto& region = *static_cast<OpenBusRegion*>(user);
  region.map->owner_.open_bus_access(region.base + offset, size, true);
}

void GuestMemoryMap::map_open_bus(uint64_t address) {
  const uint64_t window = address & ~(kOpenBusWindow - 1);
  if (!open_bus_windows_.insert(window).second) return;
  map_open_bus_window(window);
}

}  // namespace topolab::vcpu_internal
