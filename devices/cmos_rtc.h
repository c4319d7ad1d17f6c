// SPDX-License-Identifier: GPL-2.0-or-later
// The MC146818A real-time clock and its CMOS RAM (Motorola MC146818A data
// sheet) at ports 0x70 (index, bit 7 the NMI mask) and 0x71 (data), as
// QEMU's mc146818rtc shows them to a pc guest, with the memory bytes QEMU's
// pc_cmos_init fills. The clock runs on virtual time: it reads `start`
// (default 2026-01-01 00:00:00 UTC) at virtual time 0 and advances with the
// accessing vCPU's virtual ns, so two runs read the same dates.
//
// Modelled:
// - seconds, minutes, hours, day of week, day of month, month, year
//   (0x00-0x09) and the century (0x32, also at 0x37 as IBM PS/2 had it),
//   in BCD or binary (B.DM) and 24 or 12 hours with bit 7 PM (B.24/12),
//   made from the running clock at each read as QEMU does;
// - A.UIP, set in the last 244.14 us (8 periods of 32.768 kHz) before every
//   second boundary, when the time registers are about to change (as
//   QEMU's update_in_progress); a guest reading UIP = 0 can read the time
//   registers for 244 us before they change. A.DV and A.RS read back;
// - B.SET stops updates: the time registers then hold what was read or
//   written, and clearing SET carries on from them with the divider's
//   phase kept; SET also clears B.UIE, as the data sheet says. A divider
//   reset (A.DV = 11x) stops the clock too; leaving it, the first update
//   comes half a second later (data sheet; QEMU's offset of 500 ms);
// - writing a time register while the clock runs sets the clock (all the
//   other fields as they read at that moment), keeping the divider phase
//   (the real chip's divider is not reset by such a write; QEMU's
//   rtc_set_time restarts the second at the last phase it kept);
// - D.VRT reads 1 (valid RAM and time); C and D ignore writes. Every
//   other byte of the 128 is memory;
// - the alarm: at each update whose new time matches the three alarm
//   registers (a byte of 0xC0-0xFF matches anything, "don't care"), C.AF
//   sets (with C.IRQF when B.AIE), and reading C clears it; with B.AIE the
//   alarm wakes the machine from S3 when PM1_EN.RTC_EN lets it
//   (next_alarm_ns; QEMU's rtc_update_timer and check_alarm).
//
// Not modelled (deliberately):
// - No interrupt: nothing raises IRQ 8, and the periodic and update-ended
//   flags in C never set. Linux 6.1 boots without
//   them: it reads the time by polling UIP (mc146818_get_time) and sets
//   it in SET mode (mc146818_set_time), and its rtc-cmos driver needs IRQ 8 only for
//   alarms (rtcwake, RTC_WKALM_SET) and update interrupts (RTC_UIE_ON, which
//   hwclock without --directisa waits on: it times out). Adding them means
//   a "next event" time for the machine's event loop and an IRQ callback.
// - A.DV's test modes (100b, 101b) stop the clock, as QEMU's rtc_running.
// - Daylight saving (B.DSE) is a bit that reads back; nothing happens on
//   the days it would.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "devices/port_bus.h"

namespace topolab {

class CmosRtc : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x70;
  static constexpr uint32_t kPortCount = 2;  // offset 0 index, offset 1 data
  static constexpr unsigned kCmosBytes = 128;

  // Register indices (data sheet "Address Map"; 0x32 the PC century byte).
  static constexpr uint8_t REG_SECONDS = 0x00, REG_SECONDS_ALARM = 0x01, REG_MINUTES = 0x02,
                           REG_MINUTES_ALARM = 0x03, REG_HOURS = 0x04, REG_HOURS_ALARM = 0x05,
                           REG_DAY_OF_WEEK = 0x06, REG_DAY_OF_MONTH = 0x07, REG_MONTH = 0x08, REG_YEAR = 0x09,
                           REG_A = 0x0a, REG_B = 0x0b, REG_C = 0x0c, REG_D = 0x0d, REG_CENTURY = 0x32,
                           REG_PS2_CENTURY = 0x37;
  static constexpr uint8_t INDEX_NMI_DISABLE = 1u << 7;
  static constexpr uint8_t A_UIP = 1u << 7, A_DV_MASK = 7u << 4, A_DV_RESET = 6u << 4, A_DV_32KHZ = 2u << 4;
  static constexpr uint8_t B_SET = 1u << 7, B_PIE = 1u << 6, B_AIE = 1u << 5, B_UIE = 1u << 4, B_SQWE = 1u << 3,
                           B_DM_BINARY = 1u << 2, B_24H = 1u << 1, B_DSE = 1u << 0;
  static constexpr uint8_t C_IRQF = 1u << 7, C_AF = 1u << 5;
  static constexpr uint8_t D_VRT = 1u << 7;
  static constexpr uint8_t kAlarmDontCare = 0xc0;  // an alarm byte at or above it matches any value
  static constexpr uint8_t HOURS_PM = 1u << 7;  // 12-hour mode
  // Power-on values as QEMU's rtc_realizefn: 32.768 kHz divider with a
  // 1024 Hz rate, 24 hours, BCD.
  static constexpr uint8_t kResetA = A_DV_32KHZ | 0x06, kResetB = B_24H;

