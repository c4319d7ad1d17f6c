// SPDX-License-Identifier: GPL-2.0-or-later
// The 8259A pair (devices/pic8259.h) and PIIX3's ELCR, driven by a program
// of port reads and writes of every width, ISA line changes and INTA
// cycles. The invariants are the 8259A data sheet's:
// - ICW1 (a command-port write with bit 4 set) clears the IMR and ISR and
//   forgets edge requests, and starts the initialisation sequence: the
//   data-port writes that follow are ICW2, then ICW3 unless ICW1 said single
//   (SNGL), then ICW4 if ICW1 asked (IC4); none of them is a mask; ICW2's
//   bits 7:3 are the vector base;
// - afterwards a data-port write is OCW1, the IMR, which the data port reads
//   back (unless a poll is armed: then the read is the poll byte);
// - an edge-triggered input's IRR bit appears only on a rising edge; a
//   level-triggered one's equals its line; no port write or line change
//   puts anything in service (ISR bits come only from INTA and polls);
// - INT is what the listener last heard, never raised by a fully masked
//   master; INTA with INT low is the master's spurious IR7 and changes no
//   ISR; with INT high it is base + an IR whose request was unmasked
//   (through IR2 for the slave);
// - ELCR: each byte reads back what was written under QEMU's mask (IRQ 0,
//   1, 2, 8 and 13 are always edge), ports past it read all ones, and
//   level_triggered() is the two bytes.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "devices/pic8259.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

// The data sheet's initialisation sequence and what the IMR must be.
struct Shadow {
  enum class Next { Ocw1, Icw2, Icw3, Icw4 } next = Next::Ocw1;
  bool single = false, icw4 = false, poll = false;
  uint8_t imr = 0xff;  // the documented reset state (all masked)
  uint8_t vector_base = 0;

