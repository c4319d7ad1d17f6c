// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/pci.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

using namespace pci;

uint32_t address(unsigned device, unsigned reg) { return CONFIG_ENABLE | (device << 11) | reg; }

struct Bus {
  int resets = 0;
  PciHost host{[this] { ++resets; }};
  PciFunction bridge = i440fx_host_bridge();
  PciTestdev testdev{0xfebff000, 0xc000};
  Bus() {
    host.plug(0, bridge);
    host.plug(3, testdev.function());
  }
  uint32_t config(unsigned device, unsigned reg, unsigned size = 4) {
    host.write(0, 4, address(device, reg & ~3u));
    return host.read(4 + (reg & 3), size);
  }
  void set_config(unsigned device, unsigned reg, uint32_t value, unsigned size = 4) {
    host.write(0, 4, address(device, reg & ~3u));
    host.write(4 + (reg & 3), size, value);
  }
};

TEST(PciHost, HostBridgeIsI440fxAndAbsentDevicesReadAllOnes) {
  Bus b;
  EXPECT_EQ(b.config(0, REG_VENDOR), 0x12378086u);
  EXPECT_EQ(b.config(0, REG_REVISION), 0x06000002u);  // class 060000, revision 2
  EXPECT_EQ(b.config(0, REG_SUBSYSTEM_VENDOR), 0x11001af4u);
  EXPECT_EQ(b.config(0, REG_DEVICE, 2), 0x1237u);
  EXPECT_EQ(b.config(1, REG_VENDOR), 0xffffffffu);
  EXPECT_EQ(b.config(1, REG_VENDOR, 2), 0xffffu);
  b.host.write(0, 4, address(0, 0) | (1u << 8));  // function 1
  EXPECT_EQ(b.host.read(4, 4), 0xffffffffu);
  b.host.write(0, 4, address(0, 0) | (1u << 16));  // bus 1
  EXPECT_EQ(b.host.read(4, 4), 0xffffffffu);
  b.host.write(0, 4, 0x0);  // enable bit clear
  EXPECT_EQ(b.host.read(4, 4), 0xffffffffu);
}

TEST(PciHost, AddressBits1To0SelectTheByteLaneAsInQemu) {
  Bus b;
  // lib/x86/asm/pci.h: outl(0x80000000 | (dev << 8) | 2, 0xcf8); inw(0xcfc).
  b.host.write(0, 4, address(0, REG_DEVICE));
  EXPECT_EQ(b.host.read(4, 2), 0x1237u);
  b.host.write(0, 4, address(0, REG_VENDOR));
  EXPECT_EQ(b.host.read(6, 2), 0x1237u);
}

TEST(PciHost, ConfigAddressTakesOnlyDwordsAndReadsBack) {
  Bus b;
  b.host.write(0, 4, 0x80001234);
  EXPECT_EQ(b.host.read(0, 4), 0x80001234u);
  b.host.write(0, 2, 0);
  EXPECT_EQ(b.host.read(0, 4), 0x80001234u);
  EXPECT_EQ(b.host.read(0, 1), 0xffu);
  EXPECT_EQ(b.host.read(2, 2), 0xffffu);
}

TEST(PciHost, OnlyWritableBitsChange) {
  Bus b;
  b.set_config(0, REG_VENDOR, 0);
  EXPECT_EQ(b.config(0, REG_VENDOR), 0x12378086u);
  b.set_config(0, REG_COMMAND, 0xffffffff);
  EXPECT_EQ(b.config(0, REG_COMMAND), 0x0547u);  // status stays 0
  b.set_config(0, REG_INTERRUPT_LINE, 0x0b, 1);
  EXPECT_EQ(b.config(0, REG_INTERRUPT_LINE, 1), 0x0bu);
}

