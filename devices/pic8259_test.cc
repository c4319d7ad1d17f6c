// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pic8259.h"

#include <vector>

#include <gtest/gtest.h>

#include "base/state_archive.h"
#include "devices/port_bus.h"

namespace topolab {
namespace {

// The pair and the ELCR on one bus, as the board attaches them, with every
// change of INT recorded.
struct Pics {
  Pics() {
    bus.attach(Pic8259::kMasterBase, Pic8259::kPortCount, pic.master_ports());
    bus.attach(Pic8259::kSlaveBase, Pic8259::kPortCount, pic.slave_ports());
    bus.attach(Pic8259::kElcrBase, Pic8259::kElcrPortCount, pic.elcr_ports());
  }
  uint8_t inb(uint16_t port) { return static_cast<uint8_t>(bus.read(port, 1)); }
  void outb(uint8_t value, uint16_t port) { bus.write(port, 1, value); }  // Linux's argument order
  // SeaBIOS's pic_setup: bases 0x08 and 0x70, the slave on IR2, 8086 mode.
  void seabios_setup(uint8_t master_mask, uint8_t slave_mask) {
    for (uint8_t b : {0x11, 0x08, 0x04, 0x01}) outb(b, b == 0x11 ? 0x20 : 0x21);
    for (uint8_t b : {0x11, 0x70, 0x02, 0x01}) outb(b, b == 0x11 ? 0xa0 : 0xa1);
    outb(master_mask, 0x21);
    outb(slave_mask, 0xa1);
  }

