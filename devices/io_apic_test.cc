// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/io_apic.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

using namespace ioapic;

uint32_t rd(IoApic& io, uint32_t reg) {
  io.mmio_write(MMIO_IOREGSEL, 4, reg);
  return io.mmio_read(MMIO_IOWIN, 4);
}
IoApicMessages wr(IoApic& io, uint32_t reg, uint32_t value) {
  io.mmio_write(MMIO_IOREGSEL, 4, reg);
  return io.mmio_write(MMIO_IOWIN, 4, value);
}
uint32_t low(unsigned pin) { return REG_REDIRECTION_BASE + 2 * pin; }
uint32_t high(unsigned pin) { return REG_REDIRECTION_BASE + 2 * pin + 1; }

// A fixed, physical, unmasked entry for `vector` to APIC `dest`.
IoApicMessages route(IoApic& io, unsigned pin, uint8_t vector, bool level, uint8_t dest = 0) {
  wr(io, high(pin), uint32_t{dest} << 24);
  return wr(io, low(pin), vector | (level ? RTE_TRIGGER_LEVEL : 0));
}

TEST(IoApic, PowerOnStateAsTheDatasheetSays) {
  IoApic io;
  EXPECT_EQ(rd(io, REG_ID), 0u);
  EXPECT_EQ(rd(io, REG_VERSION), 0x170020u);  // 24 entries, version 0x20 (QEMU's)
  for (unsigned pin = 0; pin < kPins; ++pin) {
    EXPECT_EQ(rd(io, low(pin)), RTE_MASKED) << pin;
    EXPECT_EQ(rd(io, high(pin)), 0u) << pin;
  }
  EXPECT_EQ(rd(io, REG_REDIRECTION_BASE + 2 * kPins), 0u);  // past the table
  EXPECT_EQ(rd(io, 0x03), 0u);
}

// kvm-unit-tests x86/ioapic.c: ioapic_reg_version, ioapic_reg_id, ioapic_arbitration_id.
TEST(IoApic, IdBits27To24AreWritableVersionAndArbitrationAreReadOnly) {
  IoApic io;
  wr(io, REG_VERSION, ~VERSION_VALUE);
  EXPECT_EQ(rd(io, REG_VERSION), VERSION_VALUE);
  const uint32_t before = rd(io, REG_ID);
  wr(io, REG_ID, before ^ 0xffffffffu);
  EXPECT_EQ(rd(io, REG_ID) ^ before, 0x0f000000u);
  wr(io, REG_ID, 0x0f000000);
  EXPECT_EQ(rd(io, REG_ARBITRATION), 0x0f000000u);
  wr(io, REG_ARBITRATION, 0);
  EXPECT_EQ(rd(io, REG_ARBITRATION), 0x0f000000u);
  EXPECT_EQ(io.id(), 0xf);
}

TEST(IoApic, IoregselReadsBackAndNarrowWindowAccessesDoNothing) {
  IoApic io;
  io.mmio_write(MMIO_IOREGSEL, 4, 0x1234);
  EXPECT_EQ(io.mmio_read(MMIO_IOREGSEL, 4), 0x34u);
  io.mmio_write(MMIO_IOREGSEL, 4, low(3));
  io.mmio_write(MMIO_IOWIN, 1, 0x40);
  EXPECT_EQ(io.mmio_read(MMIO_IOWIN, 1), 0u);
  EXPECT_EQ(io.mmio_read(MMIO_IOWIN, 4), RTE_MASKED);
  EXPECT_EQ(io.mmio_read(0x20, 4), 0u);  // nothing there
  EXPECT_TRUE(io.mmio_write(0x20, 4, 1).empty());
}

TEST(IoApic, RedirectionEntryFieldsBecomeTheMessage) {
  IoApic io;
  wr(io, high(5), 0x0d000000);
  // Vector 0x45, lowest priority, logical, active low, level.
  wr(io, low(5), 0x45 | (1u << 8) | RTE_DEST_LOGICAL | RTE_POLARITY_LOW | RTE_TRIGGER_LEVEL | RTE_MASKED);
  EXPECT_EQ(rd(io, low(5)), 0x45 | (1u << 8) | RTE_DEST_LOGICAL | RTE_POLARITY_LOW | RTE_TRIGGER_LEVEL | RTE_MASKED);
  EXPECT_TRUE(io.set_pin(5, true).empty());  // masked
  IoApicMessages sent = wr(io, low(5), 0x45 | (1u << 8) | RTE_DEST_LOGICAL | RTE_POLARITY_LOW | RTE_TRIGGER_LEVEL);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], (ApicMessage{.delivery_mode = ApicDeliveryMode::LowestPriority,
                                  .vector = 0x45,
                                  .destination_mode = ApicDestinationMode::Logical,
                                  .trigger_mode = ApicTriggerMode::Level,
                                  .destination = 0x0d}));
}

