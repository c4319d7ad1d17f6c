// SPDX-License-Identifier: GPL-2.0-or-later
// The two legacy 8259A PICs (master at 0x20-0x21, slave at 0xA0-0xA1) as a
// guest sees them when all it does is program and mask them.
//
// NO INTERRUPT IS EVER DELIVERED THROUGH THIS DEVICE. Nothing is wired to
// its IR pins and it has no INTR output: topolab delivers interrupts only
// through the local APICs. It exists so that the usual start-up sequence
// (ICW1-ICW4, then OCW1 = 0xFF to mask everything) lands on a register file
// that reads back what a real 8259A would:
// - the data port (offset 1) reads the IMR; ICW2-ICW4 written there during
//   initialisation are consumed by the sequence, not taken as a mask
//   (8259A data sheet, "Initialization Command Words");
// - the command port (offset 0) reads IRR or ISR as OCW3 selects, both
//   always 0, and a poll command reads 0 (no request);
// - ICW1 clears the IMR, as the data sheet says.
//
// Deviations: the IMR starts at 0xFF (all masked) instead of the data
// sheet's undefined state or QEMU's 0, since masked is the truth here.
// EOIs, rotation, special mask mode and auto-EOI are accepted, never acted
// on.
//
// Linux 6.1 (arch/x86/kernel/i8259.c) gets what it checks: probe_8259A
// writes 0xFF to the slave's IMR and 0xFB to the master's and reads 0xFB
// back (anything else would make it use the null PIC, and then
// quick_pit_calibrate and pit_calibrate_tsc refuse to run); init_8259A
// sends ICW1-ICW4 (vectors 0x30 and 0x38, ICW4 auto-EOI when check_timer
// re-initialises) and restores the masks; i8259A_irq_pending and
// i8259A_irq_real read IRR and ISR, both 0. With an I/O APIC, Linux
// routes the PIT through pin 2 (its check_timer passes: emu/pc_board.h)
// and never needs an interrupt from here; without one (noapic) it would
// wait for IRQ 0 through ExtINT, which this stub cannot give.
//
// Elcr is PIIX3's edge/level control register pair (0x4D0 for IRQ 0-7,
// 0x4D1 for IRQ 8-15): storage with QEMU's masks (IRQ 0, 1, 2, 8 and 13
// are always edge), read by Linux's save_ELCR and written by
// elcr_set_level_irq in PIC mode.
#pragma once

#include <cstdint>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class PicStub : public PortDevice {
 public:
  static constexpr uint16_t kMasterBase = 0x20;
  static constexpr uint16_t kSlaveBase = 0xa0;
  static constexpr uint32_t kPortCount = 2;  // offset 0 command, offset 1 data

  enum class Role { kMaster, kSlave };
  explicit PicStub(Role role) : role_(role) {}

  std::string name() const override { return role_ == Role::kMaster ? "pic-master" : "pic-slave"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  uint8_t mask() const { return imr_; }
  // The vector base ICW2 set (its low three bits are the IR number).
  uint8_t vector_base() const { return vector_base_; }

  // Snapshots (base/state_archive.h). role_ is the configuration.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(expect_, single_, needs_icw4_, imr_, vector_base_);
  }

 private:
  enum class Expect { kOcw, kIcw2, kIcw3, kIcw4 };

  Role role_;
  Expect expect_ = Expect::kOcw;
  bool single_ = false, needs_icw4_ = false;
  uint8_t imr_ = 0xff;
  uint8_t vector_base_ = 0;
};

class Elcr : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x4d0;
  static constexpr uint32_t kPortCount = 2;  // offset 0 IRQ 0-7, offset 1 IRQ 8-15
  // The bits that can be level (QEMU's elcr_mask for the two PICs).
  static constexpr uint8_t kMasterMask = 0xf8, kSlaveMask = 0xde;

  std::string name() const override { return "elcr"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // Bit n: IRQ n is level triggered.
  uint16_t level_triggered() const { return static_cast<uint16_t>(elcr_[0] | elcr_[1] << 8); }

  // Snapshots (base/state_archive.h).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(elcr_);
  }

 private:
  uint8_t elcr_[2] = {0, 0};  // all edge, as at reset
};

}  // namespace topolab
