// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/local_apic.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "base/state_archive.h"

namespace topolab {
namespace {

using namespace apic;

constexpr uint64_t kNow = 1'000;

LocalApicConfig config(uint32_t id = 0, bool bsp = false) {
  return {.apic_id = id, .bsp = bsp, .x2apic_supported = true, .tsc_hz = 2'000'000'000, .timer_hz = 1'000'000'000};
}

uint32_t rd(LocalApic& apic, uint32_t offset, uint64_t now = kNow) { return apic.mmio_read(offset, 4, now); }
std::optional<ApicMessage> wr(LocalApic& apic, uint32_t offset, uint32_t value, uint64_t now = kNow) {
  return apic.mmio_write(offset, 4, value, now).message;
}
uint32_t msr_of(uint32_t offset) { return LocalApic::MSR_X2APIC_FIRST + offset / 16; }

void enable_x2apic(LocalApic& apic) {
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE,
                          LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_EXTD, kNow).gp);
}

// Software-enabled xAPIC, spurious vector 0xff.
LocalApic xapic(uint32_t id = 0) {
  LocalApic apic(config(id));
  wr(apic, REG_SVR, SVR_APIC_ENABLED | 0xff);
  return apic;
}

LocalApic x2apic(uint32_t id = 0) {
  LocalApic apic(config(id));
  enable_x2apic(apic);
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_SVR), SVR_APIC_ENABLED | 0xff, kNow).gp);
  return apic;
}

ApicMessage fixed(uint8_t vector, uint32_t dest = 0) { return {.vector = vector, .destination = dest}; }

// --- The register table -------------------------------------------------

TEST(LocalApicTable, IsOrderedAndInsideThePage) {
  uint32_t end = 0;
  for (const auto& reg : apic_registers()) {
    EXPECT_GE(reg.offset, end) << reg.name;
    EXPECT_EQ(reg.offset % 16, 0u) << reg.name;
    end = reg.offset + 16u * reg.count;
    EXPECT_LE(end, 0x400u) << reg.name;
    EXPECT_TRUE(reg.xapic != ApicAccess::None || reg.x2apic != ApicAccess::None) << reg.name;
  }
}

TEST(LocalApicTable, PowerOnValuesThroughMmio) {
  LocalApic apic(config(5, true));
  EXPECT_EQ(apic.mode(), ApicMode::XApic);
  EXPECT_EQ(apic.apic_base_msr(), LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_BSP);
  for (const auto& reg : apic_registers()) {
    if (reg.xapic != ApicAccess::Read && reg.xapic != ApicAccess::ReadWrite) continue;
    for (unsigned k = 0; k < reg.count; ++k) {
      uint32_t expected = reg.offset == REG_ID ? 5u << 24 : reg.reset;
      EXPECT_EQ(rd(apic, reg.offset + 16 * k), expected) << reg.name << "[" << k << "]";
    }
  }
  EXPECT_EQ(rd(apic, REG_VERSION), 0x00060014u);
  EXPECT_EQ(rd(apic, REG_DFR), 0xffffffffu);
  EXPECT_EQ(rd(apic, REG_SVR), 0xffu);
  EXPECT_EQ(rd(apic, REG_LVT_LINT0), LVT_MASKED);
  EXPECT_EQ(rd(apic, REG_ESR), 0u);  // no illegal-address errors from the reads above
}

TEST(LocalApicTable, PowerOnValuesThroughMsrs) {
  LocalApic apic(config(0x123));
  enable_x2apic(apic);
  for (const auto& reg : apic_registers()) {
    for (unsigned k = 0; k < reg.count; ++k) {
      auto value = apic.rdmsr(msr_of(reg.offset + 16 * k), kNow);
      bool readable = reg.x2apic == ApicAccess::Read || reg.x2apic == ApicAccess::ReadWrite;
      ASSERT_EQ(value.has_value(), readable) << reg.name;
      if (!readable) continue;
      uint32_t expected = reg.reset;
      if (reg.offset == REG_ID) expected = 0x123;
      if (reg.offset == REG_LDR) expected = (0x12u << 16) | (1u << 3);
      EXPECT_EQ(*value, expected) << reg.name << "[" << k << "]";
    }
  }
}

TEST(LocalApicTable, XapicWritesKeepOnlyTheWriteMask) {
  for (const auto& reg : apic_registers()) {
    if (reg.xapic != ApicAccess::ReadWrite || reg.offset == REG_ESR) continue;
    LocalApic apic = xapic();
    wr(apic, reg.offset, 0xffffffff);
    uint32_t expected = reg.write_mask | (reg.offset == REG_DFR ? 0x0fffffffu : 0);
    EXPECT_EQ(rd(apic, reg.offset), expected) << reg.name;
  }
}

TEST(LocalApicTable, X2apicReservedBitsFaultAndMaskedValuesStick) {
  for (const auto& reg : apic_registers()) {
    if (reg.x2apic != ApicAccess::ReadWrite || reg.offset == REG_ICR_LOW) continue;
    LocalApic apic = x2apic();
    uint32_t msr = msr_of(reg.offset);
    EXPECT_TRUE(apic.wrmsr(msr, 1ull << 32, kNow).gp) << reg.name;
    if (reg.write_mask != 0xffffffff) {
      EXPECT_TRUE(apic.wrmsr(msr, ~reg.write_mask, kNow).gp) << reg.name;
    }
    if (reg.write_mask == 0) continue;  // ESR: only 0 may be written
    ASSERT_FALSE(apic.wrmsr(msr, reg.write_mask, kNow).gp) << reg.name;
    EXPECT_EQ(apic.rdmsr(msr, kNow), reg.write_mask) << reg.name;
  }
}

// Linux's disconnect_bsp_APIC writes LINT0 as ExtINT with remote IRR and
// delivery status set (0x5700): read-only bits, ignored rather than
// reserved, as KVM takes them. Any other stray bit still faults.
TEST(LocalApicTable, X2apicLvtReadOnlyBitsAreIgnored) {
  LocalApic apic = x2apic();
  const uint32_t lint0 = msr_of(REG_LVT_LINT0);
  ASSERT_FALSE(apic.wrmsr(lint0, 0x5700, kNow).gp);
  EXPECT_EQ(apic.rdmsr(lint0, kNow), 0x0700u);
  EXPECT_TRUE(apic.wrmsr(lint0, 0x5700 | (1u << 20), kNow).gp);
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_LVT_ERROR), LVT_DELIVERY_STATUS | 0xf0, kNow).gp);
}

TEST(LocalApicMmio, UnknownOffsetsReadZeroAndLogIllegalAddress) {
  LocalApic apic = xapic();
  EXPECT_EQ(rd(apic, 0x000), 0u);
  EXPECT_FALSE(wr(apic, 0x3f0, 0x41));  // SELF_IPI is x2APIC only
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), ESR_ILLEGAL_REGISTER_ADDRESS);
  // Byte reads of a register's first dword work; other narrow accesses read 0.
  EXPECT_EQ(apic.mmio_read(REG_VERSION, 1, kNow), 0x14u);
  EXPECT_EQ(apic.mmio_read(REG_VERSION + 2, 1, kNow), 0x06u);
  EXPECT_EQ(apic.mmio_read(REG_VERSION + 4, 4, kNow), 0u);
  EXPECT_EQ(apic.mmio_read(REG_VERSION + 3, 2, kNow), 0u);
  apic.mmio_write(REG_TPR, 1, 0x20, kNow);  // narrow writes are ignored
  EXPECT_EQ(rd(apic, REG_TPR), 0u);
}

TEST(LocalApicMmio, ReadOnlyRegistersIgnoreWrites) {
  LocalApic apic = xapic(3);
  for (uint32_t offset : {REG_VERSION, REG_PPR, REG_APR, REG_ISR, REG_IRR + 0x70, REG_TIMER_CURRENT_COUNT}) {
    uint32_t before = rd(apic, offset);
    wr(apic, offset, 0xffffffff);
    EXPECT_EQ(rd(apic, offset), before) << std::hex << offset;
  }
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), 0u);
}

