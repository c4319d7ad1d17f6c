// SPDX-License-Identifier: GPL-2.0-or-later
// The two cascaded 8259A PICs of a PC (master at 0x20-0x21, slave at
// 0xA0-0xA1, the slave's INT on the master's IR2) and PIIX3's edge/level
// control registers (0x4D0-0x4D1), as the 8259A data sheet describes them
// and QEMU 7.2's hw/intc/i8259.c behaves:
// - IR inputs (set_irq): an edge-triggered input latches a rising edge into
//   IRR whether or not the IMR masks it; a level-triggered one (ELCR) keeps
//   IRR equal to the line. The IMR only keeps a request from INT.
// - INT (output()) is high while the highest-priority unmasked request
//   beats the highest-priority in-service level (ISR), rotation
//   (priority_add) included; special mask mode leaves masked ISR bits out,
//   and special fully nested mode on the master lets the slave interrupt
//   again while IR2 is in service.
// - INTA (acknowledge()): the vector ICW2's base + IR, the request moved
//   from IRR to ISR (not with auto-EOI; a level request stays in IRR), the
//   cascade through IR2 to the slave. With nothing to take, the spurious
//   IR7 of the chip that raised INT, as hardware answers.
// - ICW1-ICW4, OCW1 (the IMR), OCW2 (non-specific, specific and rotating
//   EOIs, priority rotation), OCW3 (IRR or ISR readback, poll, special mask).
//
// Who listens to INT: the board (emu/pc_board.h) hands each change to the
// machine, which passes INTR to the local APICs that take it (LINT0 as
// ExtINT, or a hardware-disabled APIC: LocalApic::accepts_pic_intr).
//
// Deviation: the IMR starts at 0xFF (all masked), not QEMU's 0. topolab
// has no BIOS to mask the PICs before the guest runs, and a guest that
// never touches them (every Multiboot testcase) must not see ISA lines
// interrupt it through LINT0. The firmware state the QEMU front sets up
// (firmware/legacy_bios.h) writes SeaBIOS's masks.
//
// ELCR: QEMU's masks (IRQ 0, 1, 2, 8 and 13 are always edge), read by
// Linux's save_ELCR and written by elcr_set_level_irq in PIC mode.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class Pic8259 {
 public:
  static constexpr uint16_t kMasterBase = 0x20;
  static constexpr uint16_t kSlaveBase = 0xa0;
  static constexpr uint32_t kPortCount = 2;  // offset 0 command, offset 1 data
  static constexpr uint16_t kElcrBase = 0x4d0;
  static constexpr uint32_t kElcrPortCount = 2;  // offset 0 IRQ 0-7, offset 1 IRQ 8-15
  // The ELCR bits that can be level (QEMU's elcr_mask for the two PICs).
  static constexpr uint8_t kElcrMasterMask = 0xf8, kElcrSlaveMask = 0xde;
  static constexpr unsigned kLines = 16;
  static constexpr unsigned kCascadeInput = 2;  // the master's IR the slave's INT drives

  // `output_changed` hears every change of INT, whatever caused it (a
  // line, a port write, an INTA), with the new level.
  explicit Pic8259(std::function<void(bool)> output_changed);
  Pic8259(const Pic8259&) = delete;
  Pic8259& operator=(const Pic8259&) = delete;

  // ISA IRQ `line` (0-15; 2 is the cascade and not a line) goes to `level`.
  void set_irq(unsigned line, bool level);
  // INT of the master: a request waits for an INTA.
  bool output() const { return output_; }
  // INTA: the vector the pair puts on the bus (see the top).
  uint8_t acknowledge();
  // IRQ `line` can raise INT: its IMR bit clear, and for a slave line the
  // master's IR2 open as well.
  bool line_unmasked(unsigned line) const;

  PortDevice& master_ports() { return master_; }
  PortDevice& slave_ports() { return slave_; }
  PortDevice& elcr_ports() { return elcr_; }

  // Register views, for tests and the monitor.
  uint8_t imr(bool slave) const { return chip(slave).imr; }
  uint8_t irr(bool slave) const { return chip(slave).irr; }
  uint8_t isr(bool slave) const { return chip(slave).isr; }
  uint8_t vector_base(bool slave) const { return chip(slave).irq_base; }
  // Bit n: IRQ n is level triggered.
  uint16_t level_triggered() const { return static_cast<uint16_t>(master_.elcr | slave_.elcr << 8); }

  // Snapshots (base/state_archive.h).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(master_, slave_, output_);
  }

 private:
  enum class Init : uint8_t { None, Icw2, Icw3, Icw4 };

  // One 8259A, with its ELCR byte.
  struct Chip final : PortDevice {
    Chip(Pic8259& pair, bool slave) : pair(pair), is_slave(slave) {}
    std::string name() const override { return is_slave ? "pic-slave" : "pic-master"; }
    uint32_t read(uint16_t offset, unsigned size) override;
    void write(uint16_t offset, unsigned size, uint32_t value) override;

    // The highest priority (0 = highest, after rotation) in `mask`; 8 for none.
    unsigned priority_of(uint8_t mask) const;
    // The IR this chip asks to be serviced; -1 for none.
    int requested_input() const;
    // Sets or clears one input; edges latch as the ELCR says.
    void set_input(unsigned ir, bool level);
    // The INTA part this chip plays for input `ir`.
    void take(unsigned ir);
    void init_reset();

    Pic8259& pair;
    bool is_slave;
    uint8_t irr = 0, imr = 0xff, isr = 0, last_irr = 0, elcr = 0;
    uint8_t priority_add = 0, irq_base = 0;
    bool read_isr = false, poll = false, special_mask = false, auto_eoi = false, rotate_on_auto_eoi = false;
    bool special_fully_nested = false, needs_icw4 = false, single = false;
    Init init = Init::None;

    template <class Archive>
    void serialize(Archive& ar) {
      ar(irr, imr, isr, last_irr, elcr, priority_add, irq_base, read_isr, poll, special_mask, auto_eoi,
         rotate_on_auto_eoi, special_fully_nested, needs_icw4, single, init);
    }
  };

  // PIIX3's ELCR pair, byte by byte as QEMU splits a wider access.
  struct ElcrPorts final : PortDevice {
    explicit ElcrPorts(Pic8259& pair) : pair(pair) {}
    std::string name() const override { return "elcr"; }
    uint32_t read(uint16_t offset, unsigned size) override;
    void write(uint16_t offset, unsigned size, uint32_t value) override;
    Pic8259& pair;
  };

  const Chip& chip(bool slave) const { return slave ? slave_ : master_; }
  // INT after any change: the slave's output into the master's IR2, then
  // the master's to the listener if it moved.
  void update();

  std::function<void(bool)> output_changed_;
  Chip master_{*this, false}, slave_{*this, true};
  ElcrPorts elcr_{*this};
  bool output_ = false;
};

}  // namespace topolab
