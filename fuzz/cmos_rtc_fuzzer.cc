// SPDX-License-Identifier: GPL-2.0-or-later
// The MC146818A RTC and CMOS RAM (devices/cmos_rtc.h), driven by a program
// of index and data port accesses of every width and steps of virtual time,
// from a start date the input picks (years 1970-9999).
// Invariants (MC146818A data sheet, as the header scopes it):
// - the index port reads all ones; C reads at most AF and IRQF, IRQF only
//   with AF and B.AIE, AF only while the clock runs; D reads VRT (0x80); A reads
//   bits 6:0 as written and UIP (bit 7) exactly in the last 244.14 us of a
//   running clock's second; B reads as written, except that SET clears UIE;
//   CMOS memory bytes, the alarm bytes (0x1, 0x3, 0x5) among them, read
//   back what was written, running clock or not; 0x37 is the century;
// - while the clock runs, every time register is in range and in the
//   format B selects: BCD digits 0-9 in BCD mode, seconds and minutes
//   0-59, hours 0-23 or 1-12 with bit 7 for PM, day of week 1-7, day of
//   month 1 to the month's length, month 1-12, year and century 0-99; and
//   together they are the clock's time (checked against gmtime_r, not the
//   model's own calendar) with the day of week that date's;
// - the update cycle: UIP = 0 promises the second does not change for
//   244 us; UIP = 1 that it changes within 244.14 us; a running clock
//   never goes back and moves one second per second;
// - with B.SET the time registers hold what was written, however time
//   passes; a valid second or minute written while it runs reads back at
//   once.
#include <time.h>

#include <cstddef>
#include <cstdint>

#include "devices/cmos_rtc.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

constexpr int64_t kLastSecond = 253'402'300'799;  // 9999-12-31T23:59:59Z
constexpr uint64_t kSecond = CmosRtc::kNsPerSecond;

// The clock's registers. Not the three alarm bytes between them (0x1, 0x3,
// 0x5): the data sheet's update cycle never writes those, they hold what the
// program wrote whether the clock runs or not, and QEMU 7.2's
// cmos_ioport_write stores them as plain CMOS data (finding F9: this rule
// once counted them as time registers).
bool is_time_register(uint8_t i) {
  const bool alarm = i == CmosRtc::REG_SECONDS_ALARM || i == CmosRtc::REG_MINUTES_ALARM || i == CmosRtc::REG_HOURS_ALARM;
  return (i <= CmosRtc::REG_YEAR && !alarm) || i == CmosRtc::REG_CENTURY || i == CmosRtc::REG_PS2_CENTURY;
}

class Harness {
 public:
  explicit Harness(int64_t start) : rtc_([this] { return now_; }, CmosRtc::Config{.start = start}) {}

  uint64_t now_ = 0;
  CmosRtc rtc_;
  uint8_t index_ = 0;             // as last written (without the NMI bit)
  uint8_t a_ = CmosRtc::kResetA;  // bits 6:0 as written
  uint8_t b_ = CmosRtc::kResetB;
  uint8_t memory_[CmosRtc::kCmosBytes] = {};
  bool memory_known_[CmosRtc::kCmosBytes] = {};
  uint8_t held_[CmosRtc::kCmosBytes] = {};  // time registers written under SET
  bool held_known_[CmosRtc::kCmosBytes] = {};

  bool running() const { return !(b_ & CmosRtc::B_SET) && (a_ & CmosRtc::A_DV_MASK) <= CmosRtc::A_DV_32KHZ; }
  bool binary() const { return b_ & CmosRtc::B_DM_BINARY; }

  // Register `reg` without disturbing the guest's index or NMI mask.
  uint8_t peek(uint8_t reg) {
    const bool nmi = rtc_.nmi_masked();
    rtc_.write(0, 1, reg);
    const uint8_t v = static_cast<uint8_t>(rtc_.read(1, 1));
    rtc_.write(0, 1, index_ | (nmi ? CmosRtc::INDEX_NMI_DISABLE : 0));
    return v;
  }

  unsigned field(uint8_t v, const char* name) const {
    if (binary()) return v;
    FUZZ_CHECK((v & 0xf) <= 9 && (v >> 4) <= 9, "{} {:#x} is not BCD", name, v);
    return (v >> 4) * 10u + (v & 0xf);
  }