// --- ESR ------------------------------------------------------------------

TEST(LocalApicEsr, WriteLatchesAccumulatedErrors) {
  LocalApic apic = xapic();
  wr(apic, REG_ICR_LOW, 0x0f);  // fixed, vector 15: send illegal vector
  EXPECT_EQ(rd(apic, REG_ESR), 0u);  // not visible before a write
  wr(apic, REG_ESR, 0x12345678);  // the value written does not matter
  EXPECT_EQ(rd(apic, REG_ESR), ESR_SEND_ILLEGAL_VECTOR);
  apic.accept(fixed(3));
  EXPECT_EQ(rd(apic, REG_ESR), ESR_SEND_ILLEGAL_VECTOR);  // still the latched value
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), ESR_RECEIVE_ILLEGAL_VECTOR);
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), 0u);
}

TEST(LocalApicEsr, UnmaskedErrorLvtRaisesItsVector) {
  LocalApic apic = xapic();
  wr(apic, REG_LVT_ERROR, 0xfe);
  wr(apic, REG_ICR_LOW, 0x05);
  EXPECT_TRUE(apic.irr(0xfe));
  EXPECT_EQ(apic.pending_vector(), 0xfe);
  // An illegal vector in the error LVT only logs, it does not recurse.
  LocalApic other = xapic();
  wr(other, REG_LVT_ERROR, 0x03);
  wr(other, REG_ICR_LOW, 0x05);
  wr(other, REG_ESR, 0);
  EXPECT_EQ(rd(other, REG_ESR), ESR_SEND_ILLEGAL_VECTOR | ESR_RECEIVE_ILLEGAL_VECTOR);
  EXPECT_FALSE(other.pending_vector());
}

TEST(LocalApicEsr, X2apicEsrAcceptsOnlyZero) {
  LocalApic apic = x2apic();
  EXPECT_TRUE(apic.wrmsr(msr_of(REG_ESR), 1, kNow).gp);
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_SELF_IPI), 2, kNow).gp);  // illegal vector: an error, not #GP
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_ESR), 0, kNow).gp);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_ESR), kNow), ESR_SEND_ILLEGAL_VECTOR);
}

// --- Priorities, acknowledge, EOI -------------------------------------------

TEST(LocalApicPriority, ProcessorPriorityFollowsSdm) {
  struct Case {
    uint8_t tpr;
    std::vector<uint8_t> in_service;
    uint8_t ppr;
  };
  const Case cases[] = {
      {0x00, {}, 0x00},     {0x25, {}, 0x25},         {0x00, {0x41}, 0x40},
      {0x4f, {0x41}, 0x4f}, {0x3f, {0x41}, 0x40},     {0x00, {0x31, 0x72}, 0x70},
      {0xff, {0x72}, 0xff}, {0x70, {0x7e}, 0x70},
  };
  for (const auto& c : cases) {
    LocalApic apic = xapic();
    for (uint8_t v : c.in_service) {
      apic.accept(fixed(v));
      ASSERT_EQ(apic.acknowledge(), v);
    }
    wr(apic, REG_TPR, c.tpr);
    EXPECT_EQ(apic.processor_priority(), c.ppr) << int(c.tpr);
    EXPECT_EQ(rd(apic, REG_PPR), c.ppr);
  }
}

TEST(LocalApicPriority, TprHoldsBackLowerClasses) {
  LocalApic apic = xapic();
  wr(apic, REG_TPR, 0x40);
  apic.accept(fixed(0x45));
  EXPECT_FALSE(apic.pending_vector());  // same class as TPR: held
  EXPECT_EQ(apic.acknowledge(), 0xff);  // spurious, nothing moves
  EXPECT_TRUE(apic.irr(0x45));
  apic.accept(fixed(0x51));
  EXPECT_EQ(apic.pending_vector(), 0x51);
  wr(apic, REG_TPR, 0);
  EXPECT_EQ(apic.pending_vector(), 0x51);  // highest first
}

TEST(LocalApicPriority, NestingAndEoi) {
  LocalApic apic = xapic();
  apic.accept(fixed(0x31));
  EXPECT_EQ(apic.acknowledge(), 0x31);
  apic.accept(fixed(0x35));
  EXPECT_FALSE(apic.pending_vector());  // same class as the one in service
  apic.accept(fixed(0x61));
  EXPECT_EQ(apic.pending_vector(), 0x61);  // higher class preempts
  EXPECT_EQ(apic.acknowledge(), 0x61);
  EXPECT_TRUE(apic.isr(0x31));
  EXPECT_TRUE(apic.isr(0x61));
  EXPECT_EQ(rd(apic, REG_PPR), 0x60u);
  wr(apic, REG_EOI, 0);  // clears the highest: 0x61
  EXPECT_FALSE(apic.isr(0x61));
  EXPECT_TRUE(apic.isr(0x31));
  EXPECT_FALSE(apic.pending_vector());
  wr(apic, REG_EOI, 0xdead);  // xAPIC ignores the value
  EXPECT_EQ(apic.pending_vector(), 0x35);
  EXPECT_EQ(apic.acknowledge(), 0x35);
  wr(apic, REG_EOI, 0);
  wr(apic, REG_EOI, 0);  // nothing in service: harmless
  EXPECT_EQ(apic.processor_priority(), 0);
}

TEST(LocalApicEoi, LevelTriggeredVectorsAreBroadcastToTheIoApics) {
  LocalApic apic = xapic();
  ApicMessage level = fixed(0x51);
  level.trigger_mode = ApicTriggerMode::Level;
  apic.accept(level);
  EXPECT_TRUE(apic.tmr(0x51));
  apic.accept(fixed(0x41));  // edge
  EXPECT_FALSE(apic.tmr(0x41));
  EXPECT_EQ(apic.acknowledge(), 0x51);
  EXPECT_EQ(apic.mmio_write(REG_EOI, 4, 0, kNow).eoi_broadcast, 0x51);
  EXPECT_TRUE(apic.tmr(0x51));  // TMR changes only when a vector is accepted
  EXPECT_EQ(apic.acknowledge(), 0x41);
  EXPECT_EQ(apic.mmio_write(REG_EOI, 4, 0, kNow).eoi_broadcast, std::nullopt);
  EXPECT_EQ(apic.mmio_write(REG_EOI, 4, 0, kNow).eoi_broadcast, std::nullopt);  // nothing in service

  LocalApic x2 = x2apic();
  x2.accept(level);
  EXPECT_EQ(x2.acknowledge(), 0x51);
  EXPECT_EQ(x2.wrmsr(msr_of(REG_TPR), 0, kNow).eoi_broadcast, std::nullopt);  // not an EOI
  EXPECT_EQ(x2.wrmsr(msr_of(REG_EOI), 0, kNow).eoi_broadcast, 0x51);
}

TEST(LocalApicPriority, ArbitrationPriority) {
  LocalApic apic = xapic();
  wr(apic, REG_TPR, 0x25);
  EXPECT_EQ(apic.arbitration_priority(), 0x25);
  apic.accept(fixed(0x81));
  EXPECT_EQ(apic.arbitration_priority(), 0x80);  // IRRV class above TPR's
  EXPECT_EQ(rd(apic, REG_APR), 0x80u);
  apic.acknowledge();
  EXPECT_EQ(apic.arbitration_priority(), 0x80);  // now ISRV
  wr(apic, REG_TPR, 0x9a);
  EXPECT_EQ(apic.arbitration_priority(), 0x9a);
}

TEST(LocalApicPriority, X2apicEoiMustBeZeroAndTprIsAnMsr) {
  LocalApic apic = x2apic();
  apic.accept(fixed(0x40));
  apic.acknowledge();
  EXPECT_TRUE(apic.wrmsr(msr_of(REG_EOI), 1, kNow).gp);
  EXPECT_TRUE(apic.isr(0x40));
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_EOI), 0, kNow).gp);
  EXPECT_FALSE(apic.isr(0x40));
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_TPR), 0x30, kNow).gp);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_PPR), kNow), 0x30u);
}

