// SPDX-License-Identifier: GPL-2.0-or-later
// PCI configuration mechanism #1 (devices/pci.h) as QEMU's pc has it: the
// i440FX at 00:00.0 and pci-testdev at 00:02.0, driven by a program of
// CONFIG_ADDRESS accesses, CONFIG_DATA reads and writes of every width and
// byte lane, and reset-control (0xCF9) accesses.
// Invariants (PCI Local Bus 3.0 3.2.2.3.2 and the header's promises):
// - CONFIG_ADDRESS reads back a 32-bit write; narrower accesses to 0xCF8-
//   0xCFB (but 0xCF9's byte) read all ones and change nothing;
// - 0xCF9 reads SYS_RST as last written; a write with RST_CPU resets once
//   and keeps the register;
// - with the enable bit clear, another bus or function, or an empty slot,
//   CONFIG_DATA reads all ones of the width and writes change nothing;
// - a present function reads its header, and a write changes only the
//   bits the spec and the header call writable: command (I/O, memory, bus
//   master, parity, SERR, INTx disable), latency timer, interrupt line and
//   the BARs' address bits above their size; vendor, device, class,
//   revision, subsystem IDs, status (0) and the BAR type bits never change;
// - pci-testdev decodes its I/O and memory BARs exactly while the command
//   register enables the space and the BAR holds the firmware's address.
#include <array>
#include <cstddef>
#include <cstdint>

#include "base/memory_map.h"
#include "devices/pci.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_input.h"

using namespace topolab;

namespace {

// A function's header as the spec says it must behave: its bytes, and the
// bits a write may change.
struct Shadow {
  std::array<uint8_t, 256> bytes{}, writable{};