  std::vector<bool> changes;
  Pic8259 pic{[this](bool level) { changes.push_back(level); }};
  PortBus bus;
};

TEST(Pic8259, StartsFullyMaskedWithNothingPending) {
  Pics p;
  EXPECT_EQ(p.inb(0x21), 0xffu);
  EXPECT_EQ(p.inb(0xa1), 0xffu);
  EXPECT_EQ(p.inb(0x20), 0u);
  EXPECT_FALSE(p.pic.output());
}

TEST(Pic8259, MaskReadsBackAndInitialisationWordsAreNotAMask) {
  Pics p;
  p.outb(0x5a, 0xa1);
  EXPECT_EQ(p.inb(0xa1), 0x5au);
  p.seabios_setup(0xb8, 0x8e);
  EXPECT_EQ(p.inb(0x21), 0xb8u);
  EXPECT_EQ(p.inb(0xa1), 0x8eu);
  EXPECT_EQ(p.pic.vector_base(false), 0x08u);
  EXPECT_EQ(p.pic.vector_base(true), 0x70u);
  // ICW1 alone clears the IMR (data sheet), and single mode without ICW4
  // goes straight from ICW2 to OCW1.
  p.outb(0x12, 0x20);
  EXPECT_EQ(p.inb(0x21), 0u);
  p.outb(0x20, 0x21);
  p.outb(0xfe, 0x21);
  EXPECT_EQ(p.inb(0x21), 0xfeu);
  EXPECT_EQ(p.pic.vector_base(false), 0x20u);
}

TEST(Pic8259, AnEdgeWhileMaskedIsLatchedAndRaisesIntOnUnmask) {
  Pics p;
  p.seabios_setup(0xff, 0xff);
  p.pic.set_irq(0, true);
  p.pic.set_irq(0, false);
  EXPECT_FALSE(p.pic.output());
  EXPECT_EQ(p.pic.irr(false), 0x01u) << "IRR latches the edge; the IMR only keeps it from INT";
  p.outb(0xfe, 0x21);
  EXPECT_TRUE(p.pic.output());
  EXPECT_EQ(p.changes, std::vector<bool>{true});
  EXPECT_EQ(p.pic.acknowledge(), 0x08u);
  EXPECT_FALSE(p.pic.output());
  EXPECT_EQ(p.pic.irr(false), 0u);
  EXPECT_EQ(p.pic.isr(false), 0x01u);
  // A line that stays high is one edge: no second request.
  p.pic.set_irq(0, true);
  p.pic.set_irq(0, true);
  p.outb(0x20, 0x20);  // non-specific EOI
  EXPECT_TRUE(p.pic.output());
  EXPECT_EQ(p.pic.acknowledge(), 0x08u);
  p.outb(0x20, 0x20);
  EXPECT_FALSE(p.pic.output());
}

TEST(Pic8259, InServiceBlocksEqualAndLowerPrioritiesOnly) {
  Pics p;
  p.seabios_setup(0x00, 0xff);
  p.pic.set_irq(4, true);
  EXPECT_EQ(p.pic.acknowledge(), 0x0cu);
  p.pic.set_irq(6, true);  // lower than IR4: waits for its EOI
  EXPECT_FALSE(p.pic.output());
  p.pic.set_irq(1, true);  // higher: nests
  EXPECT_TRUE(p.pic.output());
  EXPECT_EQ(p.pic.acknowledge(), 0x09u);
  EXPECT_EQ(p.pic.isr(false), 0x12u);
  p.outb(0x20, 0x20);  // ends IR1, the highest in service
  EXPECT_EQ(p.pic.isr(false), 0x10u);
  EXPECT_FALSE(p.pic.output());
  p.outb(0x60 + 4, 0x20);  // specific EOI for IR4
  EXPECT_TRUE(p.pic.output());
  EXPECT_EQ(p.pic.acknowledge(), 0x0eu);
  // OCW3 reads: ISR, then IRR again.
  p.outb(0x0b, 0x20);
  EXPECT_EQ(p.inb(0x20), 0x40u);
  p.outb(0x0a, 0x20);
  EXPECT_EQ(p.inb(0x20), 0x00u);
}

TEST(Pic8259, TheSlaveCascadesThroughIr2) {
  Pics p;
  p.seabios_setup(0xfb, 0xf7);  // IRQ 2 and IRQ 11 open
  p.pic.set_irq(11, true);
  EXPECT_TRUE(p.pic.output());
  EXPECT_TRUE(p.pic.line_unmasked(11));
  EXPECT_FALSE(p.pic.line_unmasked(10));
  EXPECT_EQ(p.pic.acknowledge(), 0x73u);
  EXPECT_EQ(p.pic.isr(false), 0x04u);
  EXPECT_EQ(p.pic.isr(true), 0x08u);
  EXPECT_FALSE(p.pic.output());
  p.outb(0x20, 0xa0);
  p.outb(0x20, 0x20);
  EXPECT_EQ(p.pic.isr(false), 0u);
  EXPECT_EQ(p.pic.isr(true), 0u);
  // The master's IR2 masked hides the slave.
  p.outb(0xff, 0x21);
  EXPECT_FALSE(p.pic.line_unmasked(11));
}

TEST(Pic8259, NothingToTakeIsTheSpuriousIr7) {
  Pics p;
  p.seabios_setup(0xff, 0xff);
  EXPECT_EQ(p.pic.acknowledge(), 0x0fu);
  EXPECT_EQ(p.pic.isr(false), 0u);
}

TEST(Pic8259, AutoEoiLeavesNothingInService) {
  Pics p;
  for (uint8_t b : {0x11, 0x30, 0x04, 0x03}) p.outb(b, b == 0x11 ? 0x20 : 0x21);  // Linux's check_timer: AEOI
  p.outb(0xfe, 0x21);
  p.pic.set_irq(0, true);
  EXPECT_EQ(p.pic.acknowledge(), 0x30u);
  EXPECT_EQ(p.pic.isr(false), 0u);
  EXPECT_FALSE(p.pic.output());
}

TEST(Pic8259, ALevelTriggeredRequestFollowsItsLine) {
  Pics p;
  p.seabios_setup(0xfb, 0xfd);  // IRQ 9
  p.outb(0x02, 0x4d1);
  p.pic.set_irq(9, true);
  EXPECT_EQ(p.pic.acknowledge(), 0x71u);
  EXPECT_EQ(p.pic.irr(true), 0x02u) << "a level request stays in IRR while the line is high";
  p.outb(0x20, 0xa0);
  p.outb(0x20, 0x20);
  EXPECT_TRUE(p.pic.output()) << "and asks again after the EOI";
  p.pic.set_irq(9, false);
  EXPECT_EQ(p.pic.irr(true), 0u);
  // The master latched the slave's INT as an edge on IR2: the request went
  // away before the INTA, which gets the slave's spurious IR7 (as QEMU's).
  EXPECT_TRUE(p.pic.output());
  EXPECT_EQ(p.pic.acknowledge(), 0x77u);
  EXPECT_FALSE(p.pic.output());
}

TEST(Pic8259, PollTakesTheRequestWithoutAVector) {
  Pics p;
  p.seabios_setup(0x00, 0xff);
  p.pic.set_irq(3, true);
  p.outb(0x0c, 0x20);
  EXPECT_EQ(p.inb(0x20), 0x83u);
  EXPECT_EQ(p.pic.isr(false), 0x08u);
  p.outb(0x0c, 0x20);
  EXPECT_EQ(p.inb(0x20), 0u);
}

TEST(Pic8259, RotationMovesTheLowestPriority) {
  Pics p;
  p.seabios_setup(0x00, 0xff);
  p.outb(0xc0 + 3, 0x20);  // set priority: IR3 lowest, IR4 highest
  p.pic.set_irq(1, true);
  p.pic.set_irq(5, true);
  EXPECT_EQ(p.pic.acknowledge(), 0x0du);
  p.outb(0xa0, 0x20);  // rotate on non-specific EOI: IR5 becomes the lowest
  EXPECT_EQ(p.pic.acknowledge(), 0x09u);
}

// Linux 6.1's init_8259A (arch/x86/kernel/i8259.c): mask the master, ICW1
// to both, ICW2 ISA_IRQ_VECTOR(0) = 0x30 and 0x38, ICW3 cascade on IR2,
// ICW4 8086 mode (| AEOI when check_timer re-initialises), then the cached
// masks (0xFB on the master once the cascade is unmasked).
void linux_init_8259a(Pics& p, bool auto_eoi, uint8_t master_mask, uint8_t slave_mask) {
  p.outb(0xff, 0x21);
  p.outb(0x11, 0x20);
  p.outb(0x30, 0x21);
  p.outb(1u << 2, 0x21);
  p.outb(auto_eoi ? 0x03 : 0x01, 0x21);
  p.outb(0x11, 0xa0);
  p.outb(0x38, 0xa1);
  p.outb(2, 0xa1);
  p.outb(0x01, 0xa1);
  p.outb(master_mask, 0x21);
  p.outb(slave_mask, 0xa1);
}

TEST(Pic8259, Linux61ProbeReadsBackTheMaskItWrote) {
  // probe_8259A at power-on state (no firmware ran): mask the slave, mask
  // all but the cascade on the master, read it back. 0xFF would mean no PIC.
  Pics p;
  p.outb(0xff, 0xa1);
  p.outb(static_cast<uint8_t>(~(1u << 2)), 0x21);
  EXPECT_EQ(p.inb(0x21), 0xfbu);
}

TEST(Pic8259, Linux61InitialisesBothPicsAndReadsNothingPending) {
  Pics p;
  p.outb(0xff, 0xa1);  // the probe first
  p.outb(0xfb, 0x21);
  ASSERT_EQ(p.inb(0x21), 0xfbu);
  linux_init_8259a(p, false, 0xff, 0xff);  // init_ISA_irqs: legacy_pic->init(0)
  EXPECT_EQ(p.pic.vector_base(false), 0x30u);
  EXPECT_EQ(p.pic.vector_base(true), 0x38u);
  EXPECT_EQ(p.inb(0x21), 0xffu);
  EXPECT_EQ(p.inb(0xa1), 0xffu);
  // i8259A_irq_pending: the command port reads IRR after ICW1.
  EXPECT_EQ(p.inb(0x20), 0u);
  EXPECT_EQ(p.inb(0xa0), 0u);
  // i8259A_irq_real: OCW3 read ISR, read, back to IRR.
  p.outb(0x0b, 0x20);
  EXPECT_EQ(p.inb(0x20), 0u);
  p.outb(0x0a, 0x20);
  p.outb(0x0b, 0xa0);
  EXPECT_EQ(p.inb(0xa0), 0u);
  p.outb(0x0a, 0xa0);
  // unmask_8259A_irq(2) and mask_and_ack_8259A(0): a dummy IMR read, the
  // mask, a specific EOI (OCW2 0x60 + IR) that leaves the IMR alone.
  p.outb(0xfb, 0x21);
  (void)p.inb(0x21);
  p.outb(0xfb, 0x21);
  p.outb(0x60 + 0, 0x20);
  p.outb(0x60 + 2, 0x20);
  EXPECT_EQ(p.inb(0x21), 0xfbu);
}

TEST(Pic8259, Linux61CheckTimerReinitialisesWithAutoEoi) {
  // check_timer: legacy_pic->mask(0), LVT0 to ExtINT masked, init(1); the
  // timer then goes through I/O APIC pin 2 and the PIC stays masked.
  Pics p;
  linux_init_8259a(p, false, 0xfb, 0xff);
  p.outb(0xfb | 0x01, 0x21);
  linux_init_8259a(p, true, 0xfb | 0x01, 0xff);
  EXPECT_EQ(p.inb(0x21), 0xfbu | 0x01);
  EXPECT_EQ(p.inb(0xa1), 0xffu);
  EXPECT_EQ(p.pic.vector_base(false), 0x30u);
  // i8259A_shutdown / mask_8259A at the end.
  p.outb(0xff, 0x21);
  p.outb(0xff, 0xa1);
  EXPECT_EQ(p.pic.imr(false), 0xffu);
  EXPECT_EQ(p.pic.imr(true), 0xffu);
}

TEST(Elcr, ReadsBackWhatCanBeLevelTriggeredAsQemu) {
  Pics p;
  EXPECT_EQ(p.inb(0x4d0), 0u);  // all edge at reset
  EXPECT_EQ(p.inb(0x4d1), 0u);
  p.outb(0xff, 0x4d0);
  p.outb(0xff, 0x4d1);
  EXPECT_EQ(p.inb(0x4d0), Pic8259::kElcrMasterMask);  // IRQ 0, 1, 2 always edge
  EXPECT_EQ(p.inb(0x4d1), Pic8259::kElcrSlaveMask);   // IRQ 8, 13 always edge
  // Linux's save_ELCR / restore_ELCR (suspend and resume).
  const uint8_t trigger0 = p.inb(0x4d0) & 0xf8, trigger1 = p.inb(0x4d1) & 0xde;
  p.outb(0, 0x4d0);
  p.outb(0, 0x4d1);
  p.outb(trigger0, 0x4d0);
  p.outb(trigger1, 0x4d1);
  EXPECT_EQ(p.pic.level_triggered(), 0xdef8u);
  // elcr_set_level_irq(9) and (11) for PCI in PIC mode, then a word read.
  p.bus.write(0x4d0, 2, 0);
  p.outb(p.inb(0x4d1) | (1u << (9 - 8)) | (1u << (11 - 8)), 0x4d1);
  EXPECT_EQ(p.bus.read(0x4d0, 2), 0x0a00u);
  EXPECT_EQ(p.pic.level_triggered(), (1u << 9) | (1u << 11));
}

TEST(Pic8259Snapshot, RoundTripsRequestsInServiceAndAHalfDoneInitialisation) {
  Pics p;
  p.seabios_setup(0x00, 0xf7);
  p.outb(0x02, 0x4d1);
  p.pic.set_irq(11, true);
  p.pic.set_irq(1, true);
  (void)p.pic.acknowledge();
  p.outb(0x11, 0xa0);  // the slave again: ICW2 next
  const std::string bytes = save_state_bytes(p.pic);
  Pics restored;
  load_state_bytes(restored.pic, bytes);
  EXPECT_EQ(save_state_bytes(restored.pic), bytes);
  const auto run = [](Pics& q) {
    std::vector<uint32_t> seen{q.pic.output(), q.pic.irr(true), q.pic.isr(false)};
    for (uint8_t b : {0x28, 0x02, 0x01, 0xf7}) q.outb(b, 0xa1);
    q.pic.set_irq(11, true);
    seen.push_back(q.pic.acknowledge());
    seen.push_back(q.pic.acknowledge());
    seen.push_back(q.inb(0x4d1));
    return seen;
  };
  const std::vector<uint32_t> seen = run(p);
  EXPECT_EQ(run(restored), seen);
}

}  // namespace
}  // namespace topolab