// --- Sending ----------------------------------------------------------------

TEST(LocalApicIcr, XapicEveryModeAndShorthand) {
  const ApicDeliveryMode modes[] = {ApicDeliveryMode::Fixed, ApicDeliveryMode::LowestPriority,
                                    ApicDeliveryMode::Smi,   ApicDeliveryMode::Reserved,
                                    ApicDeliveryMode::Nmi,   ApicDeliveryMode::Init,
                                    ApicDeliveryMode::StartUp, ApicDeliveryMode::ExtInt};
  for (ApicDeliveryMode mode : modes) {
    for (uint32_t shorthand = 0; shorthand < 4; ++shorthand) {
      for (uint32_t logical = 0; logical < 2; ++logical) {
        LocalApic apic = xapic(7);
        wr(apic, REG_ICR_HIGH, 0x5a000000);
        uint32_t low = 0x40 | static_cast<uint32_t>(mode) << 8 | logical << 11 | ICR_LEVEL_ASSERT |
                       shorthand << ICR_SHORTHAND_SHIFT;
        auto msg = wr(apic, REG_ICR_LOW, low);
        ASSERT_TRUE(msg);
        EXPECT_EQ(*msg, (ApicMessage{.delivery_mode = mode,
                                     .vector = 0x40,
                                     .destination_mode = logical ? ApicDestinationMode::Logical
                                                                 : ApicDestinationMode::Physical,
                                     .level_assert = true,
                                     .trigger_mode = ApicTriggerMode::Edge,
                                     .shorthand = static_cast<ApicShorthand>(shorthand),
                                     .destination = 0x5a,
                                     .source_id = 7,
                                     .x2apic = false}));
        EXPECT_EQ(rd(apic, REG_ICR_LOW) & ICR_DELIVERY_STATUS, 0u);  // delivery is instantaneous
        EXPECT_EQ(rd(apic, REG_ICR_LOW), low);
      }
    }
  }
}

TEST(LocalApicIcr, X2apicIcrIsOne64BitMsr) {
  LocalApic apic = x2apic(0x1234);
  uint64_t icr = (0xabcdef01ull << 32) | ICR_TRIGGER_LEVEL | ICR_LEVEL_ASSERT | ICR_DESTINATION_LOGICAL |
                 (static_cast<uint32_t>(ApicDeliveryMode::Nmi) << 8);
  auto result = apic.wrmsr(LocalApic::MSR_X2APIC_ICR, icr, kNow);
  ASSERT_FALSE(result.gp);
  ASSERT_TRUE(result.message);
  EXPECT_EQ(result.message->delivery_mode, ApicDeliveryMode::Nmi);
  EXPECT_EQ(result.message->destination, 0xabcdef01u);
  EXPECT_EQ(result.message->destination_mode, ApicDestinationMode::Logical);
  EXPECT_EQ(result.message->trigger_mode, ApicTriggerMode::Level);
  EXPECT_EQ(result.message->source_id, 0x1234u);
  EXPECT_TRUE(result.message->x2apic);
  EXPECT_EQ(apic.rdmsr(LocalApic::MSR_X2APIC_ICR, kNow), icr);
  // Delivery status (bit 12) is reserved in x2APIC; ICR high (0x831) does not exist.
  EXPECT_TRUE(apic.wrmsr(LocalApic::MSR_X2APIC_ICR, ICR_DELIVERY_STATUS | 0x40, kNow).gp);
  EXPECT_TRUE(apic.wrmsr(0x831, 0, kNow).gp);
  EXPECT_FALSE(apic.rdmsr(0x831, kNow));
}

TEST(LocalApicIcr, InitDeassertIsFlagged) {
  LocalApic apic = xapic();
  auto msg = wr(apic, REG_ICR_LOW, 0x500 | ICR_TRIGGER_LEVEL | 2u << ICR_SHORTHAND_SHIFT);
  ASSERT_TRUE(msg);
  EXPECT_TRUE(msg->is_init_level_deassert());
  auto assert_msg = wr(apic, REG_ICR_LOW, 0x500 | ICR_TRIGGER_LEVEL | ICR_LEVEL_ASSERT);
  EXPECT_FALSE(assert_msg->is_init_level_deassert());
  LocalApic target = xapic(1);
  wr(target, REG_TPR, 0x20);
  EXPECT_EQ(target.accept(*msg).kind, ApicAccept::Dropped);
  EXPECT_EQ(rd(target, REG_TPR), 0x20u);  // not reset
}

TEST(LocalApicIcr, IllegalVectorsAreNotSent) {
  for (uint32_t mode : {0u, 1u}) {
    LocalApic apic = xapic();
    EXPECT_FALSE(wr(apic, REG_ICR_LOW, mode << 8 | 0x0f));
    wr(apic, REG_ESR, 0);
    EXPECT_EQ(rd(apic, REG_ESR), ESR_SEND_ILLEGAL_VECTOR);
  }
  LocalApic apic = xapic();
  EXPECT_TRUE(wr(apic, REG_ICR_LOW, 0x400));  // NMI ignores the vector
  EXPECT_TRUE(wr(apic, REG_ICR_LOW, 0x600));  // SIPI to page 0 is legal
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), 0u);

  LocalApic x2 = x2apic();
  EXPECT_FALSE(x2.wrmsr(LocalApic::MSR_X2APIC_ICR, 0x01, kNow).message);
  EXPECT_FALSE(x2.wrmsr(msr_of(REG_SELF_IPI), 0x0f, kNow).message);
}

TEST(LocalApicIcr, SelfIpiIsAFixedSelfMessage) {
  LocalApic apic = x2apic(9);
  auto result = apic.wrmsr(LocalApic::MSR_X2APIC_SELF_IPI, 0x33, kNow);
  ASSERT_TRUE(result.message);
  EXPECT_EQ(result.message->delivery_mode, ApicDeliveryMode::Fixed);
  EXPECT_EQ(result.message->shorthand, ApicShorthand::Self);
  EXPECT_EQ(result.message->vector, 0x33);
  EXPECT_TRUE(apic.matches(*result.message));
  EXPECT_FALSE(apic.rdmsr(LocalApic::MSR_X2APIC_SELF_IPI, kNow));  // write-only
  EXPECT_TRUE(apic.wrmsr(LocalApic::MSR_X2APIC_SELF_IPI, 0x133, kNow).gp);
}

// --- Destinations -----------------------------------------------------------

// --- What a write returns ---------------------------------------------------

TEST(LocalApicWrite, KindComesFromTheRegister) {
  LocalApic x = xapic();
  EXPECT_EQ(x.mmio_write(REG_EOI, 4, 0, kNow).kind, ApicWriteKind::Virtualized);
  EXPECT_EQ(x.mmio_write(REG_TPR, 4, 0, kNow).kind, ApicWriteKind::Virtualized);
  EXPECT_EQ(x.mmio_write(REG_ICR_LOW, 4, 0x40, kNow).kind, ApicWriteKind::Icr);
  EXPECT_EQ(x.mmio_write(REG_ICR_LOW + 1, 1, 0, kNow).kind, ApicWriteKind::Icr);  // rejected, but it exited
  EXPECT_EQ(x.mmio_write(REG_ICR_HIGH, 4, 0, kNow).kind, ApicWriteKind::Trapped);
  EXPECT_EQ(x.mmio_write(REG_LVT_TIMER, 4, 0, kNow).kind, ApicWriteKind::Trapped);
  LocalApic x2 = x2apic();
  EXPECT_EQ(x2.wrmsr(msr_of(REG_EOI), 0, kNow).kind, ApicWriteKind::Virtualized);
  EXPECT_EQ(x2.wrmsr(msr_of(REG_TPR), 0, kNow).kind, ApicWriteKind::Virtualized);
  EXPECT_EQ(x2.wrmsr(msr_of(REG_SELF_IPI), 0x40, kNow).kind, ApicWriteKind::Virtualized);
  EXPECT_EQ(x2.wrmsr(LocalApic::MSR_X2APIC_ICR, 0x40, kNow).kind, ApicWriteKind::Icr);
  EXPECT_EQ(x2.wrmsr(msr_of(REG_LVT_ERROR), 0, kNow).kind, ApicWriteKind::Trapped);
  EXPECT_EQ(x2.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 0, kNow).kind, ApicWriteKind::Trapped);
}

