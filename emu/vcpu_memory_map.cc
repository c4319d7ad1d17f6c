// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/vcpu_memory_map.h"

#include "emu/vcpu_blocks.h"
#include "emu/vcpu_contexts.h"

#include <fmt/format.h>

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
  for (auto it = open_bus_pages_.lower_bound(base); it != open_bus_pages_.end() && *it < base + size;) {
    check(uc_mem_unmap(uc_, *it, kPageSize), "uc_mem_unmap (open bus)");
    it = open_bus_pages_.erase(it);
  }
  auto window = std::make_unique<DeviceWindow>(DeviceWindow{this, &device, size});
  const uc_err err = uc_mmio_map(uc_, base, size, on_device_read, window.get(), on_device_write, window.get());
  if (err != UC_ERR_OK)
    throw std::invalid_argument(fmt::format("MMIO window {:#x}+{:#x}: {}", base, size, uc_strerror(err)));
  devices_.emplace(base, std::move(window));
}

void GuestMemoryMap::unmap_device(uint64_t base, uint64_t size) {
  const auto it = devices_.find(base);
  if (it == devices_.end() || it->second->size != size)
    throw std::invalid_argument(fmt::format("no MMIO window {:#x}+{:#x}", base, size));
  check(uc_mem_unmap(uc_, base, size), "uc_mem_unmap (MMIO)");
  devices_.erase(it);
}

// The offset is from the page's start.
uint64_t GuestMemoryMap::on_open_bus_read(uc_engine*, uint64_t offset, unsigned size, void* user) {
  auto& page = *static_cast<OpenBusPage*>(user);
  page.map->owner_.open_bus_access(page.base + offset, size, false);
  return ~uint64_t{0};
}

void GuestMemoryMap::on_open_bus_write(uc_engine*, uint64_t offset, unsigned size, uint64_t, void* user) {
  auto& page = *static_cast<OpenBusPage*>(user);
  page.map->owner_.open_bus_access(page.base + offset, size, true);
}

void GuestMemoryMap::map_open_bus(uint64_t page) {
  auto& slot = open_bus_windows_[page];
  if (!slot) slot = std::make_unique<OpenBusPage>(OpenBusPage{this, page});
  check(uc_mmio_map(uc_, page, kPageSize, on_open_bus_read, slot.get(), on_open_bus_write, slot.get()),
               "uc_mmio_map (open bus)");
  open_bus_pages_.insert(page);
}

}  // namespace topolab::vcpu_internal
