// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pit8254.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include "base/state_archive.h"
#include "devices/port_bus.h"

namespace topolab {
namespace {

// 1 tick of 1.193182 MHz is 838.1 ns; times below are whole ticks.
uint64_t ns_of_ticks(uint64_t ticks) { return Pit8254::ns_at(ticks); }

struct Rig {
  uint64_t now = 0;
  Pit8254 pit{[this] { return now; }};
  void control(uint8_t v) { pit.write(3, 1, v); }
  void count(unsigned c, uint16_t v) {
    pit.write(c, 1, v & 0xff);
    pit.write(c, 1, v >> 8);
  }
  uint16_t read16(unsigned c) {
    const uint8_t lo = static_cast<uint8_t>(pit.read(c, 1));
    return static_cast<uint16_t>(lo | (pit.read(c, 1) << 8));
  }
};

TEST(Pit8254, Mode2CountsDownAndReloadsOnVirtualTime) {
  Rig r;
  r.control(0x34);  // channel 0, LSB then MSB, mode 2
  r.count(0, 1000);
  r.now = ns_of_ticks(10);
  r.control(0x00);  // latch channel 0
  r.now = ns_of_ticks(500);  // the latch holds
  EXPECT_EQ(r.read16(0), 990u);
  EXPECT_EQ(r.read16(0), 500u);  // live again
  r.now = ns_of_ticks(1000 + 250);
  EXPECT_EQ(r.read16(0), 750u);  // reloaded
  EXPECT_TRUE(r.pit.out_at(0, ns_of_ticks(998)));
  EXPECT_FALSE(r.pit.out_at(0, ns_of_ticks(999)));  // low for the tick before the reload
  EXPECT_TRUE(r.pit.out_at(0, ns_of_ticks(1000)));
}

TEST(Pit8254, Mode3IsASquareWaveAndZeroMeans65536) {
  Rig r;
  r.control(0x36);
  r.count(0, 0);
  EXPECT_TRUE(r.pit.out_at(0, ns_of_ticks(32767)));
  EXPECT_FALSE(r.pit.out_at(0, ns_of_ticks(32768)));
  EXPECT_TRUE(r.pit.out_at(0, ns_of_ticks(65536)));
}

// Linux's pit_calibrate_tsc: gate on, channel 2 mode 0, poll OUT2 in port B.
TEST(Pit8254, Channel2Mode0RaisesOut2InPortBAtTerminalCount) {
  Rig r;
  PortDevice& port_b = r.pit.port_b();
  port_b.write(0, 1, (port_b.read(0, 1) & ~0x02u) | 0x01);
  r.control(0xb0);  // channel 2, LSB then MSB, mode 0
  EXPECT_EQ(port_b.read(0, 1) & 0x20, 0u);  // mode 0: OUT low after the control word
  r.count(2, 100);
  r.now = ns_of_ticks(99);
  EXPECT_EQ(port_b.read(0, 1) & 0x20, 0u);
  r.now = ns_of_ticks(100);
  EXPECT_EQ(port_b.read(0, 1) & 0x21, 0x21u);
  r.now = ns_of_ticks(100 + 5);
  EXPECT_EQ(r.read16(2), static_cast<uint16_t>(100 - 105));  // mode 0 wraps
}

TEST(Pit8254, ReadBackLatchesStatusThenCount) {
  Rig r;
  r.control(0x72);  // channel 1, both, mode 1
  EXPECT_EQ(r.read16(1), 0u);  // nothing loaded yet
  r.control(0xe4);  // read-back: status only, channel 1
  EXPECT_EQ(r.pit.read(1, 1), 0x80u | 0x40u | 0x30u | 0x02u);  // OUT high, null count, both, mode 1
  r.count(1, 300);
  r.now = ns_of_ticks(50);
  r.control(0xc4);  // read-back: count and status, channel 1
  EXPECT_EQ(r.pit.read(1, 1), 0x32u);  // OUT low in mode 1 while counting, count loaded
  EXPECT_EQ(r.read16(1), 250u);
}

TEST(Pit8254, SingleByteModesAndAGateEdgeRestartingMode2) {
  Rig r;
  r.control(0x94);  // channel 2, LSB only, mode 2
  r.pit.write(2, 1, 50);
  r.now = ns_of_ticks(20);
  EXPECT_EQ(r.pit.read(2, 1), 30u);
  r.pit.port_b().write(0, 1, 1);  // gate rises: reload
  r.now = ns_of_ticks(30);
  EXPECT_EQ(r.pit.read(2, 1), 40u);
  r.control(0xa0);  // channel 2, MSB only, mode 0
  r.pit.write(2, 1, 0x02);
  EXPECT_EQ(r.pit.read(2, 1), 0x02u);
}

// IRQ 0 is channel 0's OUT at the times next_out_change gives: in every
// mode and for small and odd counts, it names exactly the first tick at
// which out_at differs, found here by walking tick by tick.
TEST(Pit8254, NextOutChangeIsTheFirstTickOutDiffers) {
  for (uint8_t mode : {0, 1, 2, 3, 4, 5, 6, 7})
    for (uint16_t count : {1, 2, 3, 4, 5, 7, 100}) {
      Rig r;
      r.now = ns_of_ticks(37) + 100;  // loaded part way through a tick
      r.control(static_cast<uint8_t>(0x30 | mode << 1));
      EXPECT_EQ(r.pit.next_out_change(0, r.now), std::nullopt) << "no count loaded yet";
      r.count(0, count);
      for (uint64_t tick = 30; tick < 37 + 3u * count + 5; ++tick) {
        const uint64_t ns = ns_of_ticks(tick) + (tick % 3) * 200;  // anywhere inside the tick
        const bool out = r.pit.out_at(0, ns);
        std::optional<uint64_t> first;
        for (uint64_t t = tick + 1; t < std::max<uint64_t>(tick, 37) + 2u * count + 4 && !first; ++t)
          if (r.pit.out_at(0, ns_of_ticks(t)) != out) first = ns_of_ticks(t);
        const std::optional<uint64_t> next = r.pit.next_out_change(0, ns);
        if (first) {
          EXPECT_EQ(next, first) << "mode " << int(mode) << " count " << count << " tick " << tick;
        } else {
          EXPECT_EQ(next, std::nullopt) << "mode " << int(mode) << " count " << count << " tick " << tick;
        }
        if (next) {
          EXPECT_EQ(Pit8254::ticks_at(*next), Pit8254::ticks_at(*next - 1) + 1) << "the tick's first ns";
        }
      }
    }
}

TEST(Pit8254, BadAccessesAreHarmless) {
  Rig r;
  EXPECT_EQ(r.pit.read(3, 1), 0xffu);
  r.pit.write(0, 2, 0xffff);  // byte ports only
  r.control(0x3e);             // mode 7 is mode 3
  r.count(0, 1);               // a count of 1 in mode 3
  r.now = 1'000'000'000;
  (void)r.read16(0);
  EXPECT_EQ(r.pit.count_at(5, r.now), 0u);
  EXPECT_FALSE(r.pit.out_at(5, r.now));
}

// Linux 6.1's TSC calibration when CPUID 0x15/0x16 give no frequency
// (arch/x86/kernel/tsc.c), replayed on a bus: every IN and OUT costs the
// I/O exit's virtual time (io_exit_ns, 2 us by default), get_cycles()
// reads a 2 GHz TSC of the same virtual clock.
struct LinuxGuest {
  static constexpr uint64_t kTscKhz = 2'000'000;
  static constexpr uint64_t kPitTickRate = 1'193'182;  // PIT_TICK_RATE