  // True for ICW1.
  bool command(uint8_t byte) {
    if ((byte & 0x18) == 0x08 && (byte & 0x04)) poll = true;  // OCW3 with P
    if (!(byte & 0x10)) return false;                          // OCW2 / OCW3
    single = byte & 0x02;
    icw4 = byte & 0x01;
    poll = false;
    imr = 0;
    vector_base = 0;
    next = Next::Icw2;
    return true;
  }
  void data(uint8_t byte) {
    switch (next) {
      case Next::Icw2:
        vector_base = byte & 0xf8;
        next = !single ? Next::Icw3 : icw4 ? Next::Icw4 : Next::Ocw1;
        break;
      case Next::Icw3: next = icw4 ? Next::Icw4 : Next::Ocw1; break;
      case Next::Icw4: next = Next::Ocw1; break;
      case Next::Ocw1: imr = byte; break;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  std::optional<bool> heard;
  Pic8259 pic([&](bool level) {
    FUZZ_CHECK(heard.value_or(false) != level, "INT reported {} twice in a row", level);
    heard = level;
  });
  PortBus bus;
  bus.attach(Pic8259::kMasterBase, Pic8259::kPortCount, pic.master_ports());
  bus.attach(Pic8259::kSlaveBase, Pic8259::kPortCount, pic.slave_ports());
  bus.attach(Pic8259::kElcrBase, Pic8259::kElcrPortCount, pic.elcr_ports());
  Shadow shadows[2];
  uint8_t elcr_bytes[2] = {0, 0};
  constexpr uint8_t kElcrMask[2] = {Pic8259::kElcrMasterMask, Pic8259::kElcrSlaveMask};
  uint16_t lines = 0;
  const uint16_t bases[2] = {Pic8259::kMasterBase, Pic8259::kSlaveBase};
  for (int ops = 0; !in.done() && ops < 4096; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned sizes[] = {1, 2, 4, 1};
    const unsigned width = sizes[(op >> 4) & 3];
    const unsigned which = (op >> 1) & 1;
    const uint16_t offset = (op >> 2) & 1;
    Shadow& shadow = shadows[which];
    const uint8_t isr_before[2] = {pic.isr(false), pic.isr(true)};
    const uint8_t irr_before[2] = {pic.irr(false), pic.irr(true)};
    bool may_take = false;  // INTA or a poll may put a request in service
    switch ((op & 1) | ((op >> 5) & 6)) {
      case 0: {  // PIC write: the low byte counts, whatever the width
        const uint32_t value = in.take<uint32_t>();
        bus.write(bases[which] + offset, width, value);
        if (offset == 0) {
          if (shadow.command(static_cast<uint8_t>(value))) {
            FUZZ_CHECK(pic.isr(which) == 0 && (pic.irr(which) & ~(elcr_bytes[which] | (which ? 0 : 4))) == 0,
                       "ICW1 left ISR {:#x} IRR {:#x}", pic.isr(which), pic.irr(which));
          }
        } else {
          shadow.data(static_cast<uint8_t>(value));
        }
        break;
      }
      case 1: {  // PIC read
        const bool polled = shadow.poll;
        shadow.poll = false;
        may_take = polled;
        const uint32_t got = bus.read(bases[which] + offset, width) & 0xff;
        if (polled) {
          FUZZ_CHECK(got == 0 || (got & 0xf8) == 0x80, "poll read {:#x}", got);
        } else if (offset == 1) {
          FUZZ_CHECK(got == shadow.imr, "{} data port read {:#x}, IMR {:#x}", which ? "slave" : "master", got,
                     shadow.imr);
        }
        break;
      }
      case 2: {  // ELCR write, byte by byte from the port
        const uint32_t value = in.take<uint32_t>();
        bus.write(Pic8259::kElcrBase + offset, width, value);
        for (unsigned i = 0; i < width && offset + i < 2; ++i)
          elcr_bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i)) & kElcrMask[offset + i];
        break;
      }
      case 3: {  // ELCR read
        const uint32_t got = bus.read(Pic8259::kElcrBase + offset, width);
        uint32_t want = 0;
        for (unsigned i = 0; i < width; ++i)
          want |= uint32_t{offset + i < 2 ? elcr_bytes[offset + i] : uint8_t{0xff}} << (8 * i);
        FUZZ_CHECK(got == want, "ELCR {:#x}+{} read {:#x}, expected {:#x}", Pic8259::kElcrBase + offset, width, got,
                   want);
        break;
      }
      case 4:
      case 5: {  // an ISA line changes
        const unsigned line = in.take<uint8_t>() % Pic8259::kLines;
        const bool level = op & 1;
        const bool was = (lines >> line) & 1;
        pic.set_irq(line, level);
        lines = static_cast<uint16_t>(level ? lines | (1u << line) : lines & ~(1u << line));
        if (line == Pic8259::kCascadeInput) break;
        const bool slave = line >= 8;
        const uint8_t bit = 1u << (line & 7);
        const bool in_irr = pic.irr(slave) & bit;
        if (elcr_bytes[slave] & bit) {
          FUZZ_CHECK(in_irr == level, "level IRQ {} at {} but IRR bit {}", line, level, in_irr);
        } else if (level && !was) {
          FUZZ_CHECK(in_irr, "the rising edge of IRQ {} is not in IRR", line);
        } else if (!(irr_before[slave] & bit)) {
          FUZZ_CHECK(!in_irr, "IRQ {} entered IRR without a rising edge", line);
        }
        break;
      }
      case 6:
      case 7: {  // INTA
        const bool intr = pic.output();
        const uint8_t requests = pic.irr(false) & ~pic.imr(false);
        const uint8_t vector = pic.acknowledge();
        may_take = true;
        if (!intr) {
          FUZZ_CHECK(vector == pic.vector_base(false) + 7 && pic.isr(false) == isr_before[0] &&
                         pic.isr(true) == isr_before[1],
                     "INTA with INT low gave {:#x} and changed ISR", vector);
          break;
        }
        const unsigned ir = static_cast<uint8_t>(vector - pic.vector_base(false));
        const bool from_master = ir < 8 && (requests & (1u << ir));
        const bool from_slave = (requests & (1u << Pic8259::kCascadeInput)) && (vector & 0xf8) == pic.vector_base(true);
        FUZZ_CHECK(from_master || from_slave, "INTA gave {:#x}, no unmasked request for it (IRR&~IMR {:#x})", vector,
                   requests);
        break;
      }
    }
    if (!may_take)
      for (unsigned p = 0; p < 2; ++p)
        FUZZ_CHECK((pic.isr(p) & ~isr_before[p]) == 0, "{} ISR {:#x} gained bits without an INTA (was {:#x})",
                   p ? "slave" : "master", pic.isr(p), isr_before[p]);
    for (unsigned p = 0; p < 2; ++p) {
      FUZZ_CHECK(pic.imr(p) == shadows[p].imr, "{} IMR {:#x}, the sequence gives {:#x}", p ? "slave" : "master",
                 pic.imr(p), shadows[p].imr);
      FUZZ_CHECK(pic.vector_base(p) == shadows[p].vector_base && (pic.vector_base(p) & 7) == 0,
                 "{} vector base {:#x}, ICW2 gave {:#x}", p ? "slave" : "master", pic.vector_base(p),
                 shadows[p].vector_base);
    }
    FUZZ_CHECK(pic.output() == heard.value_or(false), "INT {} but the listener heard {}", pic.output(),
               heard.value_or(false));
    FUZZ_CHECK(!(pic.output() && pic.imr(false) == 0xff), "INT high with every master input masked");
    const uint16_t level = pic.level_triggered();
    FUZZ_CHECK(level == (elcr_bytes[0] | elcr_bytes[1] << 8) && !(level & 0x2107), "ELCR level mask {:#x}", level);
  }
  return 0;
}