TEST(PciHost, ResetControlRegisterResetsOnRstCpu) {
  Bus b;
  b.host.write(1, 1, 0x00);
  b.host.write(1, 1, 0x02);
  EXPECT_EQ(b.resets, 0);
  EXPECT_EQ(b.host.read(1, 1), 0x02u);
  b.host.write(1, 1, 0x04);  // kvm-unit-tests init.c: outb(4, 0xcf9)
  b.host.write(1, 1, 0x0e);
  EXPECT_EQ(b.resets, 2);
  b.host.write(0, 4, 0x80000000);  // a dword at 0xCF8 is the address, never a reset
  EXPECT_EQ(b.resets, 2);
}

TEST(PciTestdev, BarsAreFirmwareAssignedAndSizable) {
  Bus b;
  EXPECT_EQ(b.config(3, REG_VENDOR), 0x00051b36u);
  EXPECT_EQ(b.config(3, REG_REVISION), 0xff000000u);  // PCI_CLASS_OTHERS
  EXPECT_EQ(b.config(3, REG_COMMAND, 2), uint32_t{COMMAND_IO | COMMAND_MEMORY});
  EXPECT_EQ(b.config(3, REG_BAR0), 0xfebff000u);
  EXPECT_EQ(b.config(3, REG_BAR0 + 4), 0xc001u);
  EXPECT_EQ(b.config(3, REG_BAR0 + 8), 0u);
  // lib/pci.c's pci_bar_size: all ones, read the mask, put it back.
  b.set_config(3, REG_BAR0, 0xffffffff);
  EXPECT_EQ(b.config(3, REG_BAR0), 0xfffff000u);
  EXPECT_EQ(b.testdev.mem_read(0, 1), 0xffu);  // moved away: no decode
  b.set_config(3, REG_BAR0, 0xfebff000);
  b.set_config(3, REG_BAR0 + 4, 0xffffffff);
  EXPECT_EQ(b.config(3, REG_BAR0 + 4), 0xffffff01u);
  b.set_config(3, REG_BAR0 + 4, 0xc000);
  EXPECT_EQ(b.testdev.function().bar_address(1), 0xc000u);
  EXPECT_EQ(b.config(3, REG_INTERRUPT_PIN, 1), 0u);  // no interrupt pin
}

// lib/pci-testdev.c's pci_testdev_one, on each BAR.
TEST(PciTestdev, EachTestCountsTheWritesItMatches) {
  PciTestdev dev(0xfebff000, 0xc000);
  EXPECT_EQ(dev.mem_read(0, 4), 0u);  // no test selected
  for (uint8_t n = 0; n < 3; ++n) {
    dev.mem_write(0, 1, n);
    EXPECT_EQ(dev.mem_read(12, 4), 0u);  // count
    EXPECT_EQ(dev.mem_read(1, 1), 1u);   // width
    const uint32_t data = static_cast<uint32_t>(dev.mem_read(8, 4)), offset = static_cast<uint32_t>(dev.mem_read(4, 4));
    EXPECT_EQ(offset, 2048u + n);
    EXPECT_EQ(data, n == 1 ? 0xceu : 0xfau);
    for (int i = 0; i < 16; ++i) dev.mem_write(offset, 1, data);
    dev.mem_write(offset, 1, 0x12);  // counts only for the wildcard test
    EXPECT_EQ(dev.mem_read(12, 4), n == 1 ? 17u : 16u);
  }
  dev.write(0, 1, 0);
  EXPECT_EQ(dev.read(0, 1), 3u);  // portio-no-eventfd is test 3
  EXPECT_EQ(dev.read(4, 4), 128u + 3);
  std::string name;
  for (unsigned i = 16; char c = static_cast<char>(dev.read(i, 1)); ++i) name += c;
  EXPECT_EQ(name, "portio-no-eventfd");
  dev.write(0, 1, 3);  // no such test: reads 0 and the loop ends
  EXPECT_EQ(dev.read(1, 1), 0u);
}