TEST(LocalApicWrite, ReportsTimerPendingIdAndBaseChanges) {
  LocalApic apic = xapic(3);
  ApicWrite w = apic.mmio_write(REG_TIMER_INITIAL_COUNT, 4, 1000, kNow);
  EXPECT_TRUE(w.timer_changed);
  EXPECT_FALSE(w.interrupt_pending);
  EXPECT_FALSE(apic.mmio_write(REG_TIMER_DIVIDE_CONFIG, 4, 0, kNow).timer_changed);  // takes effect at the next count
  // A TPR write that lets a held-back vector through makes it pending.
  apic.mmio_write(REG_TPR, 4, 0xf0, kNow);
  apic.accept(fixed(0x40, 3));
  EXPECT_FALSE(apic.pending_vector());
  EXPECT_TRUE(apic.mmio_write(REG_TPR, 4, 0, kNow).interrupt_pending);
  // The xAPIC ID register is writable: the APIC answers to another ID.
  EXPECT_TRUE(apic.mmio_write(REG_ID, 4, 7u << 24, kNow).id_changed);
  EXPECT_FALSE(apic.mmio_write(REG_ID, 4, 7u << 24, kNow).id_changed);
  ApicWrite base = apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_EXTD, kNow);
  EXPECT_TRUE(base.base_written);
  EXPECT_TRUE(base.id_changed);  // x2APIC mode answers to the initial ID, 3
  EXPECT_EQ(apic.id(), 3u);
  ApicWrite bad = apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, APIC_BASE_EXTD, kNow);  // EN=0 EXTD=1: invalid
  EXPECT_TRUE(bad.gp);
  EXPECT_FALSE(bad.base_written);
}

TEST(LocalApicMatch, XapicPhysicalAndBroadcast) {
  LocalApic apic = xapic(3);
  ApicMessage m{.destination = 3};
  EXPECT_TRUE(apic.matches(m));
  m.destination = 4;
  EXPECT_FALSE(apic.matches(m));
  m.destination = 0xff;
  EXPECT_TRUE(apic.matches(m));
  wr(apic, REG_ID, 0x20000000);  // a guest-written xAPIC ID is honoured
  m.destination = 0x20;
  EXPECT_TRUE(apic.matches(m));
}

TEST(LocalApicMatch, XapicLogicalFlatAndCluster) {
  LocalApic apic = xapic(1);
  wr(apic, REG_LDR, 0x24000000);
  struct Case {
    uint32_t dfr;
    uint32_t mda;
    bool match;
  };
  const Case cases[] = {
      {0xffffffff, 0x04, true},  {0xffffffff, 0x20, true},  {0xffffffff, 0x24, true},
      {0xffffffff, 0x0b, false}, {0xffffffff, 0xff, true},  {0x0fffffff, 0x24, true},
      {0x0fffffff, 0x2c, true},  {0x0fffffff, 0x28, false}, {0x0fffffff, 0x34, false},
      {0x0fffffff, 0xff, true},
  };
  for (const auto& c : cases) {
    wr(apic, REG_DFR, c.dfr);
    ApicMessage m{.destination_mode = ApicDestinationMode::Logical, .destination = c.mda};
    EXPECT_EQ(apic.matches(m), c.match) << std::hex << c.dfr << " " << c.mda;
  }
}

TEST(LocalApicMatch, X2apicPhysicalAndLogicalCluster) {
  LocalApic apic = x2apic(0x123);  // cluster 0x12, bit 3
  ApicMessage m{.destination = 0x123, .x2apic = true};
  EXPECT_TRUE(apic.matches(m));
  m.destination = 0xff;  // not a broadcast in x2APIC
  EXPECT_FALSE(apic.matches(m));
  m.destination = X2APIC_BROADCAST;
  EXPECT_TRUE(apic.matches(m));
  m.destination_mode = ApicDestinationMode::Logical;
  for (auto [dest, match] : std::vector<std::pair<uint32_t, bool>>{
           {0x00120008, true}, {0x0012000f, true}, {0x00120007, false}, {0x00130008, false}, {0xffffffff, true}}) {
    m.destination = dest;
    EXPECT_EQ(apic.matches(m), match) << std::hex << dest;
  }
}

TEST(LocalApicMatch, Shorthands) {
  LocalApic apic = xapic(2);
  ApicMessage m{.destination = 7, .source_id = 2};
  m.shorthand = ApicShorthand::Self;
  EXPECT_TRUE(apic.matches(m));
  m.shorthand = ApicShorthand::AllExcludingSelf;
  EXPECT_FALSE(apic.matches(m));
  m.shorthand = ApicShorthand::AllIncludingSelf;
  EXPECT_TRUE(apic.matches(m));
  m.source_id = 5;
  EXPECT_TRUE(apic.matches(m));
  m.shorthand = ApicShorthand::AllExcludingSelf;
  EXPECT_TRUE(apic.matches(m));
  m.shorthand = ApicShorthand::Self;
  EXPECT_FALSE(apic.matches(m));
}

TEST(LocalApicMatch, HardwareDisabledMatchesNothing) {
  LocalApic apic = xapic(0);
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase, kNow).gp);
  EXPECT_FALSE(apic.matches({.shorthand = ApicShorthand::AllIncludingSelf}));
  EXPECT_FALSE(apic.matches({.destination = 0xff}));
}

// --- Acceptance -------------------------------------------------------------

TEST(LocalApicLint0, TakesThePicsIntrOnlyAsUnmaskedExtIntOrWhenHardwareDisabled) {
  LocalApic apic(config(0, true));
  EXPECT_FALSE(apic.accepts_pic_intr()) << "LINT0 powers on masked (QEMU 7.2; no 0x700 preset)";
  wr(apic, REG_LVT_LINT0, 0x8700);
  EXPECT_FALSE(apic.accepts_pic_intr()) << "software-disabled: the write is forced masked";
  wr(apic, REG_SVR, SVR_APIC_ENABLED | 0xff);  // SeaBIOS's smp_setup
  wr(apic, REG_LVT_LINT0, 0x8700);
  EXPECT_TRUE(apic.accepts_pic_intr());
  wr(apic, REG_LVT_LINT0, 0x8700 | LVT_MASKED);
  EXPECT_FALSE(apic.accepts_pic_intr());
  wr(apic, REG_LVT_LINT0, 0x0400);  // NMI
  EXPECT_FALSE(apic.accepts_pic_intr());
  wr(apic, REG_LVT_LINT0, 0x0700);
  EXPECT_TRUE(apic.accepts_pic_intr());
  wr(apic, REG_SVR, 0xff);  // a software disable masks every LVT
  EXPECT_FALSE(apic.accepts_pic_intr());
  // IA32_APIC_BASE.EN = 0: INTR goes straight to the CPU.
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase, kNow).gp);
  EXPECT_TRUE(apic.accepts_pic_intr());
}

TEST(LocalApicAccept, EveryDeliveryMode) {
  LocalApic apic = xapic(1);
  EXPECT_EQ(apic.accept(fixed(0x40)), (ApicAcceptResult{ApicAccept::Interrupt, 0x40}));
  EXPECT_FALSE(apic.tmr(0x40));
  ApicMessage level{.delivery_mode = ApicDeliveryMode::LowestPriority, .vector = 0x50,
                    .trigger_mode = ApicTriggerMode::Level};
  EXPECT_EQ(apic.accept(level), (ApicAcceptResult{ApicAccept::Interrupt, 0x50}));
  EXPECT_TRUE(apic.tmr(0x50));
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::Nmi}).kind, ApicAccept::Nmi);
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::StartUp, .vector = 0x9a}),
            (ApicAcceptResult{ApicAccept::StartUp, 0x9a}));
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::Smi}).kind, ApicAccept::Refused);
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::ExtInt}).kind, ApicAccept::Refused);
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::Reserved}).kind, ApicAccept::Refused);
  // INIT resets the APIC, ID kept.
  wr(apic, REG_ID, 0x09000000);
  wr(apic, REG_TPR, 0x30);
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::Init}).kind, ApicAccept::Init);
  EXPECT_EQ(rd(apic, REG_TPR), 0u);
  EXPECT_FALSE(apic.irr(0x40));
  EXPECT_FALSE(apic.software_enabled());
  EXPECT_EQ(apic.id(), 9u);
}

