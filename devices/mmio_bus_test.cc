// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/mmio_bus.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace topolab {
namespace {

class Recorder : public MmioDevice {
 public:
  explicit Recorder(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  uint64_t read(uint64_t offset, unsigned size) override { return 0x100 * size + offset; }
  void write(uint64_t offset, unsigned, uint64_t value) override { last = {offset, value}; }
  std::pair<uint64_t, uint64_t> last{~0ull, 0};

 private:
  std::string name_;
};

TEST(MmioBus, FindsTheRangeHoldingAnAddress) {
  MmioBus bus;
  Recorder ioapic("ioapic"), testdev("testdev");
  bus.attach(0xfec00000, 0x1000, ioapic);
  bus.attach(0xfebff000, 0x1000, testdev);  // attached out of order: kept by base
  ASSERT_EQ(bus.ranges().size(), 2u);
  EXPECT_EQ(bus.ranges()[0].device, &testdev);
  const MmioBus::Range* r = bus.find(0xfec00010);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->device, &ioapic);
  EXPECT_EQ(r->device->read(0xfec00010 - r->base, 4), 0x410u);
  EXPECT_EQ(bus.find(0xfebfffff)->device, &testdev);
  EXPECT_EQ(bus.find(0xfec01000), nullptr);
  EXPECT_EQ(bus.find(0xfebfefff), nullptr);
  EXPECT_EQ(bus.find(0), nullptr);
}

TEST(MmioBus, RefusesEmptyWrappingPartialPageAndOverlappingRanges) {
  MmioBus bus;
  Recorder a("a"), b("b");
  bus.attach(0xff000000, 0x10000, a);
  EXPECT_THROW(bus.attach(0x1000, 0, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0xfffffffffffff000, 0x2000, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0x1000, 0x100, b), std::invalid_argument);
  EXPECT_THROW(bus.attach(0x1800, 0x1000, b), std::invalid_argument);
  try {
    bus.attach(0xff00f000, 0x2000, b);
    FAIL() << "an overlap was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "b: MMIO 0xff00f000+0x2000 overlaps a at 0xff000000+0x10000");
  }
  bus.attach(0xff010000, 0x1000, b);  // adjacent is fine
  EXPECT_EQ(bus.ranges().size(), 2u);
}

TEST(MmioBus, TellsWhetherARangeTouchesAClaimedOne) {
  MmioBus bus;
  Recorder a("a");
  bus.attach(0xfec00000, 0x1000, a);
  EXPECT_TRUE(bus.overlaps(0xfec00000, 0x1000));
  EXPECT_TRUE(bus.overlaps(0xfebff000, 0x1001));
  EXPECT_FALSE(bus.overlaps(0xfee00000, 0x1000));
  EXPECT_FALSE(bus.overlaps(0xfebff000, 0x1000));
}

}  // namespace
}  // namespace topolab
