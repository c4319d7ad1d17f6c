// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/cmos_rtc.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/state_archive.h"
#include "devices/port_bus.h"

namespace topolab {
namespace {

constexpr uint64_t kSecond = 1'000'000'000, kMs = 1'000'000, kUs = 1'000;
constexpr uint64_t kMiB = 1 << 20;

// A guest on a port bus: every access may cost virtual time, as an I/O exit
// does under the cost model.
struct Guest {
  explicit Guest(CmosRtc::Config config = {}) : rtc([this] { return now; }, config) {
    bus.attach(CmosRtc::kBase, CmosRtc::kPortCount, rtc);
  }
  uint8_t cmos_read(uint8_t index) {  // Linux's CMOS_READ
    out(0x70, index);
    now += per_access_ns;
    return static_cast<uint8_t>(bus.read(0x71, 1));
  }
  void cmos_write(uint8_t value, uint8_t index) {  // Linux's CMOS_WRITE(val, addr)
    out(0x70, index);
    out(0x71, value);
  }
  void out(uint16_t port, uint8_t value) {
    now += per_access_ns;
    bus.write(port, 1, value);
  }
  std::vector<uint8_t> date() {  // seconds, minutes, hours, day of week, day, month, year, century
    return {cmos_read(0x00), cmos_read(0x02), cmos_read(0x04), cmos_read(0x06),
            cmos_read(0x07), cmos_read(0x08), cmos_read(0x09), cmos_read(0x32)};
  }