  explicit Shadow(const PciFunction& f) {
    for (unsigned i = 0; i < 256; ++i) bytes[i] = static_cast<uint8_t>(f.read(i, 1));
    const uint16_t command = pci::COMMAND_IO | pci::COMMAND_MEMORY | pci::COMMAND_BUS_MASTER | pci::COMMAND_PARITY |
                             pci::COMMAND_SERR | pci::COMMAND_INTX_DISABLE;
    writable[pci::REG_COMMAND] = command & 0xff;
    writable[pci::REG_COMMAND + 1] = command >> 8;
    writable[pci::REG_LATENCY] = 0xff;
    writable[pci::REG_INTERRUPT_LINE] = 0xff;
  }
  void bar(unsigned n, bool io, uint32_t size) {
    const uint32_t mask = ~(size - 1) & ~(io ? 0x3u : 0xfu);
    for (unsigned i = 0; i < 4; ++i) writable[pci::REG_BAR0 + 4 * n + i] = static_cast<uint8_t>(mask >> (8 * i));
  }
  void write(unsigned offset, unsigned size, uint32_t value) {
    for (unsigned i = 0; i < size && offset + i < 256; ++i) {
      const uint8_t m = writable[offset + i];
      bytes[offset + i] = static_cast<uint8_t>((bytes[offset + i] & ~m) | ((value >> (8 * i)) & m));
    }
  }
  uint32_t read(unsigned offset, unsigned size) const {
    uint32_t v = 0;
    for (unsigned i = 0; i < size; ++i) v |= uint32_t{offset + i < 256 ? bytes[offset + i] : uint8_t{0xff}} << (8 * i);
    return v;
  }
};

void check_same(const PciFunction& f, const Shadow& s, const char* name) {
  for (unsigned i = 0; i < 256; i += 4)
    FUZZ_CHECK(f.read(i, 4) == s.read(i, 4), "{} config {:#x}: {:#010x}, expected {:#010x}", name, i, f.read(i, 4),
               s.read(i, 4));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  unsigned resets = 0;
  PciHost host([&resets] { ++resets; });
  PciFunction bridge = i440fx_host_bridge();
  PciTestdev testdev(static_cast<uint32_t>(memory_map::kPciTestdevMemBar), memory_map::kPciTestdevIoBar);
  host.plug(0, bridge);
  host.plug(memory_map::kPciTestdevSlot, testdev.function());
  Shadow bridge_shadow(bridge), testdev_shadow(testdev.function());
  testdev_shadow.bar(0, false, PciTestdev::kMemBarSize);
  testdev_shadow.bar(1, true, PciTestdev::kIoBarSize);
  uint32_t address = 0;
  uint8_t rcr = 0;

  for (int ops = 0; !in.done() && ops < 2048; ++ops) {
    const uint8_t op = in.take<uint8_t>();
    const unsigned sizes[] = {4, 1, 2, 4};
    const unsigned width = sizes[(op >> 3) & 3];
    const uint32_t ones = width == 4 ? 0xffffffffu : (1u << (8 * width)) - 1;
    switch (op & 7) {
      case 0: {  // CONFIG_ADDRESS, mostly an address that selects something
        uint32_t v = in.take<uint32_t>();
        if (op & 0x80) v = pci::CONFIG_ENABLE | (v & 0x0000f8ff & ~(0x1fu << 11)) | ((op & 0x40 ? 2u : 0u) << 11);
        host.write(0, 4, v);
        address = v;
        break;
      }
      case 1: {  // CONFIG_ADDRESS read, any width and offset
        const uint16_t offset = (op >> 5) & 3;
        const uint32_t got = host.read(offset, width);
        uint32_t want = ones;
        if (offset == 0 && width == 4) want = address;
        else if (offset == 1 && width == 1) want = rcr;
        FUZZ_CHECK(got == want, "read {:#x}+{}: {:#x}, expected {:#x}", PciHost::kBase + offset, width, got, want);
        break;
      }
      case 2: {  // a narrow write to 0xCF8-0xCFB: ignored, but for 0xCF9's byte
        const uint16_t offset = (op >> 5) & 3;
        if (offset == 1 && width == 1) break;
        if (width == 4 && offset == 0) break;
        host.write(offset, width, in.take<uint32_t>());
        break;
      }
      case 3: {  // reset control
        const uint8_t v = in.take<uint8_t>();
        const unsigned before = resets;
        host.write(1, 1, v);
        if (v & PciHost::RCR_RST_CPU) FUZZ_CHECK(resets == before + 1, "RST_CPU write {:#x}: {} resets", v, resets - before);
        else {
          FUZZ_CHECK(resets == before, "write {:#x} to 0xCF9 reset", v);
          rcr = v & PciHost::RCR_SYS_RST;
        }
        break;
      }
      case 4:
      case 5: {  // CONFIG_DATA
        const uint16_t lane = (op >> 5) & 3;
        const bool enabled = address & pci::CONFIG_ENABLE;
        const unsigned bus = (address >> 16) & 0xff, device = (address >> 11) & 0x1f, function = (address >> 8) & 7;
        Shadow* target = nullptr;
        if (enabled && bus == 0 && function == 0)
          target = device == 0 ? &bridge_shadow : device == memory_map::kPciTestdevSlot ? &testdev_shadow : nullptr;
        // QEMU's quirk the header keeps: the lane is ORed into the register number.
        const unsigned reg = (address | lane) & 0xff;
        if ((op & 7) == 4) {
          const uint32_t got = host.read(4 + lane, width);
          const uint32_t want = target ? target->read(reg, width) : ones;
          FUZZ_CHECK(got == want, "CONFIG_DATA read {:#x} lane {} width {}: {:#x}, expected {:#x}", address, lane, width,
                     got, want);
        } else {
          const uint32_t v = in.take<uint32_t>();
          host.write(4 + lane, width, v);
          if (target) target->write(reg, width, v);
        }
        break;
      }
      case 6: {  // pci-testdev decodes what its command register and BARs say
        const uint16_t command = static_cast<uint16_t>(testdev_shadow.read(pci::REG_COMMAND, 2));
        const bool io = (command & pci::COMMAND_IO) &&
                        (testdev_shadow.read(pci::REG_BAR0 + 4, 4) & ~0x3u) == memory_map::kPciTestdevIoBar;
        const bool mem = (command & pci::COMMAND_MEMORY) &&
                         (testdev_shadow.read(pci::REG_BAR0, 4) & ~0xfu) == memory_map::kPciTestdevMemBar;
        // No test is selected (nothing writes the BARs here): a decoded byte reads 0.
        FUZZ_CHECK(testdev.read(0, 1) == (io ? 0u : 0xffu), "pci-testdev I/O decode, command {:#x}", command);
        FUZZ_CHECK(testdev.mem_read(0, 1) == (mem ? 0u : 0xffu), "pci-testdev memory decode, command {:#x}", command);
        break;
      }
      case 7:
        break;
    }
    check_same(bridge, bridge_shadow, "i440fx");
    check_same(testdev.function(), testdev_shadow, "pci-testdev");
  }
  return 0;
}