TEST(IoApic, EveryDeliveryModeButTheReservedOnesSends) {
  for (uint32_t mode = 0; mode < 8; ++mode) {
    IoApic io;
    wr(io, low(1), 0x30 | (mode << RTE_DELIVERY_MODE_SHIFT));
    IoApicMessages sent = io.set_pin(1, true);
    if (mode == 3 || mode == 6) {
      EXPECT_TRUE(sent.empty()) << mode;
    } else {
      ASSERT_EQ(sent.size(), 1u) << mode;
      EXPECT_EQ(sent[0].delivery_mode, static_cast<ApicDeliveryMode>(mode));
    }
  }
}

TEST(IoApic, EdgePinsSendOncePerRisingEdgeAndLoseEdgesWhileMasked) {
  IoApic io;
  EXPECT_TRUE(route(io, 14, 0x76, false).empty());
  EXPECT_EQ(io.set_pin(14, true).size(), 1u);
  EXPECT_TRUE(io.set_pin(14, true).empty());  // still high: no new edge
  EXPECT_TRUE(io.set_pin(14, false).empty());
  EXPECT_EQ(io.set_pin(14, true).size(), 1u);
  io.set_pin(14, false);
  wr(io, low(14), 0x76 | RTE_MASKED);
  EXPECT_TRUE(io.set_pin(14, true).empty());
  io.set_pin(14, false);
  EXPECT_TRUE(wr(io, low(14), 0x76).empty());  // the masked edge is gone
  EXPECT_EQ(rd(io, low(14)) & RTE_REMOTE_IRR, 0u);  // edge entries never set it
  EXPECT_EQ(io.set_pin(14, true).size(), 1u);
}

TEST(IoApic, LevelPinSetsRemoteIrrAndResendsAfterEoiWhileAsserted) {
  IoApic io;
  route(io, 14, 0x9a, true);
  IoApicMessages sent = io.set_pin(14, true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].trigger_mode, ApicTriggerMode::Level);
  EXPECT_TRUE(rd(io, low(14)) & RTE_REMOTE_IRR);
  EXPECT_TRUE(io.set_pin(14, true).empty());  // coalesced: remote IRR
  EXPECT_TRUE(io.eoi(0x9b).empty());           // another vector
  EXPECT_TRUE(rd(io, low(14)) & RTE_REMOTE_IRR);
  EXPECT_EQ(io.eoi(0x9a).size(), 1u);  // still asserted: sent again
  EXPECT_TRUE(rd(io, low(14)) & RTE_REMOTE_IRR);
  io.set_pin(14, false);
  EXPECT_TRUE(io.eoi(0x9a).empty());
  EXPECT_EQ(rd(io, low(14)) & RTE_REMOTE_IRR, 0u);
  EXPECT_EQ(io.set_pin(14, true).size(), 1u);  // sequential level interrupts
}

// kvm-unit-tests test_ioapic_level_coalesce: lowered and raised again while
// in service, then lowered before the EOI: one interrupt.
TEST(IoApic, LevelPinToggledInServiceCoalesces) {
  IoApic io;
  route(io, 14, 0x98, true);
  EXPECT_EQ(io.set_pin(14, true).size(), 1u);
  io.set_pin(14, false);
  EXPECT_TRUE(io.set_pin(14, true).empty());
  io.set_pin(14, false);
  EXPECT_TRUE(io.eoi(0x98).empty());
}

// test_ioapic_level_mask and test_ioapic_level_retrigger_mask.
TEST(IoApic, UnmaskingAnAssertedLevelPinSends) {
  IoApic io;
  wr(io, low(14), 0x83 | RTE_TRIGGER_LEVEL | RTE_MASKED);
  EXPECT_TRUE(io.set_pin(14, true).empty());
  EXPECT_EQ(wr(io, low(14), 0x83 | RTE_TRIGGER_LEVEL).size(), 1u);
  EXPECT_TRUE(wr(io, low(14), 0x83 | RTE_TRIGGER_LEVEL | RTE_MASKED).empty());
  EXPECT_TRUE(io.eoi(0x83).empty());  // masked: remote IRR clears, nothing sent
  EXPECT_EQ(rd(io, low(14)) & RTE_REMOTE_IRR, 0u);
  EXPECT_EQ(wr(io, low(14), 0x83 | RTE_TRIGGER_LEVEL).size(), 1u);
}

