#include "devices/pit8254.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

// 1 tick of 1.193182 MHz is 838.1 ns; times below are whole ticks.
uint64_t ns_of_ticks(uint64_t ticks) { return (ticks * 1'000'000'000 + Pit8254::kHz - 1) / Pit8254::kHz; }

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

}  // namespace
}  // namespace topolab
