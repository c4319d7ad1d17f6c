// A 16550A UART as guests drive it for output: the register file with the
// divisor latch, a transmitter that is always ready, and no receiver.
//
// Real hardware shifts bits out at the baud rate; here a byte written to THR
// leaves at once and LSR always reports THRE and TEMT, so polling guests
// never wait. Nothing is ever received (LSR.DR stays 0) and no interrupt is
// raised: IER is stored and read back only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class Uart16550 : public PortDevice {
 public:
  static constexpr uint16_t kCom1Base = 0x3f8;
  static constexpr uint32_t kPortCount = 8;

  using Sink = std::function<void(uint8_t)>;
  explicit Uart16550(Sink sink) : sink_(std::move(sink)) {}

  std::string name() const override { return "uart16550"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  bool dlab() const { return lcr_ & 0x80; }

  Sink sink_;
  uint8_t ier_ = 0, lcr_ = 0, mcr_ = 0, scratch_ = 0, fcr_ = 0;
  uint16_t divisor_ = 12;  // 9600 baud from the 1.8432 MHz clock
  uint64_t bytes_sent_ = 0;
};

}  // namespace topolab