TEST(PciTestdev, DecodingOffReadsAllOnesAndDropsWrites) {
  PciTestdev dev(0xfebff000, 0xc000);
  dev.function().write(REG_COMMAND, 2, 0);
  dev.mem_write(0, 1, 0);
  EXPECT_EQ(dev.mem_read(0, 4), 0xffffffffu);
  EXPECT_EQ(dev.read(0, 2), 0xffffu);
  dev.function().write(REG_COMMAND, 2, COMMAND_MEMORY);
  EXPECT_EQ(dev.mem_read(0, 4), 0u);  // the write above was dropped
}

TEST(PciFunctionSnapshot, RoundTripsWhatTheGuestProgrammed) {
  PciFunction function = i440fx_host_bridge();
  function.write(REG_COMMAND, 2, COMMAND_MEMORY | COMMAND_BUS_MASTER);
  function.write(REG_INTERRUPT_LINE, 1, 0x0b);
  const std::string bytes = save_state_bytes(function);
  PciFunction restored = i440fx_host_bridge();
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  for (unsigned offset = 0; offset < 256; offset += 4) EXPECT_EQ(restored.read(offset, 4), function.read(offset, 4));
  // What stays read-only stays so.
  function.write(REG_VENDOR, 4, 0);
  restored.write(REG_VENDOR, 4, 0);
  EXPECT_EQ(restored.read(REG_VENDOR, 4), 0x12378086u);
  EXPECT_EQ(restored.command(), function.command());
}

TEST(PciHostSnapshot, RoundTripsTheSelectedAddressAndResetControl) {
  Bus b;
  b.host.write(1, 1, PciHost::RCR_SYS_RST);
  b.host.write(0, 4, address(3, REG_BAR0 + 4));  // the testdev's I/O BAR selected
  const std::string bytes = save_state_bytes(b.host);
  Bus restored;
  load_state_bytes(restored.host, bytes);
  EXPECT_EQ(save_state_bytes(restored.host), bytes);

  // The guest's next access goes to the register it selected before.
  const auto run = [](Bus& bus) {
    std::vector<uint32_t> seen{bus.host.read(0, 4), bus.host.read(1, 1), bus.host.read(4, 4)};
    bus.host.write(4, 4, 0xffffffff);
    seen.push_back(bus.host.read(4, 4));
    bus.host.write(1, 1, PciHost::RCR_SYS_RST | PciHost::RCR_RST_CPU);
    seen.push_back(static_cast<uint32_t>(bus.resets));
    return seen;
  };
  const std::vector<uint32_t> seen = run(b);
  EXPECT_EQ(seen[2], 0xc001u);
  EXPECT_EQ(run(restored), seen);
}

TEST(PciTestdevSnapshot, RoundTripsTheSelectedTestItsCountAndBars) {
  PciTestdev dev(0xfebff000, 0xc000);
  dev.mem_write(0, 1, 2);  // datamatch test of the memory BAR
  const uint64_t offset = dev.mem_read(4, 4), data = dev.mem_read(8, 4);
  for (int i = 0; i < 5; ++i) dev.mem_write(offset, 1, data);
  dev.function().write(REG_BAR0 + 4, 4, 0xd000);  // the I/O BAR moved
  const std::string bytes = save_state_bytes(dev);
  PciTestdev restored(0xfebff000, 0xc000);
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);

  const auto run = [&](PciTestdev& d) {
    std::vector<uint64_t> seen{d.mem_read(12, 4), d.mem_read(0, 4), d.function().bar_address(1)};
    d.mem_write(offset, 1, data);
    seen.push_back(d.mem_read(12, 4));
    d.write(0, 1, 0);  // the I/O BAR's first test
    seen.push_back(d.read(4, 4));
    return seen;
  };
  const std::vector<uint64_t> seen = run(dev);
  EXPECT_EQ(seen[0], 5u);
  EXPECT_EQ(run(restored), seen);
}

}  // namespace
}  // namespace topolab
