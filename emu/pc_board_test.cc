// SPDX-License-Identifier: GPL-2.0-or-later
// The board on its own: no machine, no vCPU, no Unicorn. A recording
// BoardEvents stands in for the machine; the guest's accesses are made
// through the buses, as an engine would make them.
#include "emu/pc_board.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.h"
#include "base/memory_map.h"

namespace topolab {
namespace {

class RecordingEvents final : public BoardEvents {
 public:
  void send_device_interrupts(const IoApicMessages& messages) override {
    interrupts.insert(interrupts.end(), messages.begin(), messages.end());
  }
  void request_shutdown(std::string how) override { shutdowns.push_back(std::move(how)); }
  void guest_exit_requested() override { ++guest_exits; }
  uint64_t device_now_ns() override {
    ++time_reads;
    return now_ns;
  }
  void charge_io_exit() override { ++io_exits; }
  void measure_mark(MeasurePort::Mark mark) override { marks.push_back(mark); }

  IoApicMessages interrupts;
  std::vector<std::string> shutdowns;
  unsigned guest_exits = 0;
  uint64_t now_ns = 0;
  unsigned time_reads = 0;
  unsigned io_exits = 0;
  std::vector<MeasurePort::Mark> marks;
};

struct BoardRig {
  explicit BoardRig(PlatformDevices devices = {}, uint64_t ram_mib = 16)
      : board(PcBoardConfig{.topology = topology, .ram_mib = ram_mib, .devices = devices},
              [this](uint8_t b) { serial.push_back(static_cast<char>(b)); }, events) {}

  std::string port_owner(uint16_t port) {
    const PortDevice* device = board.ports().device_at(port);
    return device ? device->name() : "";
  }
  // The MMIO window the engines map at `base`, or nullptr.
  MmioHandler* window_at(uint64_t base) const {
    for (const PlatformMmio& window : board.mmio_windows())
      if (window.base == base) return window.handler;
    return nullptr;
  }

