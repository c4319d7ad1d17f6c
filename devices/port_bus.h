// SPDX-License-Identifier: GPL-2.0-or-later
// The x86 I/O-port space: devices claim ranges, the bus routes IN/OUT by
// offset. Devices know only offsets within their own range.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace topolab {

class PortDevice {
 public:
  virtual ~PortDevice() = default;
  virtual std::string name() const = 0;
  virtual uint32_t read(uint16_t offset, unsigned size) = 0;
  virtual void write(uint16_t offset, unsigned size, uint32_t value) = 0;
};

class PortBus {
 public:
  // Throws std::invalid_argument for a zero-sized range, one that runs past
  // 0xFFFF, or one that overlaps a range already claimed.
  void attach(uint16_t base, uint32_t size, PortDevice& device);

  // Ports nobody claims read as all ones and ignore writes, like an ISA bus
  // with nothing on it; the counters say how often a guest did that.
  uint32_t read(uint16_t port, unsigned size);
  void write(uint16_t port, unsigned size, uint32_t value);

  uint64_t unclaimed_accesses() const { return unclaimed_; }
  // The device that claims `port`, or nullptr.
  const PortDevice* device_at(uint16_t port) const {
    const auto* range = find(port);
    return range ? range->second.device : nullptr;
  }

  // Snapshots (base/state_archive.h). The ranges are the board's wiring,
  // which its construction attaches again.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(unclaimed_);
  }

 private:
  struct Range {
    uint32_t size;
    PortDevice* device;
  };
  const std::pair<const uint16_t, Range>* find(uint16_t port) const;

  std::map<uint16_t, Range> ranges_;  // keyed by base
  uint64_t unclaimed_ = 0;
};

}  // namespace topolab