  explicit LinuxGuest(uint64_t io_ns) : io_ns(io_ns) {
    bus.attach(Pit8254::kBase, Pit8254::kPortCount, pit);
    bus.attach(Pit8254::kPortB, 1, pit.port_b());
  }
  uint8_t inb(uint16_t port) {
    now += io_ns;
    return static_cast<uint8_t>(bus.read(port, 1));
  }
  void outb(uint8_t value, uint16_t port) {
    now += io_ns;
    bus.write(port, 1, value);
  }
  uint64_t get_cycles() {
    now += insn_ns;
    return now * kTscKhz / 1'000'000;
  }

  bool pit_verify_msb(uint8_t val) {
    (void)inb(0x42);  // ignore the LSB
    return inb(0x42) == val;
  }
  bool pit_expect_msb(uint8_t val, uint64_t* tscp, uint64_t* deltap) {
    int count;
    uint64_t tsc = 0, prev_tsc = 0;
    for (count = 0; count < 50000; count++) {
      if (!pit_verify_msb(val)) break;
      prev_tsc = tsc;
      tsc = get_cycles();
    }
    *deltap = get_cycles() - prev_tsc;
    *tscp = tsc;
    return count > 5;
  }
  // quick_pit_calibrate: 0 when it fails ("Fast TSC calibration failed").
  uint64_t quick_pit_calibrate() {
    constexpr int kMaxQuickPitIterations = 50 * kPitTickRate / 1000 / 256;
    outb(static_cast<uint8_t>((inb(0x61) & ~0x02) | 0x01), 0x61);
    outb(0xb0, 0x43);
    outb(0xff, 0x42);
    outb(0xff, 0x42);
    pit_verify_msb(0);
    uint64_t tsc, delta, d1, d2;
    if (pit_expect_msb(0xff, &tsc, &d1)) {
      for (int i = 1; i <= kMaxQuickPitIterations; i++) {
        if (!pit_expect_msb(static_cast<uint8_t>(0xff - i), &delta, &d2)) break;
        delta -= tsc;
        if (i == 1 && d1 + d2 >= (delta * kMaxQuickPitIterations) >> 11) return 0;
        if (d1 + d2 >= delta >> 11) continue;
        if (!pit_verify_msb(static_cast<uint8_t>(0xfe - i))) break;
        quick_iterations = i;
        return delta * kPitTickRate / (uint64_t(i) * 256 * 1000);
      }
    }
    return 0;
  }
  // pit_calibrate_tsc: ULONG_MAX when it fails.
  uint64_t pit_calibrate_tsc(uint32_t latch, uint64_t ms, int loopmin) {
    outb(static_cast<uint8_t>((inb(0x61) & ~0x02) | 0x01), 0x61);
    outb(0xb0, 0x43);
    outb(latch & 0xff, 0x42);
    outb(static_cast<uint8_t>(latch >> 8), 0x42);
    uint64_t tsc, t1, t2;
    tsc = t1 = t2 = get_cycles();
    int pitcnt = 0;
    uint64_t tscmax = 0, tscmin = ULONG_MAX;
    while ((inb(0x61) & 0x20) == 0) {
      t2 = get_cycles();
      const uint64_t delta = t2 - tsc;
      tsc = t2;
      tscmin = std::min(tscmin, delta);
      tscmax = std::max(tscmax, delta);
      pitcnt++;
    }
    if (pitcnt < loopmin || tscmax > 10 * tscmin) return ULONG_MAX;
    return (t2 - t1) / ms;
  }