  uint64_t now = 0;
  uint64_t per_access_ns = 0;
  PortBus bus;
  CmosRtc rtc;
};

using Date = std::vector<uint8_t>;

TEST(CmosRtc, PowersOnAt2026InBcd24HourModeAsQemu) {
  Guest g;
  EXPECT_EQ(g.date(), (Date{0x00, 0x00, 0x00, 0x05, 0x01, 0x01, 0x26, 0x20}));  // Thursday 2026-01-01
  EXPECT_EQ(g.cmos_read(0x0a), 0x26u);
  EXPECT_EQ(g.cmos_read(0x0b), 0x02u);
  EXPECT_EQ(g.cmos_read(0x0c), 0x00u);
  EXPECT_EQ(g.cmos_read(0x0d), 0x80u);  // VRT: Linux checks bit 6 is 0
  EXPECT_EQ(g.rtc.seconds_at(0), CmosRtc::kDefaultStart);
}

TEST(CmosRtc, CountsVirtualTimeNotHostTime) {
  Guest g;
  g.now = 59 * kSecond + 999 * kMs;
  EXPECT_EQ(g.date(), (Date{0x59, 0x00, 0x00, 0x05, 0x01, 0x01, 0x26, 0x20}));
  g.now = 60 * kSecond;
  EXPECT_EQ(g.date(), (Date{0x00, 0x01, 0x00, 0x05, 0x01, 0x01, 0x26, 0x20}));
  g.now = 3 * 3600 * kSecond + 25 * 60 * kSecond + 7 * kSecond;
  EXPECT_EQ(g.date(), (Date{0x07, 0x25, 0x03, 0x05, 0x01, 0x01, 0x26, 0x20}));
  EXPECT_EQ(g.rtc.seconds_at(g.now), CmosRtc::kDefaultStart + 3 * 3600 + 25 * 60 + 7);
}

struct Boundary {
  int64_t start;  // one second before the boundary
  Date before, after;
};

TEST(CmosRtc, ReadsAcrossMinuteHourDayMonthLeapDayYearAndCenturyBoundaries) {
  const Boundary cases[] = {
      {1767229199, {0x59, 0x59, 0x00, 0x05, 0x01, 0x01, 0x26, 0x20}, {0x00, 0x00, 0x01, 0x05, 0x01, 0x01, 0x26, 0x20}},
      {1769903999, {0x59, 0x59, 0x23, 0x07, 0x31, 0x01, 0x26, 0x20}, {0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x26, 0x20}},
      {1803859199, {0x59, 0x59, 0x23, 0x01, 0x28, 0x02, 0x27, 0x20}, {0x00, 0x00, 0x00, 0x02, 0x01, 0x03, 0x27, 0x20}},
      {1835395199, {0x59, 0x59, 0x23, 0x02, 0x28, 0x02, 0x28, 0x20}, {0x00, 0x00, 0x00, 0x03, 0x29, 0x02, 0x28, 0x20}},
      {1798761599, {0x59, 0x59, 0x23, 0x05, 0x31, 0x12, 0x26, 0x20}, {0x00, 0x00, 0x00, 0x06, 0x01, 0x01, 0x27, 0x20}},
      {4102444799, {0x59, 0x59, 0x23, 0x05, 0x31, 0x12, 0x99, 0x20}, {0x00, 0x00, 0x00, 0x06, 0x01, 0x01, 0x00, 0x21}},
  };
  for (const Boundary& c : cases) {
    Guest g({.start = c.start});
    g.now = kSecond - 1;
    EXPECT_EQ(g.date(), c.before) << c.start;
    g.now = kSecond;
    EXPECT_EQ(g.date(), c.after) << c.start;
  }
}

TEST(CmosRtc, BinaryModeAndTwelveHourModeFormatTheSameClock) {
  Guest g({.start = 1773582330});  // Sunday 2026-03-15 13:45:30
  EXPECT_EQ(g.date(), (Date{0x30, 0x45, 0x13, 0x01, 0x15, 0x03, 0x26, 0x20}));
  g.cmos_write(CmosRtc::B_DM_BINARY | CmosRtc::B_24H, 0x0b);
  EXPECT_EQ(g.date(), (Date{30, 45, 13, 1, 15, 3, 26, 20}));
  g.cmos_write(CmosRtc::B_DM_BINARY, 0x0b);  // binary, 12 hours
  EXPECT_EQ(g.cmos_read(0x04), 0x80u | 1);  // 1 PM
  g.cmos_write(0x00, 0x0b);                 // BCD, 12 hours
  EXPECT_EQ(g.cmos_read(0x04), 0x81u);
  EXPECT_EQ(g.cmos_read(0x0b), 0x00u);
}

TEST(CmosRtc, TwelveHourModeNamesMidnightAndNoonTwelve) {
  Guest midnight;
  midnight.cmos_write(0x00, 0x0b);
  EXPECT_EQ(midnight.cmos_read(0x04), 0x12u);  // 12 AM
  midnight.cmos_write(CmosRtc::B_DM_BINARY, 0x0b);
  EXPECT_EQ(midnight.cmos_read(0x04), 12u);
  Guest noon({.start = 1783166400});  // 2026-07-04 12:00:00
  noon.cmos_write(0x00, 0x0b);
  EXPECT_EQ(noon.cmos_read(0x04), 0x92u);  // 12 PM
  noon.now = 11 * 3600 * kSecond + 59 * 60 * kSecond + 59 * kSecond;
  EXPECT_EQ(noon.cmos_read(0x04), 0x91u);  // 11 PM
  noon.now += kSecond;
  EXPECT_EQ(noon.cmos_read(0x04), 0x12u);  // midnight again
}

TEST(CmosRtc, UipIsSetInTheLast244UsOfEverySecond) {
  Guest g;
  const uint64_t window = CmosRtc::kUipNs;
  for (uint64_t s = 0; s < 3; ++s) {
    const uint64_t boundary = (s + 1) * kSecond;
    g.now = boundary - window - 1;
    EXPECT_EQ(g.cmos_read(0x0a), 0x26u) << s;
    EXPECT_EQ(g.cmos_read(0x00), s) << s;
    g.now = boundary - window;
    EXPECT_EQ(g.cmos_read(0x0a), 0x80u | 0x26u) << s;
    EXPECT_EQ(g.cmos_read(0x00), s) << s;  // not updated yet
    g.now = boundary - 1;
    EXPECT_TRUE(g.rtc.update_in_progress_at(g.now));
    g.now = boundary;
    EXPECT_EQ(g.cmos_read(0x0a), 0x26u) << s;
    EXPECT_EQ(g.cmos_read(0x00), s + 1) << s;
  }
  g.cmos_write(0xa6, 0x0a);  // UIP is read only
  EXPECT_EQ(g.cmos_read(0x0a), 0x26u);
}

// Linux 6.1's mc146818_avoid_UIP (drivers/rtc/rtc-mc146818-lib.c), which
// mc146818_get_time runs: read the seconds, give up on this try and
// mdelay(1) while UIP is set, check the seconds again, read the rest,
// check UIP and the seconds once more; at most 10 tries. Every access
// costs the I/O exit (2 us by default) of virtual time.
struct Readout {
  bool ok;
  int tries;
  Date date;
};

Readout linux_get_time(Guest& g, uint64_t mdelay_ns) {
  for (int i = 0; i < 10; ++i) {
    const uint8_t seconds = g.cmos_read(0x00);
    if (g.cmos_read(0x0a) & 0x80) {
      g.now += mdelay_ns;
      continue;
    }
    if (seconds != g.cmos_read(0x00)) continue;
    Date d = {seconds, g.cmos_read(0x02), g.cmos_read(0x04), g.cmos_read(0x07),
              g.cmos_read(0x08), g.cmos_read(0x09), g.cmos_read(0x32)};
    (void)g.cmos_read(0x0b);
    if (g.cmos_read(0x0a) & 0x80) {
      g.now += mdelay_ns;
      continue;
    }
    if (seconds != g.cmos_read(0x00)) continue;
    return {true, i + 1, d};
  }
  return {false, 10, {}};
}

TEST(CmosRtc, LinuxReadingTheTimeInsideTheUipWindowGetsTheNextSecond) {
  Guest g;
  g.per_access_ns = 2 * kUs;
  g.now = kSecond - 100 * kUs;  // inside the window
  Readout r = linux_get_time(g, 1 * kMs);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.tries, 2);
  EXPECT_EQ(r.date, (Date{0x01, 0x00, 0x00, 0x01, 0x01, 0x26, 0x20}));
}

TEST(CmosRtc, APollThatCostsLittleVirtualTimeStillSeesUipClear) {
  // Even with free exits, the poll's instructions move virtual time on; UIP
  // clears at the boundary however small the steps.
  Guest g;
  g.per_access_ns = 50;
  g.now = kSecond - CmosRtc::kUipNs;
  int polls = 0;
  while (g.cmos_read(0x0a) & 0x80) ++polls;
  EXPECT_GE(g.now, kSecond);
  EXPECT_LE(g.now, kSecond + 100);
  EXPECT_EQ(polls, 2441);  // reads at 100 ns steps inside the window
  EXPECT_EQ(g.cmos_read(0x00), 0x01u);
}

// Linux 6.1's mc146818_set_time: SET, divider reset, the time in BCD,
// then B and A restored; the first update comes half a second after the
// divider leaves reset.
TEST(CmosRtc, LinuxSettingTheTimeRestartsTheSecondHalfASecondLater) {
  Guest g;
  g.now = 10 * kSecond + 300 * kMs;
  const uint8_t save_control = g.cmos_read(0x0b);
  g.cmos_write(save_control | 0x80, 0x0b);
  const uint8_t save_freq_select = g.cmos_read(0x0a);
  g.cmos_write(save_freq_select | 0x70, 0x0a);
  g.cmos_write(0x31, 0x09);  // year
  g.cmos_write(0x05, 0x08);  // month
  g.cmos_write(0x17, 0x07);  // day
  g.cmos_write(0x08, 0x04);  // hours
  g.cmos_write(0x09, 0x02);  // minutes
  g.cmos_write(0x10, 0x00);  // seconds
  g.cmos_write(0x20, 0x32);  // century
  g.now += 5 * kSecond;      // stopped while in SET and divider reset
  EXPECT_EQ(g.rtc.seconds_at(g.now), 1936771750);  // 2031-05-17 08:09:10
  g.cmos_write(save_control, 0x0b);
  EXPECT_EQ(g.rtc.seconds_at(g.now), 1936771750);  // the divider still in reset
  g.cmos_write(save_freq_select, 0x0a);
  const uint64_t released = g.now;
  EXPECT_EQ(g.date(), (Date{0x10, 0x09, 0x08, 0x07, 0x17, 0x05, 0x31, 0x20}));  // a Saturday
  g.now = released + 500 * kMs - 1;
  EXPECT_EQ(g.cmos_read(0x00), 0x10u);
  g.now = released + 500 * kMs;
  EXPECT_EQ(g.cmos_read(0x00), 0x11u);
  EXPECT_EQ(g.rtc.seconds_at(released + 3600 * kSecond + 500 * kMs), 1936771750 + 3601);
}

TEST(CmosRtc, SetStopsUpdatesAndKeepsTheDividerPhase) {
  Guest g;
  g.now = 200 * kMs;
  g.cmos_write(0x02 | 0x80 | CmosRtc::B_UIE, 0x0b);
  EXPECT_EQ(g.cmos_read(0x0b), 0x82u);  // SET clears UIE
  EXPECT_FALSE(g.rtc.update_in_progress_at(kSecond - 1));  // no UIP while in SET
  g.now = 5 * kSecond + 100 * kMs;
  EXPECT_EQ(g.cmos_read(0x00), 0x00u);
  g.cmos_write(0x45, 0x00);  // a write in SET mode lands in the register
  EXPECT_EQ(g.cmos_read(0x00), 0x45u);
  g.cmos_write(0x02, 0x0b);
  g.now = 6 * kSecond - 1;  // the divider kept its phase: the update is at 6 s
  EXPECT_EQ(g.cmos_read(0x00), 0x45u);
  g.now = 6 * kSecond;
  EXPECT_EQ(g.cmos_read(0x00), 0x46u);
}

TEST(CmosRtc, WritingATimeRegisterWhileRunningSetsTheClock) {
  Guest g;
  g.now = 3 * kSecond + 300 * kMs;
  g.cmos_write(0x30, 0x02);  // minutes = 30: the seconds stay as they read
  EXPECT_EQ(g.date(), (Date{0x03, 0x30, 0x00, 0x05, 0x01, 0x01, 0x26, 0x20}));
  g.now = 4 * kSecond;
  EXPECT_EQ(g.cmos_read(0x00), 0x04u);
  EXPECT_EQ(g.rtc.seconds_at(g.now), CmosRtc::kDefaultStart + 30 * 60 + 4);
  g.cmos_write(0x19, 0x32);  // century 19
  EXPECT_EQ(g.rtc.seconds_at(g.now), CmosRtc::kDefaultStart + 30 * 60 + 4 - 3'155'760'000);  // 100 Gregorian years
  EXPECT_EQ(g.cmos_read(0x37), 0x19u);  // the PS/2 alias
}

TEST(CmosRtc, IndexPortKeepsTheNmiMaskBit) {
  Guest g;
  EXPECT_FALSE(g.rtc.nmi_masked());
  g.out(0x70, 0x80 | 0x0d);
  EXPECT_TRUE(g.rtc.nmi_masked());
  EXPECT_EQ(g.bus.read(0x71, 1), 0x80u);  // register D, not 0x8d
  EXPECT_EQ(g.bus.read(0x70, 1), 0xffu);  // write only
  g.out(0x70, 0x0f);
  EXPECT_FALSE(g.rtc.nmi_masked());
}

TEST(CmosRtc, MemoryBytesAsQemuPcFillsThemFor128MiB) {
  Guest g({.below_4g_ram_bytes = 128 * kMiB});
  EXPECT_EQ(g.cmos_read(0x10), 0x00u);  // no floppy
  EXPECT_EQ(g.cmos_read(0x12), 0x00u);  // no hard disk
  EXPECT_EQ(g.cmos_read(0x14), 0x06u);  // FPU, PS/2 mouse
  EXPECT_EQ(g.cmos_read(0x15) | g.cmos_read(0x16) << 8, 640);
  EXPECT_EQ(g.cmos_read(0x17) | g.cmos_read(0x18) << 8, 0xffff);  // 127 MiB clamps
  EXPECT_EQ(g.cmos_read(0x30) | g.cmos_read(0x31) << 8, 0xffff);
  EXPECT_EQ(g.cmos_read(0x34) | g.cmos_read(0x35) << 8, 112 * 16);  // 64 KiB units above 16 MiB
  EXPECT_EQ(g.cmos_read(0x5b) | g.cmos_read(0x5c) << 8 | g.cmos_read(0x5d) << 16, 0);
  EXPECT_EQ(g.cmos_read(0x3d), 0x12u);  // boot order "cad"
  EXPECT_EQ(g.cmos_read(0x38), 0x30u);
  EXPECT_EQ(g.cmos_read(0x0f), 0x00u);  // shutdown status
}

TEST(CmosRtc, MemoryBytesForSmallAndLargeRam) {
  Guest small({.below_4g_ram_bytes = 32 * kMiB});
  EXPECT_EQ(small.cmos_read(0x17) | small.cmos_read(0x18) << 8, 31 * 1024);
  EXPECT_EQ(small.cmos_read(0x34) | small.cmos_read(0x35) << 8, 16 * 16);
  Guest tiny({.below_4g_ram_bytes = 2 * kMiB});
  EXPECT_EQ(tiny.cmos_read(0x34) | tiny.cmos_read(0x35) << 8, 0);
  EXPECT_EQ(tiny.cmos_read(0x17) | tiny.cmos_read(0x18) << 8, 1024);
  Guest big({.below_4g_ram_bytes = 3072 * kMiB, .above_4g_ram_bytes = 2048 * kMiB});
  EXPECT_EQ(big.cmos_read(0x34) | big.cmos_read(0x35) << 8, (3072 - 16) * 16);
  EXPECT_EQ(big.cmos_read(0x17) | big.cmos_read(0x18) << 8, 0xffff);
  EXPECT_EQ(big.cmos_read(0x5b) | big.cmos_read(0x5c) << 8 | big.cmos_read(0x5d) << 16, 32768);
}

TEST(CmosRtc, OtherBytesAreMemoryAndCAndDAreReadOnly) {
  Guest g;
  g.cmos_write(0x0a, 0x0f);  // Linux's warm-reset code for SMP start-up
  EXPECT_EQ(g.cmos_read(0x0f), 0x0au);
  g.cmos_write(0x5a, 0x7f);
  EXPECT_EQ(g.cmos_read(0x7f), 0x5au);
  g.cmos_write(0x59, 0x01);  // the alarm registers are storage here
  EXPECT_EQ(g.cmos_read(0x01), 0x59u);
  g.cmos_write(0xff, 0x0c);
  g.cmos_write(0x00, 0x0d);
  EXPECT_EQ(g.cmos_read(0x0c), 0x00u);
  EXPECT_EQ(g.cmos_read(0x0d), 0x80u);
  // A word write to 0x70 is the index then the data, as QEMU splits it.
  g.bus.write(0x70, 2, 0x3c0e);
  EXPECT_EQ(g.cmos_read(0x0e), 0x3cu);
  EXPECT_EQ(g.bus.read(0x70, 2), 0x3cffu);
}

// Finding F9: the alarm bytes (0x1, 0x3, 0x5) are no time registers. The
// MC146818A's update cycle never writes them; they hold what the program
// wrote with the clock stopped (B.SET) or running, and QEMU 7.2's
// cmos_ioport_write stores them as plain CMOS data. The harness's rule had
// expected a value written under SET to survive a later write made while
// the clock ran.
TEST(CmosRtc, AlarmBytesHoldTheLastWriteWhetherTheClockRunsOrIsStopped) {
  Guest g;
  g.cmos_write(0x82, 0x0b);  // SET: the clock stops
  g.cmos_write(0x23, 0x05);  // hours alarm
  EXPECT_EQ(g.cmos_read(0x05), 0x23u);
  g.cmos_write(0x02, 0x0b);  // running again
  g.now = 3 * kSecond;
  EXPECT_EQ(g.cmos_read(0x05), 0x23u);  // no update cycle touches it
  g.cmos_write(0x00, 0x05);  // written while it runs
  g.cmos_write(0x82, 0x0b);  // stopped again: it reads the last write
  g.now = 9 * kSecond;
  EXPECT_EQ(g.cmos_read(0x05), 0x00u);
  g.cmos_write(0x45, 0x01);
  g.cmos_write(0x59, 0x03);
  EXPECT_EQ(g.cmos_read(0x01), 0x45u);
  EXPECT_EQ(g.cmos_read(0x03), 0x59u);
  EXPECT_EQ(g.cmos_read(0x00), 0x03u);  // the seconds, held under SET since 3 s, are apart from them
}

// The alarm (data sheet "Alarm"; QEMU's check_alarm): at each update whose
// new time matches the three alarm bytes, a byte of 0xC0-0xFF matching any
// value. C.AF says one came since C was last read (IRQF too with B.AIE).
TEST(CmosRtc, TheAlarmFiresAtTheUpdatesItMatchesAndSetsAfInC) {
  Guest g;
  g.now = kSecond / 2;  // 2026-01-01 00:00:00.5
  EXPECT_EQ(g.cmos_read(0x0c), 0u);
  for (uint8_t alarm : {0x01, 0x03, 0x05}) g.cmos_write(CmosRtc::kAlarmDontCare, alarm);
  EXPECT_EQ(g.rtc.next_alarm_ns(g.now), kSecond) << "don't care everywhere: every second";
  g.cmos_write(0x30, 0x01);  // at :30 of every minute
  EXPECT_EQ(g.rtc.next_alarm_ns(g.now), 30 * kSecond);
  g.cmos_write(0x02, 0x03);  // 00:02:30
  g.cmos_write(0x00, 0x05);
  EXPECT_EQ(g.rtc.next_alarm_ns(g.now), 150 * kSecond);
  EXPECT_EQ(g.rtc.next_alarm_ns(150 * kSecond), 150 * kSecond + 86'400 * kSecond) << "then a day later";
  g.now = 150 * kSecond - 1;
  EXPECT_EQ(g.cmos_read(0x0c), 0u);
  g.now = 150 * kSecond + 1;
  EXPECT_EQ(g.cmos_read(0x0c), CmosRtc::C_AF);
  EXPECT_EQ(g.cmos_read(0x0c), 0u) << "reading C cleared it";
  g.cmos_write(CmosRtc::kResetB | CmosRtc::B_AIE, 0x0b);
  EXPECT_TRUE(g.rtc.alarm_interrupts());
  g.cmos_write(CmosRtc::kAlarmDontCare, 0x03);
  g.now += 61 * kSecond;
  EXPECT_EQ(g.cmos_read(0x0c), CmosRtc::C_AF | CmosRtc::C_IRQF);
  // A stopped clock has no updates, so no alarm.
  g.cmos_write(CmosRtc::kResetB | CmosRtc::B_SET, 0x0b);
  EXPECT_EQ(g.rtc.next_alarm_ns(g.now), std::nullopt);
}

// In 12-hour mode the hours alarm is compared as the register reads, PM bit included.
TEST(CmosRtc, TheHoursAlarmTakesTheTwelveHourFormat) {
  Guest g;
  g.cmos_write(CmosRtc::kResetB & ~CmosRtc::B_24H, 0x0b);
  g.cmos_write(0x00, 0x01);
  g.cmos_write(0x00, 0x03);
  g.cmos_write(0x81, 0x05);  // 1 PM
  EXPECT_EQ(g.rtc.next_alarm_ns(0), 13 * 3600 * kSecond);
}

TEST(CmosRtc, AVcpuBehindTheWriterSeesTheClockAsSet) {
  Guest g;
  g.now = 10 * kSecond;
  g.cmos_write(0x00, 0x00);  // seconds = 0 at 10 s
  // A vCPU whose clock is behind the writer's sees the time as set.
  EXPECT_EQ(g.rtc.seconds_at(9 * kSecond), CmosRtc::kDefaultStart);
  EXPECT_EQ(g.rtc.seconds_at(11 * kSecond), CmosRtc::kDefaultStart + 1);
}

// What a guest sees of the RTC from its current time on, a quarter of a
// second at a time: the date, UIP, and the registers around it.
std::vector<uint64_t> run_on(Guest& g) {
  std::vector<uint64_t> seen;
  seen.push_back(g.rtc.nmi_masked());
  seen.push_back(g.bus.read(0x71, 1));  // the register selected before the snapshot
  for (int step = 0; step < 12; ++step) {
    for (uint8_t byte : g.date()) seen.push_back(byte);
    seen.push_back(g.cmos_read(CmosRtc::REG_A));
    seen.push_back(g.cmos_read(CmosRtc::REG_B));
    seen.push_back(g.cmos_read(CmosRtc::REG_HOURS_ALARM));
    seen.push_back(g.cmos_read(0x40));
    seen.push_back(static_cast<uint64_t>(g.rtc.seconds_at(g.now)));
    g.now += 250 * kMs;
  }
  return seen;
}

TEST(CmosRtcSnapshot, RoundTripsTheRunningClockItsPhaseAndTheRegisters) {
  Guest g;
  g.per_access_ns = 10 * kUs;
  g.now = 300 * kMs;
  // Stop the clock, set 13:42 in binary, and let it run from there.
  g.cmos_write(CmosRtc::B_SET | CmosRtc::B_24H | CmosRtc::B_DM_BINARY, CmosRtc::REG_B);
  g.cmos_write(13, CmosRtc::REG_HOURS);
  g.cmos_write(42, CmosRtc::REG_MINUTES);
  g.cmos_write(CmosRtc::B_24H | CmosRtc::B_DM_BINARY, CmosRtc::REG_B);
  g.cmos_write(7, CmosRtc::REG_HOURS_ALARM);
  g.cmos_write(0x5a, 0x40);  // a byte of CMOS memory
  g.now += 2 * kSecond + 700 * kMs;
  g.out(0x70, CmosRtc::INDEX_NMI_DISABLE | CmosRtc::REG_MINUTES);

  const std::string bytes = save_state_bytes(g.rtc);
  Guest restored;
  restored.per_access_ns = g.per_access_ns;
  restored.now = g.now;
  load_state_bytes(restored.rtc, bytes);
  EXPECT_EQ(save_state_bytes(restored.rtc), bytes);

  const std::vector<uint64_t> seen = run_on(g);
  EXPECT_EQ(seen[0], 1u);  // NMI masked
  EXPECT_EQ(seen[1], 42u);
  EXPECT_EQ(seen[2 + 0], 3u);  // 13:42:03: set at 0.3 s, read 2.7 s (and the accesses) later
  EXPECT_EQ(run_on(restored), seen);
}

// Stopped with the divider in reset, the clock restarts half a second
// before its next update (as QEMU's), not at the phase it stopped at.
TEST(CmosRtcSnapshot, RoundTripsAClockStoppedWithItsDividerInReset) {
  Guest g;
  g.now = 400 * kMs;
  g.cmos_write(CmosRtc::A_DV_RESET | 0x06, CmosRtc::REG_A);
  g.now += 2 * kSecond;

  const std::string bytes = save_state_bytes(g.rtc);
  Guest restored;
  restored.now = g.now;
  load_state_bytes(restored.rtc, bytes);
  EXPECT_EQ(save_state_bytes(restored.rtc), bytes);

  const auto run = [](Guest& guest) {
    std::vector<uint64_t> seen{guest.cmos_read(CmosRtc::REG_SECONDS)};
    guest.cmos_write(CmosRtc::kResetA, CmosRtc::REG_A);
    for (int step = 0; step < 15; ++step) {
      guest.now += 100 * kMs;
      seen.push_back(guest.cmos_read(CmosRtc::REG_SECONDS));
      seen.push_back(guest.rtc.update_in_progress_at(guest.now));
    }
    return seen;
  };
  const std::vector<uint64_t> seen = run(g);
  EXPECT_EQ(seen[0], 0u);  // stopped at 00:00:00
  EXPECT_EQ(run(restored), seen);
}

}  // namespace
}  // namespace topolab
