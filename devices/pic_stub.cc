// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pic_stub.h"

namespace topolab {

namespace {
constexpr uint16_t kCommandPort = 0, kDataPort = 1;
// ICW1 (command port, bit 4 set).
constexpr uint8_t kIcw1 = 1u << 4;
constexpr uint8_t kIcw1Ic4 = 1u << 0;   // ICW4 follows
constexpr uint8_t kIcw1Sngl = 1u << 1;  // single PIC: no ICW3
constexpr uint8_t kIcw2VectorMask = 0xf8;
}  // namespace

uint32_t PicStub::read(uint16_t offset, unsigned) {
  // IRR, ISR and the poll byte are all 0: nothing ever requests service.
  return offset == kDataPort ? imr_ : 0;
}

void PicStub::write(uint16_t offset, unsigned, uint32_t value) {
  uint8_t byte = value & 0xff;
  if (offset == kCommandPort) {
    if (byte & kIcw1) {
      single_ = byte & kIcw1Sngl;
      needs_icw4_ = byte & kIcw1Ic4;
      imr_ = 0;
      expect_ = Expect::kIcw2;
    }
    // OCW2 (EOI, rotation) and OCW3 (read select, poll, special mask) have
    // nothing to act on.
    return;
  }
  switch (expect_) {
    case Expect::kIcw2:
      vector_base_ = byte & kIcw2VectorMask;
      expect_ = !single_ ? Expect::kIcw3 : needs_icw4_ ? Expect::kIcw4 : Expect::kOcw;
      break;
    case Expect::kIcw3:  // cascade wiring: the slave on IR2 either way
      expect_ = needs_icw4_ ? Expect::kIcw4 : Expect::kOcw;
      break;
    case Expect::kIcw4:  // 8086 mode, auto-EOI, buffering: nothing to model
      expect_ = Expect::kOcw;
      break;
    case Expect::kOcw:
      imr_ = byte;  // OCW1
      break;
  }
}

// Byte by byte, as QEMU splits a wider access between the two registers.
uint32_t Elcr::read(uint16_t offset, unsigned size) {
  uint32_t value = 0;
  for (unsigned i = 0; i < size && i < 4; ++i)
    value |= uint32_t{offset + i < kPortCount ? elcr_[offset + i] : uint8_t{0xff}} << (8 * i);
  return value;
}

void Elcr::write(uint16_t offset, unsigned size, uint32_t value) {
  static constexpr uint8_t kMasks[kPortCount] = {kMasterMask, kSlaveMask};
  for (unsigned i = 0; i < size && i < 4; ++i)
    if (offset + i < kPortCount) elcr_[offset + i] = (value >> (8 * i)) & kMasks[offset + i];
}

}  // namespace topolab