  static constexpr int64_t kDefaultStart = 1'767'225'600;  // 2026-01-01T00:00:00Z, Unix seconds
  static constexpr uint64_t kNsPerSecond = 1'000'000'000;
  static constexpr uint64_t kUipNs = 244'140;  // 8 / 32768 s, QEMU's UIP_HOLD_LENGTH

  struct Config {
    int64_t start = kDefaultStart;  // the clock's Unix time at virtual time 0
    // RAM as QEMU's pc splits it (the CMOS memory-size bytes).
    uint64_t below_4g_ram_bytes = 0;
    uint64_t above_4g_ram_bytes = 0;
  };

  // `now_ns`: the accessing vCPU's virtual time.
  CmosRtc(std::function<uint64_t()> now_ns, const Config& config);

  std::string name() const override { return "cmos-rtc"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // Port 0x70's bit 7 as last written (nothing is wired to NMI here).
  bool nmi_masked() const { return nmi_masked_; }
  // For tests and the machine: the clock's Unix time (whole seconds) and
  // whether UIP reads 1 at virtual `ns`.
  int64_t seconds_at(uint64_t ns) const;
  bool update_in_progress_at(uint64_t ns) const;
  // The first update after `ns` (virtual time) whose new time matches the
  // alarm, within a day; nullopt while the clock is stopped, or for none.
  std::optional<uint64_t> next_alarm_ns(uint64_t ns) const;
  bool alarm_interrupts() const { return cmos_[REG_B] & B_AIE; }

  // Snapshots (base/state_archive.h). The running clock is kept relative to
  // virtual time (base_ns_), so it resumes right when the machine's does.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(cmos_, index_, nmi_masked_, base_seconds_, base_ns_, phase_ns_, divider_was_reset_, flags_cleared_ns_);
  }

 private:
  struct Civil {
    int64_t year;
    unsigned month, day, hour, minute, second, weekday;  // weekday 0 = Sunday
  };
  static Civil civil_from_seconds(int64_t seconds);
  static int64_t seconds_from_civil(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute,
                                    int64_t second);

  bool running() const;
  uint64_t clock_ns_at(uint64_t ns) const;  // ns since base_seconds_ started
  uint8_t to_reg(unsigned value) const;
  unsigned from_reg(uint8_t value) const;
  void put_time(int64_t seconds);  // into the time registers, in B's format
  uint8_t hours_reg(unsigned hour) const;  // 0-23, in B's format (12 hours: bit 7 PM)
  // The alarm registers match the time `seconds`.
  bool alarm_matches(int64_t seconds) const;
  // The first alarm update in (after_ns, until_ns], within a day of after_ns.
  std::optional<uint64_t> alarm_between(uint64_t after_ns, uint64_t until_ns) const;
  int64_t time_in_registers() const;
  void resume(uint64_t ns, uint64_t phase_ns);
  uint8_t read_data(uint64_t ns);
  void write_data(uint8_t value, uint64_t ns);
  void write_control(uint8_t index, uint8_t value, uint64_t ns);

  std::function<uint64_t()> now_ns_;
  std::array<uint8_t, kCmosBytes> cmos_{};
  uint8_t index_ = 0;
  bool nmi_masked_ = false;
  // While the clock runs it reads base_seconds_ + (phase_ns_ + now -
  // base_ns_) / 1 s; stopped, the time registers in cmos_ hold the time.
  int64_t base_seconds_;
  uint64_t base_ns_ = 0;
  uint64_t phase_ns_ = 0;
  bool divider_was_reset_ = false;  // since the clock last stopped
  uint64_t flags_cleared_ns_ = 0;   // when C was last read (which clears AF)
};

}  // namespace topolab
