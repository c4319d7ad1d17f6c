// SPDX-License-Identifier: GPL-2.0-or-later
// The Bochs BIOS power-off port at 0x8900: the byte string "Shutdown",
// written one character at a time, powers the machine off. kvm-unit-tests'
// exit() falls back to it when isa-debug-exit is not there. A byte that
// breaks the string starts it again (from its first letter if it is an
// 'S'), as the Bochs BIOS matches it. Reads return all ones.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "devices/port_bus.h"

namespace topolab {

class BochsShutdown : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x8900;
  static constexpr uint32_t kPortCount = 1;
  static constexpr std::string_view kString = "Shutdown";

  explicit BochsShutdown(std::function<void()> on_power_off) : on_power_off_(std::move(on_power_off)) {}

  std::string name() const override { return "bochs-shutdown"; }
  uint32_t read(uint16_t, unsigned) override { return 0xffffffffu; }
  void write(uint16_t, unsigned size, uint32_t value) override {
    if (size != 1) return;
    const char c = static_cast<char>(value);
    matched_ = c == kString[matched_] ? matched_ + 1 : c == kString[0] ? 1 : 0;
    if (matched_ == kString.size()) {
      matched_ = 0;
      on_power_off_();
    }
  }

  // Snapshots (base/state_archive.h): how much of kString was written.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(matched_);
  }

 private:
  std::function<void()> on_power_off_;
  size_t matched_ = 0;
};

}  // namespace topolab
