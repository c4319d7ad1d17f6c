// SPDX-License-Identifier: GPL-2.0-or-later
// The I/O APIC of QEMU's pc machine as a pure register model: Intel 82093AA
// I/O APIC datasheet (order 290566), with the EOI register the ICH family
// added (version 0x20, as QEMU's default `ioapic` has it). 24 pins, one
// redirection entry each. A write, a pin change or an EOI *returns* the
// interrupt messages it caused; the machine routes them over the APIC bus
// (devices/apic_bus.h) exactly as it routes IPIs.
//
// Registers (datasheet 3.0, 3.2): IOREGSEL at offset 0x00 selects the
// indirect register IOWIN at 0x10 reads and writes: 0x00 ID (bits 27:24
// writable), 0x01 version (0x170020: 24 entries, version 0x20, read only),
// 0x02 arbitration (reads the ID, read only), 0x10 + 2n / 0x11 + 2n the low
// and high halves of redirection entry n. Offset 0x40 is the EOI register:
// writing a vector there clears the remote IRR of every level-triggered
// entry with that vector, as an EOI message from a local APIC does.
//
// Delivery (datasheet 3.2.4, QEMU's ioapic_service): an edge-triggered
// entry sends one message for each rising edge of its pin while unmasked
// (an edge while masked is lost); a level-triggered entry sends one while
// its pin is asserted, unmasked and remote IRR is clear, and sets remote
// IRR as it sends. An EOI for the vector clears remote IRR and, if the pin
// is still asserted, sends again; so does unmasking or rewriting an entry
// whose pin is asserted. Remote IRR is set whether or not any local APIC
// accepts the message (QEMU does the same).
//
// Not modelled (deliberately):
// - Polarity (bit 13) is stored and read back but not applied: pin levels
//   are logical (asserted or not), as QEMU's qemu_set_irq levels are.
// - Delivery status (bit 12) always reads 0: delivery is instantaneous.
// - Delivery modes 011b and 110b are reserved: such an entry sends nothing.
//   ExtINT is sent as a message, but no 8259 answers the INTA, so local
//   APICs refuse it. SMI is sent and refused likewise.
// - Only 32-bit accesses to IOWIN and the EOI register do anything (as in
//   QEMU); IOREGSEL takes any width. Other offsets read 0 and ignore writes.
// - Interrupt remapping (the 16-bit remappable format) and the storm
//   throttling QEMU applies after 10,000 successive EOIs with the line
//   still asserted.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/memory_map.h"
#include "devices/local_apic.h"

namespace topolab {

namespace ioapic {
// MMIO offsets in the page.
inline constexpr uint32_t MMIO_IOREGSEL = 0x00;
inline constexpr uint32_t MMIO_IOWIN = 0x10;
inline constexpr uint32_t MMIO_EOI = 0x40;
// Indirect registers (IOREGSEL values).
inline constexpr uint32_t REG_ID = 0x00;
inline constexpr uint32_t REG_VERSION = 0x01;
inline constexpr uint32_t REG_ARBITRATION = 0x02;
inline constexpr uint32_t REG_REDIRECTION_BASE = 0x10;
inline constexpr uint32_t ID_MASK = 0x0f000000;  // ID[27:24]
inline constexpr unsigned kPins = 24;
inline constexpr uint32_t kVersion = 0x20;
inline constexpr uint32_t VERSION_VALUE = kVersion | ((kPins - 1) << 16);
// Redirection entry fields (datasheet 3.2.4).
inline constexpr uint64_t RTE_VECTOR = 0xff;
inline constexpr unsigned RTE_DELIVERY_MODE_SHIFT = 8;
inline constexpr uint64_t RTE_DEST_LOGICAL = 1ull << 11;
inline constexpr uint64_t RTE_DELIVERY_STATUS = 1ull << 12;
inline constexpr uint64_t RTE_POLARITY_LOW = 1ull << 13;
inline constexpr uint64_t RTE_REMOTE_IRR = 1ull << 14;
inline constexpr uint64_t RTE_TRIGGER_LEVEL = 1ull << 15;
inline constexpr uint64_t RTE_MASKED = 1ull << 16;
inline constexpr unsigned RTE_DESTINATION_SHIFT = 56;
// Bits the hardware owns: a guest write leaves them as they were.
inline constexpr uint64_t RTE_READ_ONLY = RTE_DELIVERY_STATUS | RTE_REMOTE_IRR;
}  // namespace ioapic

// Interrupt messages a register write, a pin change or an EOI caused, in
// pin order.
using IoApicMessages = std::vector<ApicMessage>;

class IoApic {
 public:
  static constexpr uint64_t kBase = memory_map::kIoApicBase;
  static constexpr uint32_t kMmioSize = 0x1000;

  // Power-on (datasheet 3.0): ID 0, every entry masked, every pin low.
  IoApic();

  // --- The page at kBase: `offset` within it ---------------------------
  uint32_t mmio_read(uint32_t offset, unsigned size) const;
  IoApicMessages mmio_write(uint32_t offset, unsigned size, uint32_t value);

  // --- The pins -----------------------------------------------------------
  // Drives pin `pin` (GSI) to `asserted`; pins past 23 are ignored.
  IoApicMessages set_pin(unsigned pin, bool asserted);
  bool pin_asserted(unsigned pin) const { return pin < ioapic::kPins && ((lines_ >> pin) & 1); }

  // --- EOI ----------------------------------------------------------------
  // A local APIC EOIed level-triggered `vector` (its TMR bit was set): the
  // EOI message every I/O APIC hears (SDM 10.8.5), or the EOI register.
  IoApicMessages eoi(uint8_t vector);

  uint64_t redirection(unsigned pin) const { return pin < ioapic::kPins ? table_[pin] : 0; }
  uint8_t id() const { return id_; }

  // Snapshots (base/state_archive.h). pending_ is empty between calls today
  // (service() sends each edge at once), and kept so that nothing is assumed.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(id_, select_, lines_, pending_, table_);
  }

 private:
  uint32_t read_register(uint32_t index) const;
  IoApicMessages write_register(uint32_t index, uint32_t value);
  // Sends what every pin owes (QEMU's ioapic_service): edge requests
  // latched in pending_, level pins asserted without remote IRR.
  IoApicMessages service();
  // The message entry `pin` sends, or nothing for a reserved delivery mode.
  static std::optional<ApicMessage> message_for(uint64_t entry);

  uint8_t id_ = 0;
  uint32_t select_ = 0;  // IOREGSEL
  uint32_t lines_ = 0;   // pin levels
  uint32_t pending_ = 0;  // edges seen unmasked and not yet sent
  std::array<uint64_t, ioapic::kPins> table_{};
};

}  // namespace topolab