TEST(LocalApicAccept, IllegalVectorIsDroppedAndLogged) {
  LocalApic apic = xapic();
  for (unsigned v = 0; v < 16; ++v) EXPECT_EQ(apic.accept(fixed(v)).kind, ApicAccept::Dropped);
  EXPECT_FALSE(apic.pending_vector());
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), ESR_RECEIVE_ILLEGAL_VECTOR);
}

TEST(LocalApicAccept, SoftwareDisabledDropsFixedButTakesNmiInitSipi) {
  LocalApic apic(config(0));  // power-on: software-disabled
  EXPECT_EQ(apic.accept(fixed(0x40)).kind, ApicAccept::Dropped);
  EXPECT_FALSE(apic.irr(0x40));
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::Nmi}).kind, ApicAccept::Nmi);
  EXPECT_EQ(apic.accept({.delivery_mode = ApicDeliveryMode::StartUp, .vector = 8}).kind, ApicAccept::StartUp);
  // Clearing SVR[8] masks every LVT and keeps them masked.
  LocalApic on = xapic();
  wr(on, REG_LVT_TIMER, 0x20);
  wr(on, REG_SVR, 0xff);
  EXPECT_EQ(rd(on, REG_LVT_TIMER), 0x20u | LVT_MASKED);
  wr(on, REG_LVT_LINT0, 0x700);
  EXPECT_EQ(rd(on, REG_LVT_LINT0), 0x700u | LVT_MASKED);
}

// --- IA32_APIC_BASE and x2APIC rules ------------------------------------

TEST(LocalApicBase, StateMachine) {
  constexpr uint64_t B = LocalApic::kDefaultBase;
  constexpr uint64_t EN = APIC_BASE_EN, EXTD = APIC_BASE_EXTD;
  struct Case {
    uint64_t from;  // reached through valid steps
    uint64_t to;
    bool gp;
  };
  const Case cases[] = {
      {B | EN, B, false},                {B | EN, B | EN | EXTD, false},     {B | EN, B | EXTD, true},
      {B, B | EN, false},                {B, B | EN | EXTD, true},           {B | EN | EXTD, B | EN, true},
      {B | EN | EXTD, B, false},         {B | EN | EXTD, B | EN | EXTD, false}, {B | EN, B | EN | 1, true},
      {B | EN, B | EN | (1ull << 9), true}, {B | EN, B | EN | (1ull << 36), true},
      {B | EN, 0xabcde000 | EN, false},
  };
  for (const auto& c : cases) {
    LocalApic apic(config(0));
    if (!(c.from & EN) || (c.from & EXTD)) {
      ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, c.from, kNow).gp);
    }
    ASSERT_EQ(apic.apic_base_msr(), c.from);
    EXPECT_EQ(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, c.to, kNow).gp, c.gp) << std::hex << c.from << "->" << c.to;
    EXPECT_EQ(apic.apic_base_msr(), c.gp ? c.from : c.to);
  }
}

TEST(LocalApicBase, BspIsReadOnlyAndBaseRelocates) {
  LocalApic bsp(config(0, true));
  EXPECT_TRUE(bsp.is_bsp());
  EXPECT_FALSE(bsp.wrmsr(LocalApic::MSR_IA32_APIC_BASE, 0xfec00000 | APIC_BASE_EN, kNow).gp);
  EXPECT_EQ(bsp.rdmsr(LocalApic::MSR_IA32_APIC_BASE, kNow), 0xfec00000 | APIC_BASE_EN | APIC_BASE_BSP);
  EXPECT_EQ(bsp.base_address(), 0xfec00000u);
  LocalApic ap(config(1, false));
  EXPECT_FALSE(ap.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_BSP, kNow).gp);
  EXPECT_FALSE(ap.apic_base_msr() & APIC_BASE_BSP);
}

TEST(LocalApicBase, WithoutX2apicSupportExtdIsReserved) {
  LocalApicConfig c = config(0);
  c.x2apic_supported = false;
  LocalApic apic(c);
  EXPECT_FALSE(apic.x2apic_supported());
  EXPECT_TRUE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE,
                         LocalApic::kDefaultBase | APIC_BASE_EN | APIC_BASE_EXTD, kNow).gp);
  EXPECT_EQ(apic.mode(), ApicMode::XApic);
}

TEST(LocalApicBase, DisablingResetsTheState) {
  LocalApic apic = xapic(4);
  wr(apic, REG_ID, 0x11000000);
  wr(apic, REG_TPR, 0x50);
  apic.accept(fixed(0x80));
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase, kNow).gp);
  EXPECT_FALSE(apic.mmio_enabled());
  EXPECT_FALSE(apic.pending_vector());
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | APIC_BASE_EN, kNow).gp);
  EXPECT_EQ(rd(apic, REG_TPR), 0u);
  EXPECT_EQ(rd(apic, REG_SVR), 0xffu);
  EXPECT_EQ(apic.id(), 4u);
  EXPECT_FALSE(apic.irr(0x80));
}

TEST(LocalApicX2apic, IllegalAccessesFault) {
  LocalApic xa = xapic();
  EXPECT_FALSE(xa.rdmsr(msr_of(REG_ID), kNow));  // x2APIC MSRs in xAPIC mode
  EXPECT_TRUE(xa.wrmsr(msr_of(REG_TPR), 0, kNow).gp);
  EXPECT_FALSE(xa.rdmsr(0x1c, kNow));  // not an APIC MSR at all

  LocalApic apic = x2apic(0x42);
  EXPECT_FALSE(apic.mmio_enabled());
  for (uint32_t msr : {0x800u, 0x801u, 0x804u, 0x809u, 0x80cu, 0x80eu, 0x829u, 0x831u, 0x83du, 0x840u, 0x8ffu}) {
    EXPECT_FALSE(apic.rdmsr(msr, kNow)) << std::hex << msr;
    EXPECT_TRUE(apic.wrmsr(msr, 0, kNow).gp) << std::hex << msr;
  }
  for (uint32_t offset : {REG_EOI, REG_SELF_IPI}) EXPECT_FALSE(apic.rdmsr(msr_of(offset), kNow));
  for (uint32_t offset : {REG_ID, REG_VERSION, REG_PPR, REG_LDR, REG_ISR, REG_TMR + 0x10, REG_IRR + 0x70,
                          REG_TIMER_CURRENT_COUNT}) {
    EXPECT_TRUE(apic.wrmsr(msr_of(offset), 0, kNow).gp) << std::hex << offset;
  }
  EXPECT_EQ(apic.rdmsr(msr_of(REG_ID), kNow), 0x42u);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_LDR), kNow), (0x4u << 16) | (1u << 2));
  EXPECT_EQ(apic.rdmsr(msr_of(REG_VERSION), kNow), APIC_VERSION);
}

TEST(LocalApicReset, InitKeepsIdAndMode) {
  LocalApic apic = x2apic(0x305);
  apic.wrmsr(msr_of(REG_TPR), 0x20, kNow);
  apic.wrmsr(msr_of(REG_LVT_TIMER), 0x31, kNow);
  apic.reset();
  EXPECT_EQ(apic.mode(), ApicMode::X2Apic);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_ID), kNow), 0x305u);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_LDR), kNow), (0x30u << 16) | (1u << 5));
  EXPECT_EQ(apic.rdmsr(msr_of(REG_TPR), kNow), 0u);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_LVT_TIMER), kNow), LVT_MASKED);
  EXPECT_EQ(apic.rdmsr(msr_of(REG_SVR), kNow), 0xffu);
  EXPECT_FALSE(apic.describe(kNow).empty());
}