TEST(IoApic, GuestWritesLeaveRemoteIrrAndDeliveryStatusAlone) {
  IoApic io;
  route(io, 13, 0x64, true);
  io.set_pin(13, true);
  io.set_pin(13, false);
  // test_ioapic_self_reconfigure: a new destination in the high half keeps remote IRR.
  EXPECT_TRUE(wr(io, high(13), 0x01000000).empty());
  EXPECT_TRUE(rd(io, low(13)) & RTE_REMOTE_IRR);
  wr(io, low(13), 0x64 | RTE_TRIGGER_LEVEL);  // writing 0 to remote IRR does not clear it
  EXPECT_TRUE(rd(io, low(13)) & RTE_REMOTE_IRR);
  EXPECT_EQ(rd(io, high(13)), 0x01000000u);
  // Switching to edge clears it (Linux's __eoi_ioapic_pin relies on that).
  wr(io, low(13), 0x64);
  EXPECT_EQ(rd(io, low(13)) & RTE_REMOTE_IRR, 0u);
  wr(io, low(13), 0x64 | RTE_DELIVERY_STATUS | RTE_REMOTE_IRR | RTE_TRIGGER_LEVEL);
  EXPECT_EQ(rd(io, low(13)) & RTE_READ_ONLY, 0u);
}

TEST(IoApic, EoiRegisterClearsRemoteIrrLikeAnEoiMessage) {
  IoApic io;
  route(io, 2, 0x30, true);
  route(io, 3, 0x30, true);
  io.set_pin(2, true);
  io.set_pin(3, true);
  io.set_pin(3, false);
  IoApicMessages sent = io.mmio_write(MMIO_EOI, 4, 0x30);
  EXPECT_EQ(sent.size(), 1u);  // pin 2 is still asserted
  EXPECT_TRUE(rd(io, low(2)) & RTE_REMOTE_IRR);
  EXPECT_EQ(rd(io, low(3)) & RTE_REMOTE_IRR, 0u);
  EXPECT_TRUE(io.mmio_write(MMIO_EOI, 2, 0x30).empty());  // 32-bit only
}

TEST(IoApic, SimultaneousPinsSendInPinOrder) {
  IoApic io;
  wr(io, low(14), 0x78 | RTE_MASKED | RTE_TRIGGER_LEVEL);
  wr(io, low(15), 0x66 | RTE_MASKED | RTE_TRIGGER_LEVEL);
  io.set_pin(15, true);
  io.set_pin(14, true);
  wr(io, low(15), 0x66 | RTE_TRIGGER_LEVEL);  // sends 0x66
  // Nothing else is owed: pin 14 is masked.
  IoApicMessages sent = wr(io, low(14), 0x78 | RTE_TRIGGER_LEVEL);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].vector, 0x78);
}

TEST(IoApic, BadPinsAndRegistersAreHarmless) {
  IoApic io;
  EXPECT_TRUE(io.set_pin(24, true).empty());
  EXPECT_TRUE(io.set_pin(1000, true).empty());
  EXPECT_FALSE(io.pin_asserted(24));
  EXPECT_EQ(io.redirection(24), 0u);
  EXPECT_TRUE(wr(io, 0xff, 0xffffffff).empty());
  EXPECT_TRUE(wr(io, REG_REDIRECTION_BASE + 2 * kPins, 0).empty());
  EXPECT_EQ(io.mmio_read(0xfff, 4), 0u);
}

// What the machine sees of the I/O APIC from now on: its registers, the
// level pin re-sent at EOI (remote IRR), a masked edge pin unmasked, a
// level pin dropped.
std::vector<uint64_t> run_on(IoApic& io, IoApicMessages& sent) {
  std::vector<uint64_t> seen;
  seen.push_back(io.mmio_read(MMIO_IOREGSEL, 4));
  seen.push_back(io.mmio_read(MMIO_IOWIN, 4));
  seen.push_back(io.id());
  for (unsigned pin = 0; pin < kPins; ++pin) {
    seen.push_back(io.redirection(pin));
    seen.push_back(io.pin_asserted(pin));
  }
  const auto take = [&](IoApicMessages messages) {
    seen.push_back(messages.size());
    sent.insert(sent.end(), messages.begin(), messages.end());
  };
  take(io.eoi(0x31));  // pin 5 is still asserted: sent again
  take(wr(io, low(7), 0x32));
  take(io.set_pin(5, false));
  take(io.eoi(0x31));
  take(io.set_pin(5, true));
  return seen;
}

TEST(IoApicSnapshot, RoundTripsEntriesPinLevelsAndRemoteIrr) {
  IoApic io;
  wr(io, REG_ID, 0x02000000);
  route(io, 5, 0x31, true, 1);
  ASSERT_EQ(io.set_pin(5, true).size(), 1u);  // remote IRR now set
  wr(io, high(7), 2u << 24);
  wr(io, low(7), 0x32 | RTE_MASKED);
  EXPECT_TRUE(io.set_pin(7, true).empty());
  io.mmio_write(MMIO_IOREGSEL, 4, low(5));

  const std::string bytes = save_state_bytes(io);
  IoApic restored;
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  IoApicMessages sent, restored_sent;
  const std::vector<uint64_t> seen = run_on(io, sent);
  EXPECT_EQ(run_on(restored, restored_sent), seen);
  EXPECT_EQ(restored_sent, sent);
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent[0].vector, 0x31);
}

}  // namespace
}  // namespace topolab
