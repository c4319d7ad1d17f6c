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
#include <map>
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

  // Whole 4 KiB pages outside RAM; a device put where open bus was takes
  // the place over, and open bus takes back a device's place when it goes.
  // Bad windows throw std::invalid_argument.
  void map_device(uint64_t base, uint64_t size, MmioHandler& device);
  void unmap_device(uint64_t base, uint64_t size);

  // Open bus (no RAM and no device there: all ones read, stores dropped,
  // each access told to the owner) is mapped an aligned window at a time,
  // the window less RAM and devices, in as few regions as that takes. Page
  // by page, a guest touching N pages (one that scans the address space)
  // cost N rebuilds of the engine's flat view of N regions each, quadratic:
  // minutes of host time for a 1 ms run (robustness.sh, seed 14).
  static constexpr uint64_t kOpenBusWindow = uint64_t{1} << 30;
  // Opens the window around `address` (nothing if it is open).
  void map_open_bus(uint64_t address);
  // The open windows' bases (a snapshot opens them again).
  const std::set<uint64_t>& open_bus_windows() const { return open_bus_windows_; }

 private:
  struct DeviceWindow {
    GuestMemoryMap* map;
    MmioHandler* device;
    uint64_t size;
  };
  struct OpenBusRegion {
    GuestMemoryMap* map;
    uint64_t base;
  };
  // The open windows among those [base, base + size) touches.
  std::vector<uint64_t> open_windows_in(uint64_t base, uint64_t size) const;
  // Maps an open window's free ranges (less RAM and devices), or unmaps them.
  void map_open_bus_window(uint64_t window);
  void unmap_open_bus_window(uint64_t window);
  static uint64_t on_device_read(uc_engine*, uint64_t offset, unsigned size, void* user);
  static void on_device_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user);
  static uint64_t on_open_bus_read(uc_engine*, uint64_t offset, unsigned size, void* user);
  static void on_open_bus_write(uc_engine*, uint64_t offset, unsigned size, uint64_t value, void* user);

  uc_engine* const uc_;
  const GuestRam& ram_;
  Owner& owner_;
  std::unordered_map<uint64_t, std::unique_ptr<DeviceWindow>> devices_;  // by base
  std::set<uint64_t> open_bus_windows_;                                   // open now
  std::map<uint64_t, uint64_t> open_bus_regions_;                         // mapped now: base -> size
  // Each region's callback data by its base, kept once made and reused when
  // a region is mapped there again (a device came or went in its window):
  // a guest that moves its APIC page to and fro allocates nothing more.
  std::unordered_map<uint64_t, std::unique_ptr<OpenBusRegion>> open_bus_data_;
};

}  // namespace topolab::vcpu_internal