// --- Timer ------------------------------------------------------------------

constexpr uint32_t DIVIDE_BY_1 = 0xb;

TEST(LocalApicTimer, OneShotFiresOnceAtTheRightTime) {
  LocalApic apic = xapic();  // 1 GHz: one tick per ns at divide-by-1
  wr(apic, REG_TIMER_DIVIDE_CONFIG, DIVIDE_BY_1);
  wr(apic, REG_LVT_TIMER, 0x40);
  EXPECT_FALSE(apic.next_timer_event());
  wr(apic, REG_TIMER_INITIAL_COUNT, 1000, 500);
  EXPECT_EQ(apic.next_timer_event(), 1500u);
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 800), 700u);
  apic.on_time(1499);
  EXPECT_FALSE(apic.irr(0x40));
  apic.on_time(1500);
  EXPECT_TRUE(apic.irr(0x40));
  EXPECT_FALSE(apic.next_timer_event());
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 1600), 0u);
  EXPECT_EQ(apic.acknowledge(), 0x40);
  wr(apic, REG_EOI, 0);
  apic.on_time(5000);
  EXPECT_FALSE(apic.irr(0x40));  // once only
  EXPECT_EQ(rd(apic, REG_TIMER_INITIAL_COUNT), 1000u);
}

TEST(LocalApicTimer, PeriodicRearms) {
  LocalApic apic = xapic();
  wr(apic, REG_TIMER_DIVIDE_CONFIG, DIVIDE_BY_1);
  wr(apic, REG_LVT_TIMER, 0x41 | TIMER_MODE_PERIODIC);
  wr(apic, REG_TIMER_INITIAL_COUNT, 100, 0);
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 130), 70u);
  std::vector<uint64_t> fired;
  for (uint64_t t = 0; t <= 350; ++t) {
    apic.on_time(t);
    if (apic.irr(0x41)) {
      fired.push_back(t);
      apic.acknowledge();
      wr(apic, REG_EOI, 0);
    }
  }
  EXPECT_EQ(fired, (std::vector<uint64_t>{100, 200, 300}));
  EXPECT_EQ(apic.next_timer_event(), 400u);
  apic.on_time(1000);  // missed periods coalesce into one interrupt
  EXPECT_TRUE(apic.irr(0x41));
  EXPECT_EQ(apic.next_timer_event(), 1100u);
  wr(apic, REG_TIMER_INITIAL_COUNT, 0, 1000);  // 0 stops the timer
  EXPECT_FALSE(apic.next_timer_event());
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 1050), 0u);
}

TEST(LocalApicTimer, DivideConfigScales) {
  struct Case {
    uint32_t dcr;
    uint64_t divisor;
  };
  const Case cases[] = {{0x0, 2}, {0x1, 4}, {0x2, 8}, {0x3, 16}, {0x8, 32}, {0x9, 64}, {0xa, 128}, {0xb, 1}};
  for (const auto& c : cases) {
    LocalApic apic = xapic();
    wr(apic, REG_TIMER_DIVIDE_CONFIG, c.dcr);
    wr(apic, REG_LVT_TIMER, 0x40);
    wr(apic, REG_TIMER_INITIAL_COUNT, 10, 0);
    EXPECT_EQ(apic.next_timer_event(), 10 * c.divisor) << c.dcr;
    EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 5 * c.divisor), 5u) << c.dcr;
  }
  LocalApicConfig slow = config(0);
  slow.timer_hz = 100'000'000;  // 100 MHz: 10 ns per tick before division
  LocalApic apic(slow);
  wr(apic, REG_SVR, SVR_APIC_ENABLED | 0xff);
  wr(apic, REG_LVT_TIMER, 0x40);
  wr(apic, REG_TIMER_INITIAL_COUNT, 3, 7);  // divide by 2 at power-on
  EXPECT_EQ(apic.next_timer_event(), 7u + 60);
}

TEST(LocalApicTimer, MaskedLvtCountsButDoesNotDeliver) {
  LocalApic apic = xapic();
  wr(apic, REG_TIMER_DIVIDE_CONFIG, DIVIDE_BY_1);
  wr(apic, REG_LVT_TIMER, 0x42 | LVT_MASKED | TIMER_MODE_PERIODIC);
  wr(apic, REG_TIMER_INITIAL_COUNT, 50, 0);
  apic.on_time(60);
  EXPECT_FALSE(apic.irr(0x42));
  EXPECT_EQ(apic.next_timer_event(), 100u);  // still reloads
  wr(apic, REG_LVT_TIMER, 0x42 | TIMER_MODE_PERIODIC);  // unmask, same mode: keeps running
  apic.on_time(100);
  EXPECT_TRUE(apic.irr(0x42));
}

TEST(LocalApicTimer, TscDeadline) {
  LocalApic apic = xapic();  // TSC at 2 GHz: 2 ticks per ns
  // Outside TSC-deadline mode the MSR reads 0 and ignores writes.
  apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 1234, kNow);
  EXPECT_EQ(apic.rdmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kNow), 0u);
  wr(apic, REG_LVT_TIMER, 0x43 | TIMER_MODE_TSC_DEADLINE);
  wr(apic, REG_TIMER_INITIAL_COUNT, 99);  // ignored in this mode
  EXPECT_EQ(rd(apic, REG_TIMER_INITIAL_COUNT), 0u);
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT), 0u);
  EXPECT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 3001, kNow).gp);
  EXPECT_EQ(apic.rdmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kNow), 3001u);
  EXPECT_EQ(apic.next_timer_event(), 1501u);  // first ns with TSC >= 3001
  apic.on_time(1500);
  EXPECT_FALSE(apic.irr(0x43));
  apic.on_time(1501);
  EXPECT_TRUE(apic.irr(0x43));
  EXPECT_EQ(apic.rdmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kNow), 0u);  // cleared on firing
  EXPECT_FALSE(apic.next_timer_event());
  // Writing 0 disarms.
  apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 5000, kNow);
  apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 0, kNow);
  EXPECT_FALSE(apic.next_timer_event());
}

// Issue 14, F1: with the TSC below 1 GHz a deadline can lie past 2^64 ns.
// The quotient used to be truncated to an early instant at which on_time()
// fired nothing, and the machine, every vCPU halted, waited there for ever.
TEST(LocalApicTimer, TscDeadlinePast2To64NsSaturates) {
  LocalApicConfig slow = config();
  slow.tsc_hz = 500'000'000;  // --cost freq_mhz=500: 2 ns per TSC tick
  LocalApic apic(slow);
  wr(apic, REG_SVR, SVR_APIC_ENABLED | 0xff);
  wr(apic, REG_LVT_TIMER, 0x43 | TIMER_MODE_TSC_DEADLINE);
  constexpr uint64_t kFar = 0x80000000000003e8;  // 2^63 + 1000 ticks: 2^64 + 2000 ns
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kFar, kNow).gp);
  EXPECT_EQ(apic.next_timer_event(), std::numeric_limits<uint64_t>::max());
  apic.on_time(std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(apic.irr(0x43));
  // The last deadline that still fits fires where it says.
  constexpr uint64_t kLast = std::numeric_limits<uint64_t>::max() / 2;
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kLast, kNow).gp);
  ASSERT_EQ(apic.next_timer_event(), kLast * 2);
  apic.on_time(kLast * 2);
  EXPECT_TRUE(apic.irr(0x43));
}

// The counting modes cannot wrap either: a periodic timer's later periods
// and a start near the end of time saturate.
TEST(LocalApicTimer, CountingEventsNeverWrap) {
  LocalApic apic = xapic();
  wr(apic, REG_TIMER_DIVIDE_CONFIG, 0xb);  // divide by 1
  wr(apic, REG_LVT_TIMER, 0x42 | TIMER_MODE_ONE_SHOT);
  const uint64_t late = std::numeric_limits<uint64_t>::max() - 10;
  wr(apic, REG_TIMER_INITIAL_COUNT, 1000, late);
  ASSERT_TRUE(apic.next_timer_event());
  EXPECT_GE(*apic.next_timer_event(), late);
}