  Topology topology = Topology::parse("4");
  RecordingEvents events;
  std::string serial;
  PcBoard board;
};

const PlatformDevices kEveryOptionalDevice{PlatformDevice::IsaDebugExit, PlatformDevice::PcTestdev,
                                           PlatformDevice::PciTestdev, PlatformDevice::Pit};

TEST(PcBoard, EveryBoardHasTheDevicesNothingTurnsOff) {
  BoardRig rig;
  EXPECT_EQ(rig.board.attached(),
            (std::vector<std::string_view>{"uart16550", "fw_cfg", "pic", "measure-window", "ioapic", "i8042", "acpi-pm",
                                           "bochs-shutdown", "cmos-rtc", "pci-host"}));
  EXPECT_EQ(rig.port_owner(Uart16550::kCom1Base), "uart16550");
  EXPECT_EQ(rig.port_owner(Uart16550::kCom1Base + Uart16550::kPortCount - 1), "uart16550");
  EXPECT_EQ(rig.port_owner(FwCfg::kBase), "fw_cfg");
  EXPECT_EQ(rig.port_owner(PicStub::kMasterBase), "pic-master");
  EXPECT_EQ(rig.port_owner(PicStub::kSlaveBase + 1), "pic-slave");
  EXPECT_EQ(rig.port_owner(Elcr::kBase), "elcr");
  EXPECT_EQ(rig.port_owner(MeasurePort::kBase), "measure-window");
  EXPECT_EQ(rig.port_owner(I8042::kDataPort), "i8042-data");
  EXPECT_EQ(rig.port_owner(I8042::kCommandPort), "i8042-command");
  EXPECT_EQ(rig.port_owner(AcpiPm::kBase + AcpiPm::kPmTmr), "acpi-pm");
  EXPECT_EQ(rig.port_owner(BochsShutdown::kBase), "bochs-shutdown");
  EXPECT_EQ(rig.port_owner(CmosRtc::kBase + 1), "cmos-rtc");
  EXPECT_EQ(rig.port_owner(PciHost::kBase), "pci-host");
  // The I/O APIC's page is the one MMIO window.
  ASSERT_EQ(rig.board.mmio_windows().size(), 1u);
  EXPECT_EQ(rig.board.mmio_windows()[0].base, IoApic::kBase);
  EXPECT_EQ(rig.board.mmio_windows()[0].size, IoApic::kMmioSize);
  EXPECT_EQ(rig.board.ram().size(), 16u << 20);
}

TEST(PcBoard, OptionalDevicesAreThereOnlyWhenConfigured) {
  BoardRig bare;
  EXPECT_EQ(bare.port_owner(DebugExit::kBase), "");
  EXPECT_EQ(bare.port_owner(Pit8254::kBase), "");
  EXPECT_EQ(bare.port_owner(Pit8254::kPortB), "");
  EXPECT_EQ(bare.port_owner(PcTestdev::kBase), "");
  EXPECT_EQ(bare.port_owner(PcTestdev::kIrqLineBase), "");
  EXPECT_EQ(bare.port_owner(memory_map::kPciTestdevIoBar), "");
  EXPECT_EQ(bare.window_at(PcTestdev::kIomemBase), nullptr);
  EXPECT_EQ(bare.window_at(memory_map::kPciTestdevMemBar), nullptr);

  BoardRig full(kEveryOptionalDevice);
  EXPECT_EQ(full.port_owner(DebugExit::kBase), "isa-debug-exit");
  EXPECT_EQ(full.port_owner(Pit8254::kBase), "pit-8254");
  EXPECT_EQ(full.port_owner(Pit8254::kPortB), "port-b (pit)");
  EXPECT_EQ(full.port_owner(PcTestdev::kBase), "pc-testdev");
  EXPECT_EQ(full.port_owner(PcTestdev::kIrqLineBase + PcTestdev::kIrqLines - 1), "pc-testdev-irq-line");
  EXPECT_EQ(full.port_owner(memory_map::kPciTestdevIoBar), "pci-testdev");
  // MMIO windows by base address, as the engines map them.
  ASSERT_EQ(full.board.mmio_windows().size(), 3u);
  EXPECT_EQ(full.board.mmio_windows()[0].base, memory_map::kPciTestdevMemBar);
  EXPECT_EQ(full.board.mmio_windows()[0].size, PciTestdev::kMemBarSize);
  EXPECT_EQ(full.board.mmio_windows()[1].base, IoApic::kBase);
  EXPECT_EQ(full.board.mmio_windows()[2].base, PcTestdev::kIomemBase);
  EXPECT_EQ(full.board.mmio_windows()[2].size, PcTestdev::kIomemSize);
}

// The board's table and base/platform_devices.h name the same optional
// devices: each one asked for adds exactly its own row.
TEST(PcBoard, EachOptionalDeviceAddsItsOwnRow) {
  const size_t fixed = BoardRig().board.attached().size();
  for (const PlatformDeviceInfo& info : kPlatformDevices) {
    BoardRig rig(PlatformDevices{info.device});
    const std::vector<std::string_view>& attached = rig.board.attached();
    EXPECT_EQ(attached.size(), fixed + 1) << info.qemu_name;
    EXPECT_NE(std::find(attached.begin(), attached.end(), info.qemu_name), attached.end()) << info.qemu_name;
  }
}

TEST(PcBoard, PciTestdevSitsInItsSlot) {
  auto vendor_and_device = [](BoardRig& rig, unsigned slot) {
    rig.board.ports().write(PciHost::kBase, 4, 0x80000000u | (slot << 11));
    return rig.board.ports().read(PciHost::kBase + 4, 4);
  };
  BoardRig bare, full(kEveryOptionalDevice);
  EXPECT_EQ(vendor_and_device(bare, 0), 0x12378086u);  // the i440FX host bridge
  EXPECT_EQ(vendor_and_device(full, 0), 0x12378086u);
  EXPECT_EQ(vendor_and_device(full, memory_map::kPciTestdevSlot), 0x00051b36u);
  EXPECT_NE(vendor_and_device(bare, memory_map::kPciTestdevSlot), 0x00051b36u);
}

TEST(PcBoard, ItsBusesRejectADeviceOverAnother) {
  BoardRig rig(kEveryOptionalDevice);
  Elcr intruder;
  EXPECT_THROW(rig.board.ports().attach(Uart16550::kCom1Base + 4, 1, intruder), std::invalid_argument);
  EXPECT_THROW(rig.board.ports().attach(Pit8254::kBase, 1, intruder), std::invalid_argument);
  EXPECT_THROW(rig.board.ports().attach(PcTestdev::kIrqLineBase + 3, 1, intruder), std::invalid_argument);
  EXPECT_TRUE(rig.board.mmio().overlaps(IoApic::kBase + 0x800, 0x1000));
  EXPECT_TRUE(rig.board.mmio().overlaps(PcTestdev::kIomemBase, 0x1000));
  EXPECT_NO_THROW(rig.board.ports().attach(0x80, 1, intruder));  // POST codes: nobody's
}

TEST(PcBoard, RefusesRamItCannotHave) {
  EXPECT_THROW(BoardRig({}, 1), ConfigError);
  EXPECT_THROW(BoardRig({}, memory_map::kMaxRamMib + 1), ConfigError);
}

// An I/O APIC register write whose interrupt leaves at once: a level pin
// already asserted, then its entry unmasked. Every access through the
// window is an I/O exit; the EOI re-sends while the pin stays asserted.
TEST(PcBoard, AnIoApicWritesInterruptReachesTheEvents) {
  BoardRig rig(PlatformDevices{PlatformDevice::PcTestdev});
  MmioHandler* page = rig.window_at(IoApic::kBase);
  ASSERT_NE(page, nullptr);
  constexpr unsigned kPin = 5;
  constexpr uint8_t kVector = 0x41;
  const uint32_t entry_low = ioapic::REG_REDIRECTION_BASE + 2 * kPin;
  auto write_register = [&](uint32_t index, uint32_t value) {
    page->write(ioapic::MMIO_IOREGSEL, 4, index);
    page->write(ioapic::MMIO_IOWIN, 4, value);
  };
  write_register(entry_low + 1, 0);  // destination APIC 0
  write_register(entry_low, kVector | ioapic::RTE_TRIGGER_LEVEL | ioapic::RTE_MASKED);
  rig.board.ports().write(PcTestdev::kIrqLineBase + kPin, 1, 1);  // pc-testdev raises ISA IRQ 5
  EXPECT_TRUE(rig.events.interrupts.empty());                      // masked
  write_register(entry_low, kVector | ioapic::RTE_TRIGGER_LEVEL);
  ASSERT_EQ(rig.events.interrupts.size(), 1u);
  EXPECT_EQ(rig.events.interrupts[0].vector, kVector);
  EXPECT_EQ(rig.events.interrupts[0].trigger_mode, ApicTriggerMode::Level);
  EXPECT_EQ(rig.events.io_exits, 6u);

  rig.board.broadcast_eoi(kVector);
  ASSERT_EQ(rig.events.interrupts.size(), 2u);
  EXPECT_EQ(rig.events.interrupts[1].vector, kVector);
}

TEST(PcBoard, DevicesReachTheMachineThroughItsEvents) {
  BoardRig rig(kEveryOptionalDevice);
  PortBus& ports = rig.board.ports();
  ports.write(Uart16550::kCom1Base, 1, 'k');
  EXPECT_EQ(rig.serial, "k");

  ports.write(MeasurePort::kBase, 4, static_cast<uint32_t>(MeasurePort::Mark::Begin));
  EXPECT_EQ(rig.events.marks, std::vector<MeasurePort::Mark>{MeasurePort::Mark::Begin});

  rig.events.now_ns = 1'000'000;
  (void)ports.read(AcpiPm::kBase + AcpiPm::kPmTmr, 4);
  EXPECT_GT(rig.events.time_reads, 0u);

  ports.write(I8042::kCommandPort, 1, 0xfe);
  ports.write(PciHost::kBase + 1, 1, 0x06);
  ASSERT_EQ(rig.events.shutdowns.size(), 2u);
  EXPECT_NE(rig.events.shutdowns[0].find("keyboard controller"), std::string::npos);
  EXPECT_NE(rig.events.shutdowns[1].find("reset control register"), std::string::npos);

  EXPECT_EQ(rig.board.guest_exit_value(), std::nullopt);
  ports.write(DebugExit::kBase, 1, 3);
  EXPECT_EQ(rig.events.guest_exits, 1u);
  EXPECT_EQ(rig.board.guest_exit_value(), 3u);
}

}  // namespace
}  // namespace topolab
