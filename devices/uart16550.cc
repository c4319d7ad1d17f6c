// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/uart16550.h"

namespace topolab {

namespace {
// Register offsets (16550A data sheet).
enum : uint16_t { kRbrThr = 0, kIer = 1, kIirFcr = 2, kLcr = 3, kMcr = 4, kLsr = 5, kMsr = 6, kScr = 7 };
constexpr uint8_t kLsrThre = 1u << 5;  // transmit holding register empty
constexpr uint8_t kLsrTemt = 1u << 6;  // transmitter empty
constexpr uint8_t kIirNoInterrupt = 0x01;
constexpr uint8_t kIirThre = 0x02;  // the cause: THR empty
constexpr uint8_t kIerThre = 1u << 1;
constexpr uint8_t kIirFifosEnabled = 0xc0;
constexpr uint8_t kMcrLoop = 1u << 4;
// Modem status with carrier, DSR and CTS up: a terminal is attached.
constexpr uint8_t kMsrConnected = 0xb0;
}  // namespace

uint8_t Uart16550::interrupt_id() const {
  return (ier_ & kIerThre) && thre_pending_ ? kIirThre : kIirNoInterrupt;
}

void Uart16550::update_irq() {
  const bool level = interrupt_id() != kIirNoInterrupt;
  if (level == irq_level_) return;
  irq_level_ = level;
  if (irq_) irq_(level);
}

uint32_t Uart16550::read(uint16_t offset, unsigned) {
  switch (offset) {
    case kRbrThr: return dlab() ? divisor_ & 0xff : 0;
    case kIer: return dlab() ? divisor_ >> 8 : ier_;
    case kIirFcr: {
      const uint8_t id = interrupt_id();
      if (id == kIirThre) {  // reading IIR acknowledges THRE
        thre_pending_ = false;
        update_irq();
      }
      return id | ((fcr_ & 1) ? kIirFifosEnabled : 0);
    }
    case kLcr: return lcr_;
    case kMcr: return mcr_;
    case kLsr: return kLsrThre | kLsrTemt;
    case kMsr:
      // Loopback wires the modem outputs back to the inputs (the classic
      // 8250 probe checks it): DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD.
      if (mcr_ & kMcrLoop)
        return ((mcr_ & 0x1) << 5) | ((mcr_ & 0x2) << 3) | ((mcr_ & 0x4) << 4) | ((mcr_ & 0x8) << 4);
      return kMsrConnected;
    case kScr: return scratch_;
  }
  return 0xff;
}

void Uart16550::write(uint16_t offset, unsigned, uint32_t value) {
  uint8_t byte = value & 0xff;
  switch (offset) {
    case kRbrThr:
      if (dlab()) {
        divisor_ = (divisor_ & 0xff00) | byte;
        break;
      }
      if (!(mcr_ & kMcrLoop)) {  // loopback keeps bytes on the chip
        ++bytes_sent_;
        sink_(byte);
      }
      thre_pending_ = false;  // THR is full...
      update_irq();
      thre_pending_ = true;  // ...and empty again, the byte sent
      update_irq();
      break;
    case kIer:
      if (dlab()) {
        divisor_ = (divisor_ & 0x00ff) | (byte << 8);
        break;
      }
      if ((byte & kIerThre) && !(ier_ & kIerThre)) thre_pending_ = true;  // THR is always empty
      ier_ = byte & 0x0f;
      update_irq();
      break;
    case kIirFcr: fcr_ = byte; break;
    case kLcr: lcr_ = byte; break;
    case kMcr: mcr_ = byte & 0x1f; break;
    case kScr: scratch_ = byte; break;
    default: break;  // LSR and MSR are read-only
  }
}

}  // namespace topolab
