// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pic_stub.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"
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

// The two PICs and the ELCR on one bus, as the machine attaches them.
struct Pics {
  Pics() {
    bus.attach(PicStub::kMasterBase, PicStub::kPortCount, master);
    bus.attach(PicStub::kSlaveBase, PicStub::kPortCount, slave);
    bus.attach(Elcr::kBase, Elcr::kPortCount, elcr);
  }
  uint8_t inb(uint16_t port) { return static_cast<uint8_t>(bus.read(port, 1)); }
  void outb(uint8_t value, uint16_t port) { bus.write(port, 1, value); }  // Linux's argument order

  PortBus bus;
  PicStub master{PicStub::Role::kMaster}, slave{PicStub::Role::kSlave};
  Elcr elcr;
};

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

TEST(PicStub, Linux61ProbeReadsBackTheMaskItWrote) {
  // probe_8259A at power-on state (no firmware ran): mask the slave, mask
  // all but the cascade on the master, read it back. 0xFF would mean no PIC.
  Pics p;
  p.outb(0xff, 0xa1);
  p.outb(static_cast<uint8_t>(~(1u << 2)), 0x21);
  EXPECT_EQ(p.inb(0x21), 0xfbu);
}

TEST(PicStub, Linux61InitialisesBothPicsAndReadsNothingPending) {
  Pics p;
  p.outb(0xff, 0xa1);  // the probe first
  p.outb(0xfb, 0x21);
  ASSERT_EQ(p.inb(0x21), 0xfbu);
  linux_init_8259a(p, false, 0xff, 0xff);  // init_ISA_irqs: legacy_pic->init(0)
  EXPECT_EQ(p.master.vector_base(), 0x30u);
  EXPECT_EQ(p.slave.vector_base(), 0x38u);
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

TEST(PicStub, Linux61CheckTimerReinitialisesWithAutoEoi) {
  // check_timer: legacy_pic->mask(0), LVT0 to ExtINT masked, init(1); the
  // timer then goes through I/O APIC pin 2 and the PIC stays masked.
  Pics p;
  linux_init_8259a(p, false, 0xfb, 0xff);
  p.outb(0xfb | 0x01, 0x21);
  linux_init_8259a(p, true, 0xfb | 0x01, 0xff);
  EXPECT_EQ(p.inb(0x21), 0xfbu | 0x01);
  EXPECT_EQ(p.inb(0xa1), 0xffu);
  EXPECT_EQ(p.master.vector_base(), 0x30u);
  // i8259A_shutdown / mask_8259A at the end.
  p.outb(0xff, 0x21);
  p.outb(0xff, 0xa1);
  EXPECT_EQ(p.master.mask(), 0xffu);
  EXPECT_EQ(p.slave.mask(), 0xffu);
}

TEST(Elcr, ReadsBackWhatCanBeLevelTriggeredAsQemu) {
  Pics p;
  EXPECT_EQ(p.inb(0x4d0), 0u);  // all edge at reset
  EXPECT_EQ(p.inb(0x4d1), 0u);
  p.outb(0xff, 0x4d0);
  p.outb(0xff, 0x4d1);
  EXPECT_EQ(p.inb(0x4d0), Elcr::kMasterMask);  // IRQ 0, 1, 2 always edge
  EXPECT_EQ(p.inb(0x4d1), Elcr::kSlaveMask);   // IRQ 8, 13 always edge
  // Linux's save_ELCR / restore_ELCR (suspend and resume).
  const uint8_t trigger0 = p.inb(0x4d0) & 0xf8, trigger1 = p.inb(0x4d1) & 0xde;
  p.outb(0, 0x4d0);
  p.outb(0, 0x4d1);
  p.outb(trigger0, 0x4d0);
  p.outb(trigger1, 0x4d1);
  EXPECT_EQ(p.elcr.level_triggered(), 0xdef8u);
  // elcr_set_level_irq(9) and (11) for PCI in PIC mode, then a word read.
  p.bus.write(0x4d0, 2, 0);
  p.outb(p.inb(0x4d1) | (1u << (9 - 8)) | (1u << (11 - 8)), 0x4d1);
  EXPECT_EQ(p.bus.read(0x4d0, 2), 0x0a00u);
  EXPECT_EQ(p.elcr.level_triggered(), (1u << 9) | (1u << 11));
}

TEST(PicStubSnapshot, RoundTripsAnInitialisationHalfDone) {
  PicStub pic(PicStub::Role::kSlave);
  pic.write(0, 1, 0x11);  // ICW1: cascade, ICW4 follows
  for (uint8_t word : {0x28, 0x02, 0x01}) pic.write(1, 1, word);  // ICW2-ICW4
  pic.write(0, 1, 0x13);  // initialised again: single (no ICW3), ICW4 follows; ICW2 next
  const std::string bytes = save_state_bytes(pic);
  PicStub restored(PicStub::Role::kSlave);
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  // The rest of the sequence: ICW2, ICW4, then masks.
  const auto run = [](PicStub& p) {
    std::vector<uint32_t> seen{p.vector_base(), p.mask()};
    for (uint8_t word : {0x70, 0x01, 0xfb, 0xfd}) {
      p.write(1, 1, word);
      seen.push_back(p.read(1, 1));
    }
    seen.push_back(p.vector_base());
    return seen;
  };
  const std::vector<uint32_t> seen = run(pic);
  EXPECT_EQ(seen, (std::vector<uint32_t>{0x28, 0, 0, 0, 0xfb, 0xfd, 0x70}));
  EXPECT_EQ(run(restored), seen);
}

TEST(ElcrSnapshot, RoundTripsTheLevelTriggeredIrqs) {
  Elcr elcr;
  elcr.write(0, 1, 0x20);  // IRQ 5
  elcr.write(1, 1, 0x0e);  // IRQs 9-11
  const std::string bytes = save_state_bytes(elcr);
  Elcr restored;
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  EXPECT_EQ(restored.level_triggered(), 0x0e20u);
  EXPECT_EQ(restored.read(0, 2), elcr.read(0, 2));
  elcr.write(1, 1, 0xff);
  restored.write(1, 1, 0xff);
  EXPECT_EQ(restored.level_triggered(), elcr.level_triggered());
}

}  // namespace
}  // namespace topolab
