// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's isa-debug-exit (iobase=0xf4, iosize=4): a write ends the run with
// the written value. QEMU itself then exits with (value << 1) | 1; topolab
// keeps the value and lets the command line choose the mapping.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class DebugExit : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0xf4;
  static constexpr uint32_t kPortCount = 4;

  // `on_exit` runs once, on the first write: the machine stops the vCPU.
  explicit DebugExit(std::function<void()> on_exit) : on_exit_(std::move(on_exit)) {}

  std::string name() const override { return "isa-debug-exit"; }
  uint32_t read(uint16_t, unsigned) override { return 0xffffffffu; }
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // The value the guest wrote, once it has.
  std::optional<uint32_t> value() const { return value_; }

  // Snapshots (base/state_archive.h).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(value_);
  }

 private:
  std::function<void()> on_exit_;
  std::optional<uint32_t> value_;
};

}  // namespace topolab
