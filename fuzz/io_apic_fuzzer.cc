// SPDX-License-Identifier: GPL-2.0-or-later
// The I/O APIC (82093AA datasheet, order 290566; QEMU's ioapic), driven by a
// program of IOREGSEL writes (any width), IOWIN reads and writes (any
// width), EOI-register writes, pin changes and EOI messages.
// Invariants after every operation:
// - IOREGSEL reads back its low 8 bits; VERSION reads 0x170020; ID and
//   arbitration read the ID in bits 27:24 and nothing else; an index that
//   is no register reads 0; IOWIN reads of any other width read 0;
// - a redirection entry's two halves read what redirection() says, and a
//   write changes the writable bits only: delivery status reads 0 and
//   remote IRR keeps its value (the datasheet's read-only bits);
// - remote IRR: never set on an edge-triggered entry; set on every level
//   entry that is unmasked with its pin asserted (it was sent); an EOI for
//   a vector clears it on that vector's level entries and no others (it is
//   set again at once only where the pin is still asserted and unmasked);
// - messages: each comes from an unmasked entry and carries its vector,
//   trigger mode, destination mode and 8-bit destination, never a reserved
//   delivery mode (011b, 110b); a level entry sends at most once per EOI;
//   an edge entry sends once per rising edge on its pin while unmasked, and
//   an edge while masked is lost (unmasking sends nothing for it).
#include <cstddef>
#include <cstdint>

#include "devices/io_apic.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;
using namespace topolab::ioapic;