TEST(LocalApicTimer, ChangingToOrFromTscDeadlineModeDisarms) {
  LocalApic apic = xapic();
  wr(apic, REG_LVT_TIMER, 0x40);
  wr(apic, REG_TIMER_INITIAL_COUNT, 1000, 0);
  ASSERT_TRUE(apic.next_timer_event());
  wr(apic, REG_LVT_TIMER, 0x40 | TIMER_MODE_TSC_DEADLINE);
  EXPECT_FALSE(apic.next_timer_event());
  EXPECT_EQ(rd(apic, REG_TIMER_INITIAL_COUNT, 10), 0u);
  apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 100, kNow);
  ASSERT_TRUE(apic.next_timer_event());
  wr(apic, REG_LVT_TIMER, 0x40);
  EXPECT_FALSE(apic.next_timer_event());
  wr(apic, REG_LVT_TIMER, 0x40 | TIMER_MODE_TSC_DEADLINE);
  EXPECT_EQ(apic.rdmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kNow), 0u);
}

// kvm-unit-tests' apic "change mode": between one-shot and periodic the
// count runs on; periodic to one-shot finishes the current period and stops.
TEST(LocalApicTimer, BetweenOneShotAndPeriodicTheCountRunsOn) {
  LocalApic apic = xapic();
  wr(apic, REG_TIMER_DIVIDE_CONFIG, DIVIDE_BY_1);
  wr(apic, REG_LVT_TIMER, 0x40 | TIMER_MODE_ONE_SHOT);
  const uint64_t period_ns = 1000;  // 1,000 ticks of the 1 GHz timer clock, divided by 1
  wr(apic, REG_TIMER_INITIAL_COUNT, 1000, 0);
  wr(apic, REG_LVT_TIMER, 0x40 | TIMER_MODE_PERIODIC, period_ns / 2);
  EXPECT_EQ(rd(apic, REG_TIMER_INITIAL_COUNT, period_ns / 2), 1000u);
  EXPECT_NEAR(rd(apic, REG_TIMER_CURRENT_COUNT, period_ns / 2), 500, 2);
  // Past the end of the first period it reloads.
  EXPECT_NEAR(rd(apic, REG_TIMER_CURRENT_COUNT, period_ns + period_ns / 4), 750, 2);
  apic.on_time(period_ns + period_ns / 4);
  wr(apic, REG_LVT_TIMER, 0x40 | TIMER_MODE_ONE_SHOT, period_ns + period_ns / 2);
  EXPECT_NEAR(rd(apic, REG_TIMER_CURRENT_COUNT, period_ns + period_ns / 2), 500, 2);
  ASSERT_TRUE(apic.next_timer_event());
  EXPECT_NEAR(static_cast<double>(*apic.next_timer_event()), 2.0 * period_ns, 2);
  EXPECT_EQ(rd(apic, REG_TIMER_CURRENT_COUNT, 3 * period_ns), 0u);
}

TEST(LocalApicTimer, IllegalTimerVectorLogsAnError) {
  LocalApic apic = xapic();
  wr(apic, REG_TIMER_DIVIDE_CONFIG, DIVIDE_BY_1);
  wr(apic, REG_LVT_TIMER, 0x07);
  wr(apic, REG_TIMER_INITIAL_COUNT, 1, 0);
  apic.on_time(10);
  EXPECT_FALSE(apic.pending_vector());
  wr(apic, REG_ESR, 0);
  EXPECT_EQ(rd(apic, REG_ESR), ESR_RECEIVE_ILLEGAL_VECTOR);
}

// --- Garbage ----------------------------------------------------------------

TEST(LocalApicFuzz, GarbageNeverBreaksInvariants) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (uint32_t id : {0u, 7u, 0x1ffu}) {
    LocalApic apic(config(id));
    uint64_t now = 0;
    int steps_in[3] = {};
    for (int i = 0; i < 20'000; ++i) {
      now += next() % 1000;
      uint64_t r = next();
      uint64_t value = next();
      if (r % 4 != 0) value &= 0xffffffff;  // mostly 32-bit values
      switch (r % 9) {
        case 0:
          apic.mmio_write(static_cast<uint32_t>(value >> 40) & 0xfff, 1u << (r >> 8) % 3, static_cast<uint32_t>(value),
                          now);
          break;
        case 1:
          apic.mmio_read(static_cast<uint32_t>(value) & 0xfff, 4, now);
          break;
        case 2: {
          uint32_t msr = 0x800 + (r >> 8) % 0x100;
          if ((r >> 20) % 16 == 0) msr = LocalApic::MSR_IA32_APIC_BASE;
          if ((r >> 20) % 16 == 1) msr = LocalApic::MSR_IA32_TSC_DEADLINE;
          apic.wrmsr(msr, value, now);
          break;
        }
        case 3:
          apic.rdmsr(0x800 + (r >> 8) % 0x100, now);
          break;
        case 4:
          apic.accept({.delivery_mode = static_cast<ApicDeliveryMode>((r >> 8) & 7),
                       .vector = static_cast<uint8_t>(value),
                       .trigger_mode = static_cast<ApicTriggerMode>((r >> 12) & 1)});
          break;
        case 5:
          apic.acknowledge();
          break;
        case 6:
          apic.on_time(now);
          break;
        case 7:
          if ((r >> 8) % 64 == 0) apic.reset();
          break;
        case 8: {
          // Valid and invalid mode changes alike, so every mode gets garbage.
          const uint64_t bases[] = {0, APIC_BASE_EN, APIC_BASE_EN | APIC_BASE_EXTD, APIC_BASE_EXTD};
          apic.wrmsr(LocalApic::MSR_IA32_APIC_BASE, LocalApic::kDefaultBase | bases[(r >> 8) % 4], now);
          break;
        }
      }
      ++steps_in[static_cast<int>(apic.mode())];
      // Invariants.
      uint64_t base = apic.apic_base_msr();
      ASSERT_FALSE((base & APIC_BASE_EXTD) && !(base & APIC_BASE_EN));
      ASSERT_FALSE(base & APIC_BASE_BSP);
      for (unsigned v = 0; v < 16; ++v) ASSERT_FALSE(apic.irr(v) || apic.isr(v)) << v;
      if (auto v = apic.pending_vector()) {
        ASSERT_GT(*v >> 4, apic.processor_priority() >> 4);
      }
      ASSERT_GE(apic.processor_priority() >> 4, apic.task_priority() >> 4);
      if (apic.mode() == ApicMode::X2Apic) {
        ASSERT_EQ(apic.id(), id);
        ASSERT_EQ(apic.rdmsr(msr_of(REG_LDR), now), ((id >> 4) << 16) | (1u << (id & 0xf)));
        ASSERT_EQ(apic.rdmsr(msr_of(REG_ICR_LOW), now).value() & ICR_DELIVERY_STATUS, 0u);
      }
      if (apic.mode() == ApicMode::XApic) {
        ASSERT_EQ(apic.mmio_read(REG_DFR, 4, now) & 0x0fffffff, 0x0fffffffu);
        ASSERT_EQ(apic.mmio_read(REG_ICR_LOW, 4, now) & ICR_DELIVERY_STATUS, 0u);
        if (!apic.software_enabled()) {
          for (uint32_t lvt : {REG_LVT_TIMER, REG_LVT_LINT0, REG_LVT_ERROR}) {
            ASSERT_TRUE(apic.mmio_read(lvt, 4, now) & LVT_MASKED);
          }
        }
      }
      if (auto t = apic.next_timer_event(); t && apic.mode() != ApicMode::Disabled) {
        uint32_t timer = apic.mode() == ApicMode::X2Apic ? *apic.rdmsr(msr_of(REG_LVT_TIMER), now)
                                                         : apic.mmio_read(REG_LVT_TIMER, 4, now);
        ASSERT_NE(timer & LVT_TIMER_MODE, LVT_TIMER_MODE);  // the reserved mode never runs
      }
    }
    for (int steps : steps_in) EXPECT_GT(steps, 2'000);  // every mode was exercised
  }
}

}  // namespace
}  // namespace topolab

