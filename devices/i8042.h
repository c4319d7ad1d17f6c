// SPDX-License-Identifier: GPL-2.0-or-later
// The 8042 keyboard controller at ports 0x60/0x64, as far as a guest uses
// it to reset the machine: command 0xFE written to 0x64 pulses the CPU
// reset line (the "keyboard reset" Linux's reboot=k and kvm-unit-tests'
// init.c use). No keyboard or mouse is attached and no other command is
// acted on; the status register (0x64) reads 0x1C (self-test passed,
// command last written, keyboard not inhibited: QEMU's power-on status
// after self-test) with both buffers empty, so a guest that waits for the
// input buffer to drain before writing a command never waits. The data
// port (0x60) reads 0 and ignores writes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

// The data port at 0x60; the status/command port at 0x64 is command_port().
class I8042 : public PortDevice {
 public:
  static constexpr uint16_t kDataPort = 0x60, kCommandPort = 0x64;
  static constexpr uint8_t kStatus = 0x1c;
  static constexpr uint8_t kCommandPulseReset = 0xfe;

  // `on_reset` runs for every reset command.
  explicit I8042(std::function<void()> on_reset) : on_reset_(std::move(on_reset)), command_(*this) {}

  std::string name() const override { return "i8042-data"; }
  uint32_t read(uint16_t, unsigned) override { return 0; }
  void write(uint16_t, unsigned, uint32_t) override {}

  PortDevice& command_port() { return command_; }

 private:
  class CommandPort : public PortDevice {
   public:
    explicit CommandPort(I8042& owner) : owner_(owner) {}
    std::string name() const override { return "i8042-command"; }
    uint32_t read(uint16_t, unsigned) override { return kStatus; }
    void write(uint16_t, unsigned size, uint32_t value) override {
      if ((value & 0xff) == kCommandPulseReset) owner_.on_reset_();
    }

   private:
    I8042& owner_;
  };

  std::function<void()> on_reset_;
  CommandPort command_;
};

}  // namespace topolab
