// SPDX-License-Identifier: GPL-2.0-or-later
// Guest-physical MMIO space outside RAM: devices claim ranges, the bus
// routes loads and stores by offset, as PortBus does for I/O ports. Devices
// know only offsets within their own range. The machine maps each range
// into every vCPU's engine (the local APIC page, which moves with its
// vCPU's IA32_APIC_BASE, is the vCPU's own and not on this bus).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace topolab {

class MmioDevice {
 public:
  virtual ~MmioDevice() = default;
  virtual std::string name() const = 0;
  virtual uint64_t read(uint64_t offset, unsigned size) = 0;
  virtual void write(uint64_t offset, unsigned size, uint64_t value) = 0;
};

// A window of a device that is not an MmioDevice itself (a PCI BAR, a
// second register block): each access goes to two member functions of
// `Owner`, which the window outlives not.
template <typename Owner, auto Read, auto Write>
class MmioWindowOf : public MmioDevice {
 public:
  MmioWindowOf(Owner& owner, std::string name) : owner_(owner), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  uint64_t read(uint64_t offset, unsigned size) override { return (owner_.*Read)(offset, size); }
  void write(uint64_t offset, unsigned size, uint64_t value) override { (owner_.*Write)(offset, size, value); }

 private:
  Owner& owner_;
  std::string name_;
};

class MmioBus {
 public:
  struct Range {
    uint64_t base = 0;
    uint64_t size = 0;
    MmioDevice* device = nullptr;
    bool contains(uint64_t address) const { return address >= base && address - base < size; }
    bool overlaps(uint64_t other_base, uint64_t other_size) const {
      return other_base < base + size && base < other_base + other_size;
    }
  };

  // Throws std::invalid_argument for a zero-sized range, one that wraps
  // past 2^64 or is not whole 4 KiB pages (the unit an engine maps), or
  // one that overlaps a range already claimed.
  void attach(uint64_t base, uint64_t size, MmioDevice& device);

  // The range holding `address`, or nullptr.
  const Range* find(uint64_t address) const;
  // Every claimed range, by base address.
  const std::vector<Range>& ranges() const { return ranges_; }
  // Whether [base, base + size) touches a claimed range.
  bool overlaps(uint64_t base, uint64_t size) const;

 private:
  std::vector<Range> ranges_;  // sorted by base
};

}  // namespace topolab
