// SPDX-License-Identifier: GPL-2.0-or-later
// A 16550A UART as guests drive it for output: the register file with the
// divisor latch, a transmitter that is always ready, its THRE interrupt,
// and no receiver.
//
// Real hardware shifts bits out at the baud rate; here a byte written to THR
// leaves at once and LSR always reports THRE and TEMT, so polling guests
// never wait. Nothing is ever received (LSR.DR stays 0).
//
// The THRE interrupt follows QEMU's serial.c, which Linux's 8250 driver
// relies on for everything user space writes: enabling it (IER bit 1) while
// THR is empty makes it pending, reading IIR while it is the cause clears
// it, and a write to THR clears it and, the byte gone at once, sets it
// again: the IRQ line falls and rises, one edge per byte. Like QEMU, the
// line does not depend on MCR.OUT2.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class Uart16550 : public PortDevice {
 public:
  static constexpr uint16_t kCom1Base = 0x3f8;
  static constexpr unsigned kCom1Gsi = 4;  // ISA IRQ 4, the IOAPIC pin of the same number (no MADT override)
  static constexpr uint32_t kPortCount = 8;

  using Sink = std::function<void(uint8_t)>;
  // The UART's interrupt output (ISA IRQ 4 for COM1), called on each change.
  using IrqLine = std::function<void(bool asserted)>;
  explicit Uart16550(Sink sink, IrqLine irq = {}) : sink_(std::move(sink)), irq_(std::move(irq)) {}

  std::string name() const override { return "uart16550"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  uint64_t bytes_sent() const { return bytes_sent_; }

  // Snapshots (base/state_archive.h). irq_level_ is the level the line was
  // last driven to; the receiver keeps its own copy (the I/O APIC's pin).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(thre_pending_, irq_level_, ier_, lcr_, mcr_, scratch_, fcr_, divisor_, bytes_sent_);
  }

 private:
  bool dlab() const { return lcr_ & 0x80; }
  uint8_t interrupt_id() const;
  void update_irq();

  Sink sink_;
  IrqLine irq_;
  bool thre_pending_ = false;
  bool irq_level_ = false;
  uint8_t ier_ = 0, lcr_ = 0, mcr_ = 0, scratch_ = 0, fcr_ = 0;
  uint16_t divisor_ = 12;  // 9600 baud from the 1.8432 MHz clock
  uint64_t bytes_sent_ = 0;
};

}  // namespace topolab
