// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/acpi_pm.h"

namespace topolab {

namespace {

uint32_t bytes_of(uint32_t word, unsigned byte, unsigned size) {
  const uint64_t mask = size >= 4 ? 0xffffffffull : (1ull << (8 * size)) - 1;
  return static_cast<uint32_t>((word >> (8 * byte)) & mask);
}

}  // namespace

uint32_t AcpiPm::registers(uint64_t ticks) const {
  const uint16_t status = status_ | ((ticks >> 23) != tmr_sts_cleared_epoch_ ? STS_TMR : 0);
  return status | (uint32_t{enable_} << 16);
}

uint32_t AcpiPm::read(uint16_t offset, unsigned size) {
  if (offset < kPm1Cnt) return bytes_of(registers(ticks_at(now_ns_())), offset, size);
  if (offset < kPmTmr) return bytes_of(control_, offset - kPm1Cnt, size);
  return bytes_of(static_cast<uint32_t>(ticks_at(now_ns_()) & 0xffffff), offset - kPmTmr, size);
}

void AcpiPm::write(uint16_t offset, unsigned size, uint32_t value) {
  // Each register as a whole: place the bytes written at their offset.
  const auto in = [&](uint16_t base, unsigned width) -> std::pair<uint32_t, uint32_t> {
    const unsigned byte = offset - base;
    const uint64_t mask = ((size >= 4 ? 0xffffffffull : (1ull << (8 * size)) - 1) << (8 * byte)) & ((1ull << (8 * width)) - 1);
    return {static_cast<uint32_t>((uint64_t{value} << (8 * byte)) & mask), static_cast<uint32_t>(mask)};
  };
  if (offset < kPm1En) {
    auto [bits, mask] = in(kPm1Sts, 2);
    if (bits & mask & STS_TMR) tmr_sts_cleared_epoch_ = ticks_at(now_ns_()) >> 23;
    status_ &= static_cast<uint16_t>(~(bits & mask));
    return;
  }
  if (offset < kPm1Cnt) {
    auto [bits, mask] = in(kPm1En, 2);
    enable_ = static_cast<uint16_t>((enable_ & ~mask) | (bits & EN_MASK));
    return;
  }
  if (offset < kPm1Cnt + 2) {
    auto [bits, mask] = in(kPm1Cnt, 2);
    const uint16_t written = static_cast<uint16_t>((control_ & ~mask) | bits);
    control_ = static_cast<uint16_t>(CNT_SCI_EN | (written & CNT_WRITABLE));
    if ((mask & CNT_SLP_EN) && (bits & CNT_SLP_EN)) {
      const unsigned sleep_type = (written >> CNT_SLP_TYP_SHIFT) & 7;
      if (sleep_type == kSlpTypSoftOff) on_power_off_();
      if (sleep_type == kSlpTypS3 && on_suspend_) on_suspend_();
    }
    return;
  }
  // 0x606-0x607 are unused, PM_TMR is read only.
}

}  // namespace topolab
