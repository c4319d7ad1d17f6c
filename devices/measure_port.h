// SPDX-License-Identifier: GPL-2.0-or-later
// The measuring-window port: a guest brackets the part of its run that a
// benchmark measures by writing 1 (begin) and 2 (end) to port 0x4A0, and the
// machine snapshots its counters at both, so rates come from the benchmark
// alone and not from boot or shutdown. topolab's own device: QEMU ignores
// writes to an unassigned port, so the same image runs there unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class MeasurePort : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x4a0;
  static constexpr uint32_t kPortCount = 4;
  enum class Mark : uint32_t { Begin = 1, End = 2 };

  // `on_mark` gets each Begin and End; other values are ignored (reads of
  // the port say 0xFFFFFFFF, as an unassigned port does under QEMU).
  explicit MeasurePort(std::function<void(Mark)> on_mark) : on_mark_(std::move(on_mark)) {}

  std::string name() const override { return "measure-window"; }
  uint32_t read(uint16_t, unsigned) override { return 0xffffffffu; }
  void write(uint16_t offset, unsigned size, uint32_t value) override {
    if (offset != 0) return;
    if (value == static_cast<uint32_t>(Mark::Begin) || value == static_cast<uint32_t>(Mark::End))
      on_mark_(static_cast<Mark>(value));
  }

 private:
  std::function<void(Mark)> on_mark_;
};

}  // namespace topolab