namespace topolab {
namespace {

TEST(LocalApicMixedModes, X2ApicSenderAddressesFullIdsOfXApicReceivers) {
  LocalApic high(LocalApicConfig{.apic_id = 0x101});
  LocalApic low(LocalApicConfig{.apic_id = 0x01});
  ApicMessage msg;
  msg.delivery_mode = ApicDeliveryMode::StartUp;
  msg.destination = 0x01;
  msg.x2apic = true;
  EXPECT_TRUE(low.matches(msg));
  EXPECT_FALSE(high.matches(msg));  // its 8-bit xAPIC ID reads 0x01, but it is 0x101
  msg.destination = 0x101;
  EXPECT_TRUE(high.matches(msg));
}

}  // namespace
}  // namespace topolab

namespace topolab {
namespace {

TEST(LocalApicMatch, LogicalFFIsNoBroadcastForAFlatApicWithoutALogicalId) {
  LocalApic apic(LocalApicConfig{.apic_id = 8});
  apic.mmio_write(apic::REG_DFR, 4, 0xffffffff, 0);  // flat
  apic.mmio_write(apic::REG_LDR, 4, 0, 0);           // logical ID 0: in no flat set
  ApicMessage msg;
  msg.destination_mode = ApicDestinationMode::Logical;
  msg.destination = 0xff;
  EXPECT_FALSE(apic.matches(msg));
  apic.mmio_write(apic::REG_LDR, 4, 0x80u << 24, 0);
  EXPECT_TRUE(apic.matches(msg));
  // Cluster model: cluster 0xF addresses every cluster.
  apic.mmio_write(apic::REG_DFR, 4, 0x0fffffff, 0);
  apic.mmio_write(apic::REG_LDR, 4, 0x32u << 24, 0);  // cluster 3, member bit 1
  msg.destination = 0xf2;
  EXPECT_TRUE(apic.matches(msg));
  msg.destination = 0xf1;
  EXPECT_FALSE(apic.matches(msg));
}

// --- Snapshots ----------------------------------------------------------

// What the vCPU and the bus see of `apic` from `now` on: the timer, the
// vector it would take, ESR, the EOIs of what is in service (the level one
// is broadcast), the next expiry, and IRR/ISR/TMR.
std::vector<uint64_t> run_from(LocalApic& apic, uint64_t now) {
  std::vector<uint64_t> seen;
  const auto read = [&](uint32_t offset) { return apic.rdmsr(msr_of(offset), now).value_or(~uint64_t{0}); };
  seen.push_back(apic.next_timer_event().value_or(0));
  seen.push_back(read(REG_TIMER_CURRENT_COUNT));
  seen.push_back(read(REG_TIMER_DIVIDE_CONFIG));
  seen.push_back(read(REG_LVT_TIMER));
  seen.push_back(read(REG_LVT_ERROR));
  seen.push_back(read(REG_TPR));
  seen.push_back(read(REG_ICR_LOW));
  seen.push_back(apic.rdmsr(LocalApic::MSR_X2APIC_ICR, now).value_or(0));
  seen.push_back(apic.id());
  seen.push_back(apic.apic_base_msr());
  seen.push_back(apic.pending_vector().value_or(0));
  seen.push_back(apic.processor_priority());
  EXPECT_FALSE(apic.wrmsr(msr_of(REG_ESR), 0, now).gp);
  seen.push_back(read(REG_ESR));
  while (apic.pending_vector()) seen.push_back(apic.acknowledge());
  for (int in_service = 0; in_service < 4; ++in_service) {
    const ApicWrite eoi = apic.wrmsr(msr_of(REG_EOI), 0, now);
    seen.push_back(eoi.eoi_broadcast.value_or(0));
  }
  if (const auto expiry = apic.next_timer_event()) apic.on_time(*expiry);
  seen.push_back(apic.next_timer_event().value_or(0));
  for (unsigned v = 0; v < 256; ++v) seen.push_back(apic.irr(v) | apic.isr(v) << 1 | apic.tmr(v) << 2);
  return seen;
}

TEST(LocalApicSnapshot, RoundTripsTheTimerAndPendingAndInServiceVectors) {
  LocalApic apic = x2apic(5);
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_TPR), 0x20, kNow).gp);
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_LVT_ERROR), 0xe0, kNow).gp);
  // A periodic timer counting at divide-by-2 (2000 ns a period); the
  // divide-by-1 written after it applies at the next initial count only.
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_TIMER_DIVIDE_CONFIG), 0, kNow).gp);
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_LVT_TIMER), 0x40 | TIMER_MODE_PERIODIC, kNow).gp);
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_TIMER_INITIAL_COUNT), 1000, kNow).gp);
  ASSERT_FALSE(apic.wrmsr(msr_of(REG_TIMER_DIVIDE_CONFIG), DIVIDE_BY_1, kNow).gp);
  // Level-triggered 0x50 in service, 0x90 pending behind it.
  ASSERT_EQ(apic.accept({.vector = 0x50, .trigger_mode = ApicTriggerMode::Level, .destination = 5}).kind,
            ApicAccept::Interrupt);
  ASSERT_EQ(apic.acknowledge(), 0x50);
  apic.accept(fixed(0x90, 5));
  // An ICR with an illegal vector: ESR "send illegal vector", error LVT 0xe0.
  EXPECT_FALSE(apic.wrmsr(LocalApic::MSR_X2APIC_ICR, uint64_t{7} << 32 | 0x02, kNow).message);
  apic.on_time(kNow + 2500);  // the first period: 0x40 in IRR
  const uint64_t now = kNow + 3000;

  const std::string bytes = save_state_bytes(apic);
  LocalApic restored(config(5));
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  EXPECT_EQ(restored.mode(), ApicMode::X2Apic);
  EXPECT_EQ(restored.next_timer_event(), kNow + 4000);
  EXPECT_EQ(restored.pending_vector(), 0xe0);
  EXPECT_TRUE(restored.isr(0x50) && restored.tmr(0x50));
  EXPECT_TRUE(restored.irr(0x40) && restored.irr(0x90));
  const std::vector<uint64_t> seen = run_from(apic, now);
  EXPECT_EQ(run_from(restored, now), seen);
  LocalApic fresh = x2apic(5);
  EXPECT_NE(run_from(fresh, now), seen);
}

// The TSC-deadline timer, armed in xAPIC mode, fires at the same instant.
TEST(LocalApicSnapshot, RoundTripsAnArmedTscDeadline) {
  LocalApic apic = xapic(2);
  wr(apic, REG_LVT_TIMER, 0x43 | TIMER_MODE_TSC_DEADLINE);
  ASSERT_FALSE(apic.wrmsr(LocalApic::MSR_IA32_TSC_DEADLINE, 3001, kNow).gp);
  const std::string bytes = save_state_bytes(apic);
  LocalApic restored(config(2));
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  const auto run = [](LocalApic& a) {
    std::vector<uint64_t> seen{a.rdmsr(LocalApic::MSR_IA32_TSC_DEADLINE, kNow).value_or(~uint64_t{0}),
                               a.next_timer_event().value_or(0), rd(a, REG_SVR)};
    a.on_time(1500);
    seen.push_back(a.irr(0x43));
    a.on_time(1501);
    seen.push_back(a.irr(0x43));
    seen.push_back(a.next_timer_event().has_value());
    return seen;
  };
  const std::vector<uint64_t> seen = run(apic);
  EXPECT_EQ(seen, (std::vector<uint64_t>{3001, 1501, SVR_APIC_ENABLED | 0xff, 0, 1, 0}));
  EXPECT_EQ(run(restored), seen);
}

}  // namespace
}  // namespace topolab
