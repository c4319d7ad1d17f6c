// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/port_bus.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

class Recorder : public PortDevice {
 public:
  explicit Recorder(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  uint32_t read(uint16_t offset, unsigned size) override { return 0x100 * size + offset; }
  void write(uint16_t offset, unsigned, uint32_t value) override { last = {offset, value}; }
  std::pair<uint16_t, uint32_t> last{0xffff, 0};

 private:
  std::string name_;
};

TEST(PortBus, RoutesByOffsetWithinTheRange) {
  PortBus bus;
  Recorder uart("uart"), exit("exit");
  bus.attach(0x3f8, 8, uart);
  bus.attach(0xf4, 4, exit);
  EXPECT_EQ(bus.read(0x3fd, 1), 0x105u);
  bus.write(0xf4, 4, 7);
  EXPECT_EQ(exit.last, (std::pair<uint16_t, uint32_t>{0, 7}));
  bus.write(0x3ff, 1, 9);
  EXPECT_EQ(uart.last, (std::pair<uint16_t, uint32_t>{7, 9}));
}

TEST(PortBus, SaysWhichDeviceClaimsAPort) {
  PortBus bus;
  Recorder uart("uart");
  bus.attach(0x3f8, 8, uart);
  EXPECT_EQ(bus.device_at(0x3f8), &uart);
  EXPECT_EQ(bus.device_at(0x3ff), &uart);
  EXPECT_EQ(bus.device_at(0x3f7), nullptr);
  EXPECT_EQ(bus.device_at(0x400), nullptr);
  EXPECT_EQ(bus.unclaimed_accesses(), 0u);  // asking is no access
}

TEST(PortBus, UnclaimedPortsFloatHighAndAreCounted) {
  PortBus bus;
  Recorder r("r");
  bus.attach(0x60, 1, r);
  EXPECT_EQ(bus.read(0x61, 1), 0xffu);
  EXPECT_EQ(bus.read(0x5f, 2), 0xffffu);
  EXPECT_EQ(bus.read(0x400, 4), 0xffffffffu);
  bus.write(0x80, 1, 0);
  EXPECT_EQ(bus.unclaimed_accesses(), 4u);
}

TEST(PortBus, RejectsOverlapsEmptyRangesAndWraparound) {
  PortBus bus;
  Recorder a("a"), b("b");
  bus.attach(0x3f8, 8, a);
  EXPECT_THROW(bus.attach(0x3ff, 2, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0x3f0, 9, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0x100, 0, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0xfffe, 4, b), std::invalid_argument);
  EXPECT_NO_THROW(bus.attach(0x3f0, 8, b));
}

TEST(PortBusSnapshot, RoundTripsTheUnclaimedAccessCount) {
  PortBus bus;
  Recorder uart("uart");
  bus.attach(0x3f8, 8, uart);
  bus.read(0x80, 1);
  bus.write(0x81, 1, 0);
  const std::string bytes = save_state_bytes(bus);
  PortBus restored;
  Recorder restored_uart("uart");
  restored.attach(0x3f8, 8, restored_uart);
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  EXPECT_EQ(restored.unclaimed_accesses(), 2u);
  bus.read(0x82, 1);
  restored.read(0x82, 1);
  EXPECT_EQ(restored.unclaimed_accesses(), bus.unclaimed_accesses());
  EXPECT_EQ(restored.read(0x3fd, 1), bus.read(0x3fd, 1));  // the ranges are the restored board's own
}

}  // namespace
}  // namespace topolab