  uint64_t now = 0;
  uint64_t io_ns;
  uint64_t insn_ns = 10;  // a few instructions around each get_cycles()
  int quick_iterations = 0;
  Pit8254 pit{[this] { return now; }};
  PortBus bus;
};

TEST(Pit8254, Linux61QuickPitCalibrateSeesTheMsbFallOneByOne) {
  LinuxGuest g(2'000);
  g.outb(static_cast<uint8_t>((g.inb(0x61) & ~0x02) | 0x01), 0x61);
  g.outb(0xb0, 0x43);
  g.outb(0xff, 0x42);
  g.outb(0xff, 0x42);
  std::vector<uint8_t> msbs;
  std::vector<int> reads;
  for (int n = 0; n < 2000; ++n) {  // 8 ms of pairs at 4 us each
    (void)g.inb(0x42);
    const uint8_t msb = g.inb(0x42);
    if (msbs.empty() || msbs.back() != msb) {
      msbs.push_back(msb);
      reads.push_back(0);
    }
    ++reads.back();
  }
  ASSERT_GE(msbs.size(), 30u);
  for (size_t k = 0; k < msbs.size(); ++k) EXPECT_EQ(msbs[k], 0xff - k) << k;  // no MSB skipped
  // 256 ticks (214.5 us) per MSB: 53 or 54 pairs of 4 us, well over the 5
  // pit_expect_msb requires.
  for (size_t k = 1; k + 1 < reads.size(); ++k) EXPECT_TRUE(reads[k] == 53 || reads[k] == 54) << k;
}

TEST(Pit8254, Linux61QuickPitCalibrateMeasuresTheTscWithin500Ppm) {
  for (uint64_t io_ns : {0ull, 500ull, 2'000ull, 3'000ull}) {
    LinuxGuest g(io_ns);
    const uint64_t khz = g.quick_pit_calibrate();
    EXPECT_GE(khz, LinuxGuest::kTscKhz - LinuxGuest::kTscKhz / 2000) << io_ns;
    EXPECT_LE(khz, LinuxGuest::kTscKhz + LinuxGuest::kTscKhz / 2000) << io_ns;
    EXPECT_GT(g.quick_iterations, 0) << io_ns;
    EXPECT_LE(g.quick_iterations, 233) << io_ns;
  }
}

TEST(Pit8254, Linux61QuickPitCalibrateNeedsIoExitsUnderAbout3Us) {
  // d1 and d2 each span two LSB/MSB pairs (4 accesses); their sum must fall
  // below 1/2048 of at most 233 MSB steps (50 ms, 24.4 us), so 8 accesses
  // under 24.4 us. At the default 2 us it succeeds after 154 steps (33 ms
  // of virtual time); at 3.25 us it gives up at the first step and Linux
  // falls back to pit_calibrate_tsc against the PM timer.
  LinuxGuest fast(2'000);
  EXPECT_NE(fast.quick_pit_calibrate(), 0u);
  EXPECT_EQ(fast.quick_iterations, 154);
  LinuxGuest slow(3'250);
  EXPECT_EQ(slow.quick_pit_calibrate(), 0u);
  EXPECT_LT(slow.now, 1'000'000u);
}

TEST(Pit8254, Linux61PitCalibrateTscWaitsForOut2AndPassesItsSanityChecks) {
  // pit_hpet_ptimer_calibrate_cpu: CAL_LATCH (10 ms, 1000 loops at least),
  // then CAL2_LATCH (50 ms, 5000 loops), one after the other on one PIT.
  LinuxGuest g(2'000);
  const uint64_t cal = g.pit_calibrate_tsc(LinuxGuest::kPitTickRate / (1000 / 10), 10, 1000);
  ASSERT_NE(cal, ULONG_MAX);
  EXPECT_NEAR(static_cast<double>(cal), 2e6, 2e6 * 0.001);  // 11931 ticks are 9.9994 ms
  const uint64_t cal2 = g.pit_calibrate_tsc(LinuxGuest::kPitTickRate / (1000 / 50), 50, 5000);
  ASSERT_NE(cal2, ULONG_MAX);
  EXPECT_NEAR(static_cast<double>(cal2), 2e6, 2e6 * 0.001);
}

// What a guest sees of the PIT from its current time on: the rest of the
// latched count, the latched status, a half-written count completed, then
// counts, OUTs and read-back status as time passes.
std::vector<uint64_t> run_on(Rig& r) {
  std::vector<uint64_t> seen;
  seen.push_back(r.pit.read(0, 1));  // the latch's MSB
  seen.push_back(r.pit.read(2, 1));  // channel 2's latched status
  r.pit.write(1, 1, 0x12);           // channel 1's MSB, after the LSB before the snapshot
  for (uint64_t ticks : {450, 999, 1005, 1006, 1500, 5000, 70'000}) {
    r.now = ns_of_ticks(ticks);
    for (unsigned c = 0; c < 3; ++c) {
      seen.push_back(r.pit.count_at(c, r.now));
      seen.push_back(r.pit.out_at(c, r.now));
    }
    seen.push_back(r.read16(1));
    seen.push_back(r.pit.read(2, 1));  // MSB only
    seen.push_back(r.pit.port_b().read(0, 1));
    r.control(0xee);  // read-back: every channel's status
    for (unsigned c = 0; c < 3; ++c) seen.push_back(r.pit.read(c, 1));
  }
  return seen;
}

TEST(Pit8254Snapshot, RoundTripsCountsLatchesAndAHalfWrittenCount) {
  Rig r;
  r.now = ns_of_ticks(5);
  r.control(0x34);  // channel 0: LSB then MSB, mode 2, loaded at tick 5
  r.count(0, 1000);
  r.pit.port_b().write(0, 1, 0x03);  // channel 2's gate up, speaker data on
  r.control(0xa7);                   // channel 2: MSB only, mode 3, BCD
  r.pit.write(2, 1, 0x03);           // 300
  r.control(0x70);                   // channel 1: LSB then MSB, mode 0
  r.pit.write(1, 1, 0x34);           // the LSB only
  r.now = ns_of_ticks(15);
  r.control(0x00);                   // latch channel 0 at 990
  EXPECT_EQ(r.pit.read(0, 1), 990u & 0xff);  // its MSB still to read
  r.control(0xe8);                   // read-back: channel 2's status
  r.now = ns_of_ticks(400);          // the live count's MSB is no longer the latch's

  const std::string bytes = save_state_bytes(r.pit);
  Rig restored;
  restored.now = r.now;
  load_state_bytes(restored.pit, bytes);
  EXPECT_EQ(save_state_bytes(restored.pit), bytes);

  const std::vector<uint64_t> seen = run_on(r);
  EXPECT_EQ(seen[0], 990u >> 8);
  EXPECT_EQ(seen[1], 0x80u | 0x20 | 3u << 1 | 1);  // OUT high, MSB only, mode 3, BCD
  EXPECT_EQ(run_on(restored), seen);
}

}  // namespace
}  // namespace topolab
