// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pc_testdev.h"

namespace topolab {

namespace {

// The bits of a `size`-byte access at byte `byte` of a 32-bit register.
uint32_t lane_mask(unsigned byte, unsigned size) {
  const uint64_t bits = size >= 4 ? 0xffffffffull : (1ull << (8 * size)) - 1;
  return static_cast<uint32_t>(bits << (8 * byte));
}

}  // namespace

PcTestdev::PcTestdev(std::function<void(unsigned, bool)> set_irq)
    : set_irq_(std::move(set_irq)), irq_lines_(*this), iomem_(kIomemSize, 0) {}

uint32_t PcTestdev::read(uint16_t offset, unsigned size) {
  if (offset >= kFlushPage && offset < kIoportByte) return 0xffffffffu;  // write only
  const unsigned byte = offset & 3;
  return (scratch_ & lane_mask(byte, size)) >> (8 * byte);
}

void PcTestdev::write(uint16_t offset, unsigned size, uint32_t value) {
  if (offset >= kFlushPage && offset < kIoportByte) return;  // flush-page: nothing to flush
  const unsigned byte = offset & 3;
  const uint32_t mask = lane_mask(byte, size);
  scratch_ = (scratch_ & ~mask) | (static_cast<uint32_t>(uint64_t{value} << (8 * byte)) & mask);
}

void PcTestdev::IrqLines::write(uint16_t offset, unsigned size, uint32_t value) {
  if (size != 1 || offset >= kIrqLines) return;
  dev_.set_irq_(offset, (value & 0xff) != 0);
}

uint64_t PcTestdev::iomem_read(uint64_t offset, unsigned size) const {
  if (size > 8 || offset >= kIomemSize || size > kIomemSize - offset) return 0;
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) v |= uint64_t{iomem_[offset + i]} << (8 * i);
  return v;
}

void PcTestdev::iomem_write(uint64_t offset, unsigned size, uint64_t value) {
  if (size > 8 || offset >= kIomemSize || size > kIomemSize - offset) return;
  for (unsigned i = 0; i < size; ++i) iomem_[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace topolab
