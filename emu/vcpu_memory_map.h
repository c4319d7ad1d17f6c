// SPDX-License-Identifier: GPL-2.0-or-later
// The guest-physical map of one vCPU's engine beyond its RAM: the devices'
// MMIO windows and the open-bus pages, each a uc_mmio_map region whose
// callbacks Unicorn calls synchronously in the middle of a block (the
// notes). A stop requested from a device write is taken at the next block
// boundary like any other request, so the write is not replayed
// (RequestStopFromAnMmioWriteDoesNotReplayTheWrite). Part of the vCPU
// engine: only the vcpu_*.cc files include it.
#pragma once

#include "emu/vcpu.h"

#include <unicorn/unicorn.h>

#include <cstdint>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace topolab::vcpu_internal {

// Maps each of RAM's regions into the engine at its guest-physical address,
// on the host pages every engine shares (uc_mem_map_ptr); the gaps between
// them stay unmapped. `what` names the engine in an error.
void map_guest_ram(uc_engine* uc, GuestRam& ram, const char* what);

// The guest-physical ranges without RAM, as uc_hook_add takes a range (first
// and last address, inclusive): each gap between regions, and everything
// above the top. An unmapped-access hook over exactly these leaves RAM's
// stores on the engine's fast path (see UnicornVcpu::Engine's constructor).
std::vector<std::pair<uint64_t, uint64_t>> ranges_without_ram(const GuestRam& ram);

class GuestMemoryMap {
 public:
  // What the map's callbacks need of their vCPU. Each runs inside the
  // engine, so none may let an exception unwind through Unicorn's C frames.
  class Owner {
   public:
    virtual uint64_t device_read(MmioHandler& device, uint64_t offset, unsigned size) = 0;
    virtual void device_write(MmioHandler& device, uint64_t offset, unsigned size, uint64_t value) = 0;
    virtual void open_bus_access(uint64_t physical, unsigned size, bool write) = 0;

   protected:
    ~Owner() = default;
  };

  // Windows and open bus lie outside RAM's regions.
  GuestMemoryMap(uc_engine* uc, const GuestRam& ram, Owner& owner) : uc_(uc), ram_(ram), owner_(owner) {}
  GuestMemoryMap(const GuestMemoryMap&) = delete;
  GuestMemoryMap& operator=(const GuestMemoryMap&) = delete;

  // Whole 4 KiB pages outside RAM; a device put on a page that was open bus
  // takes it over. Bad windows throw std::invalid_argument.
  void map_device(uint64_t base, uint64_t size, MmioHandler& device);
  void unmap_device(uint64_t base, uint64_t size);
  // A page with no RAM and no device: all ones read, stores dropped, each
  // access told to the owner.
  void map_open_bus(uint64_t page);
  // The open-bus pages mapped now (a snapshot maps them again).
  const std::set<uint64_t>& open_bus_pages() const { return open_bus_pages_; }

 private:
  struct DeviceWindow {
    GuestMemoryMap* map;
    MmioHandler* device;
    uint64_t size;
  };
  struct OpenBusPage {
    GuestMemoryMap* map;
    uint64_t base;
  };
  static uint64_t on_device_read(uc_engine*, uint64_t offset, unsigned size, void* user);
  static void on_device_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user);
  static uint64_t on_open_bus_read(uc_engine*, uint64_t offset, unsigned size, void* user);
  static void on_open_bus_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user);

  uc_engine* const uc_;
  const GuestRam& ram_;
  Owner& owner_;
  std::unordered_map<uint64_t, std::unique_ptr<DeviceWindow>> devices_;  // by base
  std::set<uint64_t> open_bus_pages_;                                     // mapped now
  std::unordered_map<uint64_t, std::unique_ptr<OpenBusPage>> open_bus_windows_;  // by page, kept once made
};

}  // namespace topolab::vcpu_internal
