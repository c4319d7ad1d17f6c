#include "devices/pic_stub.h"

#include <gtest/gtest.h>

#include "devices/port_bus.h"

namespace topolab {
namespace {

TEST(PicStub, StartsFullyMasked) {
  PicStub pic(PicStub::Role::kMaster);
  EXPECT_EQ(pic.read(1, 1), 0xffu);
}

TEST(PicStub, MaskReadsBack) {
  PicStub pic(PicStub::Role::kSlave);
  pic.write(1, 1, 0x5a);  // OCW1
  EXPECT_EQ(pic.read(1, 1), 0x5au);
  pic.write(1, 1, 0xff);
  EXPECT_EQ(pic.read(1, 1), 0xffu);
  EXPECT_EQ(pic.mask(), 0xffu);
}

TEST(PicStub, InitialisationWordsAreNotTakenAsAMask) {
  PortBus bus;
  PicStub master(PicStub::Role::kMaster), slave(PicStub::Role::kSlave);
  bus.attach(PicStub::kMasterBase, PicStub::kPortCount, master);
  bus.attach(PicStub::kSlaveBase, PicStub::kPortCount, slave);
  // Linux's init_8259A: ICW1 edge/cascade/ICW4, ICW2 base, ICW3 wiring, ICW4 8086.
  bus.write(0x20, 1, 0x11);
  bus.write(0x21, 1, 0x20);
  bus.write(0x21, 1, 0x04);
  bus.write(0x21, 1, 0x01);
  bus.write(0xa0, 1, 0x11);
  bus.write(0xa1, 1, 0x28);
  bus.write(0xa1, 1, 0x02);
  bus.write(0xa1, 1, 0x01);
  EXPECT_EQ(bus.read(0x21, 1), 0u);  // ICW1 cleared the IMR
  EXPECT_EQ(bus.read(0xa1, 1), 0u);
  EXPECT_EQ(master.vector_base(), 0x20u);
  EXPECT_EQ(slave.vector_base(), 0x28u);
  bus.write(0x21, 1, 0xff);
  bus.write(0xa1, 1, 0xff);
  EXPECT_EQ(bus.read(0x21, 1), 0xffu);
  EXPECT_EQ(bus.read(0xa1, 1), 0xffu);
}

TEST(PicStub, SingleModeWithoutIcw4GoesStraightToOcw1) {
  PicStub pic(PicStub::Role::kMaster);
  pic.write(0, 1, 0x12);  // ICW1: single, no ICW4
  pic.write(1, 1, 0x08);  // ICW2
  pic.write(1, 1, 0xfe);  // OCW1
  EXPECT_EQ(pic.read(1, 1), 0xfeu);
}

TEST(PicStub, IrrIsrAndPollReadZero) {
  PicStub pic(PicStub::Role::kMaster);
  pic.write(1, 1, 0x00);  // unmask everything: still nothing pending
  pic.write(0, 1, 0x0a);  // OCW3: read IRR
  EXPECT_EQ(pic.read(0, 1), 0u);
  pic.write(0, 1, 0x0b);  // OCW3: read ISR
  EXPECT_EQ(pic.read(0, 1), 0u);
  pic.write(0, 1, 0x0c);  // OCW3: poll
  EXPECT_EQ(pic.read(0, 1), 0u);
  pic.write(0, 1, 0x20);  // OCW2: non-specific EOI
  EXPECT_EQ(pic.read(1, 1), 0u);
}

}  // namespace
}  // namespace topolab