namespace {

// The pin whose entry `m` was sent from among `pins` (a bit set), or -1: an
// unmasked entry with the message's fields, which, if level-triggered, now
// waits for its EOI with its pin asserted.
int source_pin(const IoApic& io, const ApicMessage& m, uint32_t pins) {
  for (unsigned p = 0; p < kPins; ++p) {
    if (!((pins >> p) & 1)) continue;
    const uint64_t e = io.redirection(p);
    if (m.vector == (e & RTE_VECTOR) && static_cast<unsigned>(m.delivery_mode) == ((e >> RTE_DELIVERY_MODE_SHIFT) & 7) &&
        (m.trigger_mode == ApicTriggerMode::Level) == ((e & RTE_TRIGGER_LEVEL) != 0) &&
        (m.destination_mode == ApicDestinationMode::Logical) == ((e & RTE_DEST_LOGICAL) != 0) &&
        m.destination == (e >> RTE_DESTINATION_SHIFT) && !(e & RTE_MASKED) &&
        (!(e & RTE_TRIGGER_LEVEL) || ((e & RTE_REMOTE_IRR) && io.pin_asserted(p))))
      return static_cast<int>(p);
  }
  return -1;
}

// Checks the messages one operation caused: each from a distinct pin of
// `pins`, level ones from entries now waiting for their EOI.
void check_messages(const IoApic& io, const IoApicMessages& sent, uint32_t pins, const char* what) {
  uint32_t used = 0;
  for (const ApicMessage& m : sent) {
    FUZZ_CHECK(m.delivery_mode != ApicDeliveryMode::Reserved && m.delivery_mode != ApicDeliveryMode::StartUp,
               "{}: reserved delivery mode {}", what, static_cast<int>(m.delivery_mode));
    FUZZ_CHECK(m.shorthand == ApicShorthand::None && !m.x2apic && m.level_assert, "{}: message form", what);
    const int pin = source_pin(io, m, pins & ~used);
    FUZZ_CHECK(pin >= 0, "{}: message vector {:#x} to {:#x} matches no unmasked entry that could send", what, m.vector,
               m.destination);
    used |= 1u << pin;
  }
}

void check_state(const IoApic& io, uint32_t lines) {
  for (unsigned p = 0; p < kPins; ++p) {
    const uint64_t e = io.redirection(p);
    const bool asserted = (lines >> p) & 1;
    FUZZ_CHECK(io.pin_asserted(p) == asserted, "pin {} level", p);
    FUZZ_CHECK(!(e & RTE_DELIVERY_STATUS), "pin {}: delivery status set ({:#x})", p, e);
    if (!(e & RTE_TRIGGER_LEVEL)) FUZZ_CHECK(!(e & RTE_REMOTE_IRR), "edge pin {} has remote IRR ({:#x})", p, e);
    else if (!(e & RTE_MASKED) && asserted)
      FUZZ_CHECK(e & RTE_REMOTE_IRR, "level pin {} unmasked and asserted, but never sent ({:#x})", p, e);
  }
}

uint32_t window_read(IoApic& io, uint32_t index) {
  io.mmio_write(MMIO_IOREGSEL, 4, index);
  return io.mmio_read(MMIO_IOWIN, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  IoApic io;
  uint32_t lines = 0, select = 0;
  for (int ops = 0; !in.done() && ops < 2048; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned sizes[] = {4, 1, 2, 4};
    const unsigned width = sizes[(op >> 4) & 3];
    switch (op & 7) {
      case 0: {  // IOREGSEL
        const uint32_t v = in.take<uint32_t>();
        FUZZ_CHECK(io.mmio_write(MMIO_IOREGSEL, width, v).empty(), "IOREGSEL write sent");
        select = v & 0xff;
        break;
      }
      case 1: {  // IOWIN read
        const uint32_t got = io.mmio_read(MMIO_IOWIN, width);
        uint32_t want = 0;
        if (width == 4) {
          if (select == REG_ID || select == REG_ARBITRATION) want = uint32_t{io.id()} << 24;
          else if (select == REG_VERSION) want = VERSION_VALUE;
          else if (select >= REG_REDIRECTION_BASE && select < REG_REDIRECTION_BASE + 2 * kPins) {
            const uint64_t e = io.redirection((select - REG_REDIRECTION_BASE) / 2);
            want = static_cast<uint32_t>(select & 1 ? e >> 32 : e);
          }
        }
        FUZZ_CHECK(got == want, "IOWIN[{:#x}] width {} read {:#x}, expected {:#x}", select, width, got, want);
        FUZZ_CHECK((io.id() & ~0xf) == 0, "ID {:#x} beyond bits 27:24", io.id());
        break;
      }
      case 2: {  // IOWIN write
        const uint32_t v = in.take<uint32_t>();
        const bool rte = width == 4 && select >= REG_REDIRECTION_BASE && select < REG_REDIRECTION_BASE + 2 * kPins;
        const unsigned pin = rte ? (select - REG_REDIRECTION_BASE) / 2 : 0;
        const uint64_t before = rte ? io.redirection(pin) : 0;
        const uint8_t id_before = io.id();
        const IoApicMessages sent = io.mmio_write(MMIO_IOWIN, width, v);
        if (rte) {
          const uint64_t written = select & 1 ? (before & 0xffffffffull) | (uint64_t{v} << 32)
                                              : (before & ~0xffffffffull) | v;
          const uint64_t after = io.redirection(pin);
          FUZZ_CHECK((after & ~RTE_READ_ONLY) == (written & ~RTE_READ_ONLY), "pin {}: wrote {:#x}, reads {:#x}", pin,
                     written, after);
          // Remote IRR stays, but an entry switched to edge drops it, and a
          // level entry owed a message gets it with the write.
          if (after & RTE_TRIGGER_LEVEL && !(before & RTE_REMOTE_IRR) && (after & RTE_REMOTE_IRR))
            FUZZ_CHECK(!(after & RTE_MASKED) && io.pin_asserted(pin), "pin {}: remote IRR set by a write", pin);
          if ((before & RTE_REMOTE_IRR) && (after & RTE_TRIGGER_LEVEL))
            FUZZ_CHECK(after & RTE_REMOTE_IRR, "pin {}: remote IRR cleared by a write ({:#x})", pin, after);
        } else if (width == 4 && select == REG_ID) {
          FUZZ_CHECK(io.id() == ((v >> 24) & 0xf), "ID write {:#x} reads {:#x}", v, io.id());
        } else {
          FUZZ_CHECK(io.id() == id_before, "write to IOWIN[{:#x}] width {} changed the ID", select, width);
        }
        // Only a level entry can be owed a message by a register write
        // (an edge while masked was lost).
        for (const ApicMessage& m : sent)
          FUZZ_CHECK(m.trigger_mode == ApicTriggerMode::Level, "an edge message from a register write");
        check_messages(io, sent, rte ? 1u << pin : 0, "IOWIN write");
        break;
      }
      case 3:    // EOI register (32-bit only) ...
      case 4: {  // ... or an EOI message from a local APIC
        const uint8_t vector = in.take<uint8_t>();
        uint32_t had_irr = 0, matching = 0;
        for (unsigned p = 0; p < kPins; ++p) {
          const uint64_t e = io.redirection(p);
          if (e & RTE_REMOTE_IRR) had_irr |= 1u << p;
          if ((e & RTE_VECTOR) == vector && (e & RTE_TRIGGER_LEVEL)) matching |= 1u << p;
        }
        const bool register_eoi = (op & 7) == 3;
        const bool effective = !register_eoi || width == 4;
        const IoApicMessages sent = register_eoi ? io.mmio_write(MMIO_EOI, width, vector) : io.eoi(vector);
        for (unsigned p = 0; p < kPins; ++p) {
          const bool irr = io.redirection(p) & RTE_REMOTE_IRR;
          if (effective && ((matching >> p) & 1)) {
            const bool resent = !(io.redirection(p) & RTE_MASKED) && io.pin_asserted(p);
            FUZZ_CHECK(irr == resent, "EOI {:#x}: pin {} remote IRR {}", vector, p, irr);
          } else {
            FUZZ_CHECK(irr == ((had_irr >> p) & 1), "EOI {:#x} changed pin {}'s remote IRR", vector, p);
          }
        }
        check_messages(io, sent, effective ? matching & had_irr : 0, "EOI");
        break;
      }
      case 5:
      case 6: {  // a pin changes (pins past 23 are ignored)
        const uint8_t pin = in.take<uint8_t>() % 26;
        const bool asserted = op & 0x80;
        const bool rising = pin < kPins && asserted && !((lines >> pin) & 1);
        const uint64_t e = pin < kPins ? io.redirection(pin) : 0;
        const IoApicMessages sent = io.set_pin(pin, asserted);
        if (pin < kPins) lines = asserted ? lines | (1u << pin) : lines & ~(1u << pin);
        check_messages(io, sent, pin < kPins ? 1u << pin : 0, "pin change");
        const unsigned mode = (e >> RTE_DELIVERY_MODE_SHIFT) & 7;
        if (pin < kPins && !(e & RTE_TRIGGER_LEVEL) && mode != 3 && mode != 6)
          FUZZ_CHECK(sent.size() == (rising && !(e & RTE_MASKED) ? 1u : 0u), "edge pin {}: {} messages for {}", pin,
                     sent.size(), rising ? "a rising edge" : "no rising edge");
        break;
      }
      case 7: {  // the fixed registers, through the window
        FUZZ_CHECK(window_read(io, REG_VERSION) == 0x170020, "VERSION");
        FUZZ_CHECK(window_read(io, REG_ARBITRATION) == window_read(io, REG_ID), "arbitration ID");
        const uint8_t index = in.take<uint8_t>();
        if (index > REG_ARBITRATION && (index < REG_REDIRECTION_BASE || index >= REG_REDIRECTION_BASE + 2 * kPins))
          FUZZ_CHECK(window_read(io, index) == 0, "IOWIN[{:#x}] reads nonzero", index);
        io.mmio_write(MMIO_IOREGSEL, 4, index);
        select = index;
        break;
      }
    }
    FUZZ_CHECK(io.mmio_read(MMIO_IOREGSEL, 4) == select, "IOREGSEL reads {:#x}, {:#x} was written",
               io.mmio_read(MMIO_IOREGSEL, 4), select);
    check_state(io, lines);
  }
  return 0;
}
