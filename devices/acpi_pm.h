// SPDX-License-Identifier: GPL-2.0-or-later
// PIIX4's ACPI power-management registers as the FADT names them (ACPI 6.x
// §4.8.3), at the PM base QEMU's pc gets from SeaBIOS (0x600):
// - PM1a_EVT_BLK +0 PM1_STS (16 bits, write 1 to clear), +2 PM1_EN (16);
// - PM1a_CNT_BLK +4 PM1_CNT (16): SCI_EN reads 1 (there is no SMI command
//   port, so the machine is always in ACPI mode); writing SLP_EN with
//   SLP_TYP 0, the DSDT's \_S5, powers the machine off, and SLP_TYP 1
//   suspends it to S3 (QEMU's acpi_pm1_cnt_write for PIIX4, whatever the
//   DSDT says: topolab's has no \_S3, so an OS does not choose it); other
//   sleep types are ignored. Waking (wake_from_s3) sets WAK_STS, and
//   RTC_STS for the RTC alarm, in PM1_STS (write 1 to clear);
// - PM_TMR_BLK +8 PM_TMR (32, read only): the 24-bit power-management
//   timer at 3.579545 MHz (§4.8.3.3), counted on virtual time: the clock of
//   the vCPU that reads it, never the host's. PM1_STS.TMR_STS is set each
//   time bit 23 of the count changes.
// Not modelled: the SCI (nothing is wired to IRQ 9, so PM1_EN only reads
// back, but for RTC_EN, which lets the RTC alarm wake from S3), the other
// status events (power button, global lock), GPEs, S1, S2 and S4.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/memory_map.h"
#include "devices/port_bus.h"

namespace topolab {

class AcpiPm : public PortDevice {
 public:
  static constexpr uint16_t kBase = memory_map::kAcpiPmBase;
  static constexpr uint32_t kPortCount = memory_map::kAcpiPmPortCount;
  static constexpr uint16_t kPm1Sts = memory_map::kAcpiPm1EvtOffset, kPm1En = kPm1Sts + 2,
                            kPm1Cnt = memory_map::kAcpiPm1CntOffset, kPmTmr = memory_map::kAcpiPmTmrOffset;
  static constexpr uint64_t kTimerHz = 3'579'545;
  static constexpr uint16_t STS_TMR = 1u << 0, STS_RTC = 1u << 10, STS_WAK = 1u << 15;
  static constexpr uint16_t EN_RTC = 1u << 10;
  static constexpr uint16_t EN_MASK = (1u << 0) | (1u << 5) | (1u << 8) | (1u << 9) | (1u << 10);
  static constexpr uint16_t CNT_SCI_EN = 1u << 0, CNT_SLP_EN = 1u << 13;
  static constexpr unsigned CNT_SLP_TYP_SHIFT = 10;
  // SCI_EN is fixed; BM_RLD, GBL_RLS and SLP_TYP are kept (SLP_EN reads 0).
  static constexpr uint16_t CNT_WRITABLE = (1u << 1) | (1u << 2) | (7u << CNT_SLP_TYP_SHIFT);

  static constexpr unsigned kSlpTypSoftOff = 0, kSlpTypS3 = 1;  // QEMU's PIIX4
  // `now_ns` is the reading vCPU's virtual time; `on_power_off` runs when
  // the guest enters S5, `on_suspend` when it enters S3.
  AcpiPm(std::function<uint64_t()> now_ns, std::function<void()> on_power_off, std::function<void()> on_suspend = {})
      : now_ns_(std::move(now_ns)), on_power_off_(std::move(on_power_off)), on_suspend_(std::move(on_suspend)) {}

  std::string name() const override { return "acpi-pm"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // The full count at `ns` of virtual time (the register shows its low 24 bits).
  static uint64_t ticks_at(uint64_t ns) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * kTimerHz / 1'000'000'000u);
  }

  // The RTC alarm may wake the machine from S3 (PM1_EN.RTC_EN).
  bool rtc_wakes() const { return enable_ & EN_RTC; }
  // The machine woke from S3, by the RTC alarm or not.
  void wake_from_s3(bool by_rtc) { status_ |= STS_WAK | (by_rtc ? STS_RTC : 0); }

  // Snapshots (base/state_archive.h). The timer's count is virtual time's.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(enable_, control_, tmr_sts_cleared_epoch_, status_);
  }

 private:
  uint32_t registers(uint64_t ticks) const;  // bytes 0-3: PM1_STS, PM1_EN

  std::function<uint64_t()> now_ns_;
  std::function<void()> on_power_off_;
  std::function<void()> on_suspend_;
  uint16_t enable_ = 0;
  uint16_t status_ = 0;  // PM1_STS's latched bits: WAK_STS, RTC_STS
  uint16_t control_ = CNT_SCI_EN;
  // TMR_STS: set once the count's bit 23 has changed since it was last cleared.
  uint64_t tmr_sts_cleared_epoch_ = 0;
};

}  // namespace topolab
