// SPDX-License-Identifier: GPL-2.0-or-later
// The 8259A pair (devices/pic_stub.h) and PIIX3's ELCR, driven by a program
// of port reads and writes of every width. The invariants are the 8259A
// data sheet's, as far as the stub promises them:
// - ICW1 (a command-port write with bit 4 set) clears the IMR and starts
//   the initialisation sequence: the data-port writes that follow are ICW2,
//   then ICW3 unless ICW1 said single (SNGL), then ICW4 if ICW1 asked (IC4);
//   none of them is a mask; ICW2's bits 7:3 are the vector base;
// - afterwards a data-port write is OCW1, the IMR, which the data port reads
//   back; OCW2/OCW3 (command-port writes without bit 4) change nothing;
// - the command port reads IRR, ISR or the poll byte: always 0, as nothing
//   ever requests service;
// - ELCR: each byte reads back what was written under QEMU's mask (IRQ 0,
//   1, 2, 8 and 13 are always edge), ports past it read all ones, and
//   level_triggered() is the two bytes.
#include <cstddef>
#include <cstdint>

#include "devices/pic_stub.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

// The data sheet's initialisation sequence, kept beside the stub.
struct Shadow {
  enum class Next { Ocw1, Icw2, Icw3, Icw4 } next = Next::Ocw1;
  bool single = false, icw4 = false;
  uint8_t imr = 0xff;  // the stub's documented reset state (all masked)
  uint8_t vector_base = 0;

  void command(uint8_t byte) {
    if (!(byte & 0x10)) return;  // OCW2 / OCW3
    single = byte & 0x02;
    icw4 = byte & 0x01;
    imr = 0;
    next = Next::Icw2;
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
  PicStub pics[2] = {PicStub(PicStub::Role::kMaster), PicStub(PicStub::Role::kSlave)};
  Shadow shadows[2];
  Elcr elcr;
  uint8_t elcr_bytes[2] = {0, 0};
  constexpr uint8_t kElcrMask[2] = {Elcr::kMasterMask, Elcr::kSlaveMask};
  for (int ops = 0; !in.done() && ops < 4096; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned sizes[] = {1, 2, 4, 1};
    const unsigned width = sizes[(op >> 4) & 3];
    const unsigned which = (op >> 1) & 1;
    const uint16_t offset = (op >> 2) & 1;
    PicStub& pic = pics[which];
    Shadow& shadow = shadows[which];
    switch (op & 1 ? 2 + ((op >> 6) & 1) : (op >> 6) & 1) {
      case 0: {  // PIC write: the low byte counts, whatever the width
        const uint32_t value = in.take<uint32_t>();
        pic.write(offset, width, value);
        if (offset == 0) shadow.command(static_cast<uint8_t>(value));
        else shadow.data(static_cast<uint8_t>(value));
        break;
      }
      case 1: {  // PIC read
        const uint32_t got = pic.read(offset, width);
        FUZZ_CHECK(got == (offset == 1 ? shadow.imr : 0u), "{} port {} read {:#x}, IMR {:#x}", pic.name(), offset, got,
                   shadow.imr);
        break;
      }
      case 2: {  // ELCR write, byte by byte from the port
        const uint32_t value = in.take<uint32_t>();
        elcr.write(offset, width, value);
        for (unsigned i = 0; i < width && offset + i < 2; ++i)
          elcr_bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i)) & kElcrMask[offset + i];
        break;
      }
      case 3: {  // ELCR read
        const uint32_t got = elcr.read(offset, width);
        uint32_t want = 0;
        for (unsigned i = 0; i < width; ++i) want |= uint32_t{offset + i < 2 ? elcr_bytes[offset + i] : uint8_t{0xff}} << (8 * i);
        FUZZ_CHECK(got == want, "ELCR {:#x}+{} read {:#x}, expected {:#x}", Elcr::kBase + offset, width, got, want);
        break;
      }
    }
    for (unsigned p = 0; p < 2; ++p) {
      FUZZ_CHECK(pics[p].mask() == shadows[p].imr, "{} IMR {:#x}, the sequence gives {:#x}", pics[p].name(),
                 pics[p].mask(), shadows[p].imr);
      FUZZ_CHECK(pics[p].vector_base() == shadows[p].vector_base && (pics[p].vector_base() & 7) == 0,
                 "{} vector base {:#x}, ICW2 gave {:#x}", pics[p].name(), pics[p].vector_base(), shadows[p].vector_base);
    }
    const uint16_t level = elcr.level_triggered();
    FUZZ_CHECK(level == (elcr_bytes[0] | elcr_bytes[1] << 8) && !(level & 0x2107), "ELCR level mask {:#x}", level);
  }
  return 0;
}
