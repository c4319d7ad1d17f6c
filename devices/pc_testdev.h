// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's pc-testdev (hw/misc/pc-testdev.c), the ISA test device
// kvm-unit-tests drives, present only with `-device pc-testdev`:
// - ports 0xE0-0xE3 ("ioport") and 0xE8-0xEB ("ioport-byte"): one 32-bit
//   scratch register both read and write, each access at its byte offset
//   (an `outw` to 0xE1 writes bits 23:8);
// - port 0xE4 ("flush-page", 32-bit writes): QEMU re-protects the host page
//   behind the guest-physical address written, so KVM's next access to it
//   faults. topolab has no host mapping to drop: the write is accepted and
//   does nothing;
// - ports 0x2000-0x2017 ("irq-line", byte writes): port 0x2000 + n drives
//   ISA IRQ n to the value's truth (0 lowers, anything else raises). On
//   QEMU's pc, ISA IRQ n reaches I/O APIC pin n, except IRQ 0, which the
//   interrupt source override sends to pin 2; lines 16-23 reach pins
//   16-23. Reads of the line ports return all ones, as QEMU's
//   write-only region does;
// - 64 KiB of scratch MMIO ("iomem") at 0xFF000000, little endian.
// Accesses QEMU declares invalid (a word write to an IRQ-line port, a byte
// write to flush-page) are ignored, as QEMU ignores them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/memory_map.h"
#include "devices/mmio_bus.h"
#include "devices/port_bus.h"

namespace topolab {

class PcTestdev : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0xe0;  // ioport, flush-page, ioport-byte
  static constexpr uint32_t kPortCount = 12;
  static constexpr uint16_t kFlushPage = 0x4, kIoportByte = 0x8;  // offsets from kBase
  static constexpr uint16_t kIrqLineBase = 0x2000;
  static constexpr unsigned kIrqLines = 24;
  static constexpr uint64_t kIomemBase = memory_map::kPcTestdevIomemBase;
  static constexpr uint32_t kIomemSize = 0x10000;

  // `set_irq(line, asserted)` drives ISA IRQ `line` (0-23), which the
  // board wires to the 8259s and the I/O APIC as QEMU's gsi_handler does.
  explicit PcTestdev(std::function<void(unsigned line, bool asserted)> set_irq);

  std::string name() const override { return "pc-testdev"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // The IRQ-line ports, a device of their own on the bus.
  PortDevice& irq_lines() { return irq_lines_; }

  // The iomem window, a device of its own on the MMIO bus.
  MmioDevice& iomem() { return iomem_window_; }
  // `offset` within the iomem window.
  uint64_t iomem_read(uint64_t offset, unsigned size) const;
  void iomem_write(uint64_t offset, unsigned size, uint64_t value);

  uint32_t scratch() const { return scratch_; }

  // Snapshots (base/state_archive.h). The IRQ lines keep no level: each
  // write drives the I/O APIC pin, which keeps it.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(scratch_, iomem_);
  }

 private:
  class IrqLines : public PortDevice {
   public:
    explicit IrqLines(PcTestdev& dev) : dev_(dev) {}
    std::string name() const override { return "pc-testdev-irq-line"; }
    uint32_t read(uint16_t, unsigned) override { return 0xffffffffu; }
    void write(uint16_t offset, unsigned size, uint32_t value) override;

   private:
    PcTestdev& dev_;
  };

  std::function<void(unsigned, bool)> set_irq_;
  IrqLines irq_lines_;
  MmioWindowOf<PcTestdev, &PcTestdev::iomem_read, &PcTestdev::iomem_write> iomem_window_{*this, "pc-testdev iomem"};
  uint32_t scratch_ = 0;
  std::vector<uint8_t> iomem_;
};

}  // namespace topolab