  // What the time registers say while the clock runs.
  void check_time() {
    if (!running()) return;
    const int64_t seconds = rtc_.seconds_at(now_);
    const uint8_t regs[] = {peek(CmosRtc::REG_SECONDS), peek(CmosRtc::REG_MINUTES), peek(CmosRtc::REG_HOURS),
                            peek(CmosRtc::REG_DAY_OF_WEEK), peek(CmosRtc::REG_DAY_OF_MONTH), peek(CmosRtc::REG_MONTH),
                            peek(CmosRtc::REG_YEAR), peek(CmosRtc::REG_CENTURY)};
    // A read at the same instant cannot have crossed a second.
    FUZZ_CHECK(rtc_.seconds_at(now_) == seconds, "the clock moved without time passing");
    const unsigned second = field(regs[0], "seconds"), minute = field(regs[1], "minutes");
    unsigned hour;
    if (b_ & CmosRtc::B_24H) {
      hour = field(regs[2], "hours");
      FUZZ_CHECK(hour <= 23, "hours {:#x} in 24-hour mode", regs[2]);
    } else {
      const unsigned h12 = field(regs[2] & ~CmosRtc::HOURS_PM, "hours");
      FUZZ_CHECK(h12 >= 1 && h12 <= 12, "hours {:#x} in 12-hour mode", regs[2]);
      hour = h12 % 12 + (regs[2] & CmosRtc::HOURS_PM ? 12 : 0);
    }
    const unsigned weekday = field(regs[3], "day of week"), day = field(regs[4], "day of month"),
                   month = field(regs[5], "month"), year = field(regs[6], "year"),
                   century = field(regs[7], "century");
    FUZZ_CHECK(second <= 59 && minute <= 59 && weekday >= 1 && weekday <= 7 && month >= 1 && month <= 12 &&
                   year <= 99 && century <= 99,
               "time registers {:02x} {:02x} {:02x} {:02x} {:02x} {:02x} {:02x} {:02x}", regs[0], regs[1], regs[2],
               regs[3], regs[4], regs[5], regs[6], regs[7]);
    if (seconds < 0 || seconds > kLastSecond) return;  // the registers clamp the year there
    const unsigned full_year = century * 100 + year;
    const bool leap = full_year % 4 == 0 && (full_year % 100 != 0 || full_year % 400 == 0);
    const unsigned lengths[] = {31, leap ? 29u : 28u, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    FUZZ_CHECK(day >= 1 && day <= lengths[month - 1], "day {} of month {} of {}", day, month, full_year);
    const time_t t = seconds;
    struct tm tm {};
    FUZZ_CHECK(gmtime_r(&t, &tm), "gmtime_r({})", seconds);
    FUZZ_CHECK(tm.tm_sec == int(second) && tm.tm_min == int(minute) && tm.tm_hour == int(hour) &&
                   tm.tm_mday == int(day) && tm.tm_mon + 1 == int(month) && tm.tm_year + 1900 == int(full_year) &&
                   tm.tm_wday + 1 == int(weekday),
               "registers say {:04}-{:02}-{:02} {:02}:{:02}:{:02} (day {}), the clock {}", full_year, month, day, hour,
               minute, second, weekday, seconds);
  }

  void check_update_cycle() {
    const bool uip = peek(CmosRtc::REG_A) & CmosRtc::A_UIP;
    FUZZ_CHECK(uip == rtc_.update_in_progress_at(now_), "UIP {}", uip);
    if (!running()) {
      FUZZ_CHECK(!uip, "UIP set while the clock is stopped");
      return;
    }
    const int64_t s = rtc_.seconds_at(now_);
    if (uip) {
      FUZZ_CHECK(rtc_.seconds_at(now_ + CmosRtc::kUipNs) == s + 1, "UIP = 1 at {} ns, but no update follows", now_);
    } else {
      FUZZ_CHECK(rtc_.seconds_at(now_ + CmosRtc::kUipNs - 1) == s, "UIP = 0 at {} ns, but the second changes", now_);
    }
  }

  void check_held() {
    if (running()) return;
    for (uint8_t i = 0; i < CmosRtc::kCmosBytes; ++i) {
      if (!held_known_[i]) continue;
      const uint8_t got = peek(i);
      FUZZ_CHECK(got == held_[i], "stopped clock: register {:#x} reads {:#x}, {:#x} was written", i, got, held_[i]);
    }
  }

  // A data write, alone or (`wide`) as the high byte of a 16-bit write
  // whose low byte set the index first.
  void write_data(uint8_t v, bool wide = false) {
    const uint8_t reg = index_ == CmosRtc::REG_PS2_CENTURY ? CmosRtc::REG_CENTURY : index_;
    const bool was_running = running();
    if (wide) rtc_.write(0, 2, index_ | uint32_t{v} << 8);
    else rtc_.write(1, 1, v);
    if (is_time_register(reg)) {
      if (!was_running) {
        held_[reg] = v;
        held_known_[reg] = true;
      } else if ((reg == CmosRtc::REG_SECONDS || reg == CmosRtc::REG_MINUTES) &&
                 (binary() ? v <= 59 : ((v & 0xf) <= 9 && v <= 0x59))) {
        const uint8_t got = peek(reg);
        FUZZ_CHECK(got == v, "register {:#x} written {:#x} while running reads {:#x} at once", reg, v, got);
      }
      return;
    }
    if (reg == CmosRtc::REG_A || reg == CmosRtc::REG_B) {
      // The registers keep the time they had, in the format they had.
      if (was_running)
        for (uint8_t i : {0, 2, 4, 6, 7, 8, 9, 0x32}) held_known_[i] = false;
      if (reg == CmosRtc::REG_A) a_ = v & 0x7f;
      else b_ = v & CmosRtc::B_SET ? v & ~CmosRtc::B_UIE : v;
      if (!running()) {
        for (uint8_t i : {0, 2, 4, 6, 7, 8, 9, 0x32}) {
          held_[i] = peek(i);
          held_known_[i] = true;
        }
      }
      return;
    }
    if (reg == CmosRtc::REG_C || reg == CmosRtc::REG_D) return;
    memory_[reg] = v;
    memory_known_[reg] = true;
  }

  void read_data(uint8_t got) {
    const uint8_t reg = index_ == CmosRtc::REG_PS2_CENTURY ? CmosRtc::REG_CENTURY : index_;
    if (reg == CmosRtc::REG_A) {
      FUZZ_CHECK((got & 0x7f) == a_, "A reads {:#x}, {:#x} was written", got, a_);
    } else if (reg == CmosRtc::REG_B) {
      FUZZ_CHECK(got == b_, "B reads {:#x}, expected {:#x}", got, b_);
    } else if (reg == CmosRtc::REG_C) {
      const bool af = got & CmosRtc::C_AF;
      FUZZ_CHECK((got & ~(CmosRtc::C_AF | CmosRtc::C_IRQF)) == 0, "C reads {:#x}: a flag that never sets", got);
      FUZZ_CHECK(bool(got & CmosRtc::C_IRQF) == (af && (b_ & CmosRtc::B_AIE)), "C reads {:#x} with B {:#x}", got, b_);
      FUZZ_CHECK(!af || running(), "C reads AF with the clock stopped");
    } else if (reg == CmosRtc::REG_D) {
      FUZZ_CHECK(got == CmosRtc::D_VRT, "D reads {:#x}", got);
    } else if (!is_time_register(reg) && memory_known_[reg]) {
      FUZZ_CHECK(got == memory_[reg], "CMOS byte {:#x} reads {:#x}, {:#x} was written", reg, got, memory_[reg]);
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  Harness h(static_cast<int64_t>(in.take<uint64_t>() % (kLastSecond + 1)));
  for (int ops = 0; !in.done() && ops < 1024; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    switch (op & 7) {
      case 0: {  // index port, maybe with the NMI bit; sometimes a time register on purpose
        uint8_t v = in.take<uint8_t>();
        if (op & 0x80) v = (v & 0x80) | (v % 10);
        h.rtc_.write(0, 1, v);
        h.index_ = v & 0x7f;
        FUZZ_CHECK(h.rtc_.nmi_masked() == ((v & 0x80) != 0), "NMI mask");
        break;
      }
      case 1:  // data write
        h.write_data(in.take<uint8_t>());
        break;
      case 2: {  // data read
        const uint32_t got = h.rtc_.read(1, 1);
        FUZZ_CHECK(got <= 0xff, "a byte read gave {:#x}", got);
        h.read_data(static_cast<uint8_t>(got));
        break;
      }
      case 3: {  // a wide access over both ports: index then data
        const uint16_t v = in.take<uint16_t>();
        if (op & 0x10) {
          h.index_ = static_cast<uint8_t>(v & 0x7f);
          h.write_data(static_cast<uint8_t>(v >> 8), true);
          FUZZ_CHECK(!h.rtc_.nmi_masked(), "NMI mask");
        } else {
          const uint32_t got = h.rtc_.read(0, 2);
          FUZZ_CHECK((got & 0xff) == 0xff, "the index port reads {:#x}", got & 0xff);
          h.read_data(static_cast<uint8_t>(got >> 8));
        }
        break;
      }
      case 4:  // a short step, inside a second
        h.now_ += in.take<uint16_t>() * uint64_t{16};
        break;
      case 5:  // a long step
        h.now_ += in.take<uint32_t>() * uint64_t{1000};
        break;
      case 6: {  // a step across the update cycle: the clock moves one second per second
        const int64_t before = h.rtc_.seconds_at(h.now_);
        const uint64_t step = in.take<uint8_t>() * (kSecond / 16);
        h.now_ += step;
        if (h.running()) {
          const int64_t moved = h.rtc_.seconds_at(h.now_) - before;
          FUZZ_CHECK(moved >= 0 && uint64_t(moved) >= step / kSecond && uint64_t(moved) <= step / kSecond + 1,
                     "{} ns moved the clock by {} s", step, moved);
        } else {
          FUZZ_CHECK(h.rtc_.seconds_at(h.now_) == before, "a stopped clock moved");
        }
        break;
      }
      case 7:
        h.check_time();
        h.check_update_cycle();
        h.check_held();
        break;
    }
  }
  h.check_time();
  h.check_update_cycle();
  h.check_held();
  return 0;
}
