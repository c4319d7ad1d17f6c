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
#include "base/state_archive.h"

namespace topolab {
namespace {

class RecordingEvents final : public BoardEvents {
 public:
  void send_device_interrupts(const IoApicMessages& messages) override {
    interrupts.insert(interrupts.end(), messages.begin(), messages.end());
  }
  void send_timed_interrupts(const IoApicMessages& messages, uint64_t at_ns) override {
    for (const ApicMessage& message : messages) timed.emplace_back(at_ns, message);
  }
  void pic_output_changed(std::optional<uint64_t> at_ns) override { pic_changes.emplace_back(at_ns); }
  void device_timers_changed() override { ++timer_changes; }
  void request_shutdown(std::string how) override { shutdowns.push_back(std::move(how)); }
  void request_suspend() override { ++suspends; }
  void guest_exit_requested() override { ++guest_exits; }
  uint64_t device_now_ns() override {
    ++time_reads;
    return now_ns;
  }
  void charge_io_exit() override { ++io_exits; }
  void measure_mark(MeasurePort::Mark mark) override { marks.push_back(mark); }

  IoApicMessages interrupts;
  std::vector<std::pair<uint64_t, ApicMessage>> timed;
  std::vector<std::optional<uint64_t>> pic_changes;
  unsigned timer_changes = 0;
  std::vector<std::string> shutdowns;
  unsigned suspends = 0;
  unsigned guest_exits = 0;
  uint64_t now_ns = 0;
  unsigned time_reads = 0;
  unsigned io_exits = 0;
  std::vector<MeasurePort::Mark> marks;
};

struct BoardRig {
  explicit BoardRig(PlatformDevices devices = {}, uint64_t ram_mib = 16, unsigned phys_bits = 40)
      : board(PcBoardConfig{.topology = topology, .ram_mib = ram_mib, .devices = devices, .phys_bits = phys_bits},
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
  EXPECT_EQ(rig.port_owner(Pic8259::kMasterBase), "pic-master");
  EXPECT_EQ(rig.port_owner(Pic8259::kSlaveBase + 1), "pic-slave");
  EXPECT_EQ(rig.port_owner(Pic8259::kElcrBase), "elcr");
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
  EXPECT_EQ(rig.board.ram().regions(), (std::vector<RamRegion>{{0, 16u << 20}}));
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
  MeasurePort intruder([](MeasurePort::Mark) {});
  EXPECT_THROW(rig.board.ports().attach(Uart16550::kCom1Base + 4, 1, intruder), std::invalid_argument);
  EXPECT_THROW(rig.board.ports().attach(Pit8254::kBase, 1, intruder), std::invalid_argument);
  EXPECT_THROW(rig.board.ports().attach(PcTestdev::kIrqLineBase + 3, 1, intruder), std::invalid_argument);
  EXPECT_TRUE(rig.board.mmio().overlaps(IoApic::kBase + 0x800, 0x1000));
  EXPECT_TRUE(rig.board.mmio().overlaps(PcTestdev::kIomemBase, 0x1000));
  EXPECT_NO_THROW(rig.board.ports().attach(0x80, 1, intruder));  // POST codes: nobody's
}

TEST(PcBoard, RefusesRamItCannotHave) {
  EXPECT_THROW(BoardRig({}, 1), ConfigError);
  EXPECT_THROW(BoardRig({}, memory_map::kMaxRamMib + 1, 52), ConfigError);
  try {
    BoardRig({}, 64 * 1024, 36);
    ADD_FAILURE() << "64 GiB with phys-bits=36 was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("phys-bits too low (36)"), std::string::npos) << e.what();
  }
}

// What the firmware's view of RAM reads through the ports: the CMOS
// memory-size bytes (QEMU's pc_cmos_init) and fw_cfg's RAM size.
struct RamSizes {
  uint16_t above_16m_64k;  // CMOS 0x34/0x35
  uint32_t above_4g_64k;   // CMOS 0x5b-0x5d
  uint64_t fw_cfg_ram;
};

RamSizes ram_sizes(BoardRig& rig) {
  PortBus& ports = rig.board.ports();
  auto cmos = [&](uint8_t index) {
    ports.write(CmosRtc::kBase, 1, index);
    return ports.read(CmosRtc::kBase + 1, 1);
  };
  ports.write(FwCfg::kBase, 2, FwCfg::kRamSize);
  uint64_t fw_cfg_ram = 0;
  for (unsigned i = 0; i < 8; ++i) fw_cfg_ram |= uint64_t{ports.read(FwCfg::kBase + 1, 1)} << (8 * i);
  return {static_cast<uint16_t>(cmos(0x34) | cmos(0x35) << 8), cmos(0x5b) | cmos(0x5c) << 8 | cmos(0x5d) << 16,
          fw_cfg_ram};
}

TEST(PcBoard, RamAbove4GiBAsQemusPcLaysItOut) {
  struct Case {
    uint64_t mib;
    std::vector<RamRegion> regions;
    uint16_t above_16m_64k;
    uint32_t above_4g_64k;
  };
  constexpr uint64_t kMiB = 1 << 20, kGiB = uint64_t{1} << 30;
  const std::vector<Case> cases = {
      {512, {{0, 512 * kMiB}}, (512 - 16) * 16, 0},
      {3072, {{0, 3 * kGiB}}, (3072 - 16) * 16, 0},
      {3583, {{0, 3583 * kMiB}}, (3583 - 16) * 16, 0},  // just below 0xE0000000: all low
      {3584, {{0, 3 * kGiB}, {4 * kGiB, 512 * kMiB}}, (3072 - 16) * 16, 512 * 16},
      {4096, {{0, 3 * kGiB}, {4 * kGiB, 1 * kGiB}}, (3072 - 16) * 16, 1024 * 16},
      {16384, {{0, 3 * kGiB}, {4 * kGiB, 13 * kGiB}}, (3072 - 16) * 16, 13 * 1024 * 16},
      {65536, {{0, 3 * kGiB}, {4 * kGiB, 61 * kGiB}}, (3072 - 16) * 16, 61 * 1024 * 16},
  };
  for (const Case& c : cases) {
    BoardRig rig({}, c.mib);
    EXPECT_EQ(rig.board.ram().regions(), c.regions) << c.mib;
    const RamSizes sizes = ram_sizes(rig);
    EXPECT_EQ(sizes.above_16m_64k, c.above_16m_64k) << c.mib;
    EXPECT_EQ(sizes.above_4g_64k, c.above_4g_64k) << c.mib;
    EXPECT_EQ(sizes.fw_cfg_ram, c.mib << 20) << c.mib;
  }
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

// ISA IRQ 0 is pin 2 (the MADT's source override): channel 0's OUT drives
// it on virtual time, an interrupt per rising edge, and only while the
// entry is unmasked does the board ask to be run at the edges.
TEST(PcBoard, ThePitsChannel0RaisesPin2AtEachRisingEdge) {
  BoardRig rig(PlatformDevices{PlatformDevice::Pit});
  MmioHandler* page = rig.window_at(IoApic::kBase);
  ASSERT_NE(page, nullptr);
  const uint32_t entry_low = ioapic::REG_REDIRECTION_BASE + 2 * PcBoard::kPitGsi;
  auto write_register = [&](uint32_t index, uint32_t value) {
    page->write(ioapic::MMIO_IOREGSEL, 4, index);
    page->write(ioapic::MMIO_IOWIN, 4, value);
  };
  PortBus& ports = rig.board.ports();
  rig.events.now_ns = 1'000;
  ports.write(Pit8254::kBase + 3, 1, 0x34);  // channel 0, LSB then MSB, mode 2 (Linux's periodic tick)
  ports.write(Pit8254::kBase, 1, 100);
  ports.write(Pit8254::kBase, 1, 0);
  EXPECT_EQ(rig.board.next_timer_event(), std::nullopt) << "pin 2 is masked: its edges are lost";
  EXPECT_EQ(rig.events.timer_changes, 0u);

  write_register(entry_low + 1, 0);
  write_register(entry_low, 0x30);  // unmasked, edge, vector 0x30
  EXPECT_EQ(rig.events.timer_changes, 1u) << "unmasking moved the next event: the slice must end";
  const uint64_t load = Pit8254::ticks_at(1'000);
  EXPECT_EQ(rig.board.next_timer_event(), Pit8254::ns_at(load + 99)) << "OUT falls the tick before the reload";
  rig.board.run_timers(*rig.board.next_timer_event());
  EXPECT_TRUE(rig.events.timed.empty()) << "a falling edge sends nothing";
  const uint64_t rise = Pit8254::ns_at(load + 100);
  EXPECT_EQ(rig.board.next_timer_event(), rise);
  rig.board.run_timers(rise);
  ASSERT_EQ(rig.events.timed.size(), 1u);
  EXPECT_EQ(rig.events.timed[0].first, rise);
  EXPECT_EQ(rig.events.timed[0].second.vector, 0x30);
  EXPECT_EQ(rig.board.next_timer_event(), Pit8254::ns_at(load + 199)) << "and again every 100 ticks";

  rig.events.now_ns = rise + 10;
  write_register(entry_low, 0x30 | ioapic::RTE_MASKED);
  EXPECT_EQ(rig.board.next_timer_event(), std::nullopt);
  EXPECT_TRUE(rig.events.interrupts.empty()) << "nothing was sent from a guest access";
}

// SeaBIOS's 8259 setup (bases 0x08 and 0x70), with the masks given.
void seabios_pics(PortBus& ports, uint8_t master_mask, uint8_t slave_mask) {
  ports.write(Pic8259::kMasterBase, 1, 0x11);
  for (uint8_t b : {0x08, 0x04, 0x01}) ports.write(Pic8259::kMasterBase + 1, 1, b);
  ports.write(Pic8259::kSlaveBase, 1, 0x11);
  for (uint8_t b : {0x70, 0x02, 0x01}) ports.write(Pic8259::kSlaveBase + 1, 1, b);
  ports.write(Pic8259::kMasterBase + 1, 1, master_mask);
  ports.write(Pic8259::kSlaveBase + 1, 1, slave_mask);
}

// QEMU's gsi_handler: an ISA line reaches the 8259 and the I/O APIC pin of
// its number. pc-testdev's line ports take bytes only, as QEMU's do
// ("Invalid write ... size 4" for kvm-unit-tests' realmode).
TEST(PcBoard, IsaLinesReachThe8259AndTheIoApic) {
  BoardRig rig(PlatformDevices{PlatformDevice::PcTestdev});
  PortBus& ports = rig.board.ports();
  seabios_pics(ports, 0xfb, 0xf7);  // IRQ 2 and IRQ 11 open
  EXPECT_TRUE(rig.events.pic_changes.empty());
  ports.write(PcTestdev::kIrqLineBase + 11, 4, 1);
  EXPECT_FALSE(rig.board.pic().output()) << "a dword write is dropped";
  ports.write(PcTestdev::kIrqLineBase + 11, 1, 1);
  EXPECT_TRUE(rig.board.pic().output());
  ASSERT_EQ(rig.events.pic_changes.size(), 1u);
  EXPECT_EQ(rig.events.pic_changes[0], std::nullopt) << "from a guest access";
  EXPECT_TRUE(rig.board.ioapic().pin_asserted(11));
  EXPECT_EQ(rig.board.acknowledge_pic_interrupt(), 0x73);
  EXPECT_FALSE(rig.board.pic().output());
  EXPECT_EQ(rig.events.pic_changes.size(), 2u);
  // Lines past 15 reach the I/O APIC only.
  ports.write(PcTestdev::kIrqLineBase + 20, 1, 1);
  EXPECT_TRUE(rig.board.ioapic().pin_asserted(20));
  EXPECT_EQ(rig.events.pic_changes.size(), 2u);
}

// The PIT's IRQ 0 through the 8259 alone (I/O APIC pin 2 masked, as
// SeaBIOS leaves it): the board runs its edges while the 8259 has IRQ 0
// open, and an edge that came while nothing ran is latched at the next
// access, as the 8259 latches edges whether or not it masks them.
TEST(PcBoard, ThePitsIrq0ReachesThe8259WhilePin2IsMasked) {
  BoardRig rig(PlatformDevices{PlatformDevice::Pit});
  PortBus& ports = rig.board.ports();
  rig.events.now_ns = 1'000;
  seabios_pics(ports, 0xff, 0xff);
  ports.write(Pit8254::kBase + 3, 1, 0x34);  // channel 0, mode 2, 100 ticks
  ports.write(Pit8254::kBase, 1, 100);
  ports.write(Pit8254::kBase, 1, 0);
  EXPECT_EQ(rig.board.next_timer_event(), std::nullopt) << "IRQ 0 masked everywhere";
  EXPECT_EQ(rig.board.pic().irr(false) & 1, 1) << "the control word raised OUT: an edge";
  seabios_pics(ports, 0xff, 0xff);  // ICW1 forgets it
  EXPECT_EQ(rig.board.pic().irr(false) & 1, 0);
  const uint64_t load = Pit8254::ticks_at(1'000);
  rig.events.now_ns = Pit8254::ns_at(load + 250);  // two full periods went by
  const unsigned changes_before = rig.events.timer_changes;
  ports.write(Pic8259::kMasterBase + 1, 1, 0xfe);  // unmask IRQ 0: synced first
  EXPECT_EQ(rig.board.pic().irr(false) & 1, 1) << "the edges came while masked: IRR holds one";
  EXPECT_TRUE(rig.board.pic().output());
  EXPECT_EQ(rig.events.timer_changes, changes_before + 1) << "the PIT now runs on the timeline";
  EXPECT_EQ(rig.board.next_timer_event(), Pit8254::ns_at(load + 299));
  EXPECT_EQ(rig.board.acknowledge_pic_interrupt(), 0x08);
  ports.write(Pic8259::kMasterBase, 1, 0x20);  // EOI
  rig.board.run_timers(Pit8254::ns_at(load + 299));
  EXPECT_FALSE(rig.board.pic().output()) << "a falling edge";
  const size_t before = rig.events.pic_changes.size();
  rig.board.run_timers(Pit8254::ns_at(load + 300));
  EXPECT_TRUE(rig.board.pic().output());
  ASSERT_EQ(rig.events.pic_changes.size(), before + 1);
  EXPECT_EQ(rig.events.pic_changes.back(), Pit8254::ns_at(load + 300)) << "at the edge's own time";
  EXPECT_TRUE(rig.events.timed.empty()) << "pin 2 is masked: the I/O APIC sends nothing";
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

// What the machine sees of a board from now on: a guest's reads of every
// device, an EOI, the rest of a shutdown string, and later times.
std::vector<uint64_t> run_on(BoardRig& rig) {
  rig.events.interrupts.clear();
  rig.events.shutdowns.clear();
  PortBus& ports = rig.board.ports();
  MmioHandler& ioapic = *rig.window_at(IoApic::kBase);
  MmioHandler& iomem = *rig.window_at(PcTestdev::kIomemBase);
  std::vector<uint64_t> seen;
  for (uint64_t ns : {2'000'000ull, 3'000'000ull, 1'500'000'000ull}) {
    rig.events.now_ns = ns;
    for (uint16_t port : {0x3f9, 0x3fa, 0x3fb, 0x3fc, 0x3ff, 0x21, 0xa1, 0x4d0, 0x4d1, 0x40, 0x42, 0x61, 0x71, 0x511})
      seen.push_back(ports.read(port, 1));
    for (uint16_t offset : {AcpiPm::kPm1Sts, AcpiPm::kPm1En, AcpiPm::kPm1Cnt, AcpiPm::kPmTmr})
      seen.push_back(ports.read(AcpiPm::kBase + offset, 4));
    seen.push_back(ports.read(PciHost::kBase, 4));
    seen.push_back(ports.read(PciHost::kBase + 4, 4));
    seen.push_back(ports.read(memory_map::kPciTestdevIoBar, 4));
    seen.push_back(ports.read(PcTestdev::kBase, 4));
    seen.push_back(iomem.read(0x20, 8));
    seen.push_back(ioapic.read(ioapic::MMIO_IOREGSEL, 4));
    seen.push_back(ioapic.read(ioapic::MMIO_IOWIN, 4));
  }
  ports.write(PciHost::kBase, 4, 0x80000000u | pci::REG_INTERRUPT_LINE);
  seen.push_back(ports.read(PciHost::kBase + 4, 4));
  seen.push_back(ports.unclaimed_accesses());
  seen.push_back(rig.board.guest_exit_value().value_or(0));
  rig.board.broadcast_eoi(0x45);  // pin 5 is still asserted: sent again
  for (char c : std::string_view("down")) ports.write(BochsShutdown::kBase, 1, static_cast<uint8_t>(c));
  seen.push_back(rig.events.shutdowns.size());
  for (const ApicMessage& message : rig.events.interrupts) seen.push_back(message.vector);
  return seen;
}

TEST(PcBoardSnapshot, RoundTripsEveryDevicesState) {
  BoardRig rig(kEveryOptionalDevice);
  PortBus& ports = rig.board.ports();
  MmioHandler& ioapic = *rig.window_at(IoApic::kBase);
  auto write_ioapic = [&](uint32_t index, uint32_t value) {
    ioapic.write(ioapic::MMIO_IOREGSEL, 4, index);
    ioapic.write(ioapic::MMIO_IOWIN, 4, value);
  };
  rig.events.now_ns = 1'000'000;
  write_ioapic(ioapic::REG_REDIRECTION_BASE + 2 * Uart16550::kCom1Gsi, 0x34);
  write_ioapic(ioapic::REG_REDIRECTION_BASE + 2 * 5, 0x45 | ioapic::RTE_TRIGGER_LEVEL);
  ports.write(PcTestdev::kIrqLineBase + 5, 1, 1);  // level pin 5: remote IRR set
  ports.write(Uart16550::kCom1Base + 3, 1, 0x03);
  ports.write(Uart16550::kCom1Base + 7, 1, 0x5a);
  ports.write(Uart16550::kCom1Base + 1, 1, 0x02);  // THRE interrupt pending
  ports.write(Pic8259::kMasterBase, 1, 0x11);      // ICW1, ICW2; ICW3 to come
  ports.write(Pic8259::kMasterBase + 1, 1, 0x20);
  ports.write(Pic8259::kElcrBase + 1, 1, 0x0e);
  ports.write(Pit8254::kBase + 3, 1, 0x34);  // channel 0: mode 2, 10000
  ports.write(Pit8254::kBase, 1, 0x10);
  ports.write(Pit8254::kBase, 1, 0x27);
  ports.write(Pit8254::kPortB, 1, 0x03);
  ports.write(Pit8254::kBase + 3, 1, 0xb6);  // channel 2: mode 3, LSB written only
  ports.write(Pit8254::kBase + 2, 1, 0x80);
  ports.write(CmosRtc::kBase, 1, CmosRtc::REG_B);  // the clock stopped at 05:00:00
  ports.write(CmosRtc::kBase + 1, 1, CmosRtc::B_SET | CmosRtc::B_24H);
  ports.write(CmosRtc::kBase, 1, CmosRtc::REG_HOURS);
  ports.write(CmosRtc::kBase + 1, 1, 0x05);
  ports.write(CmosRtc::kBase, 1, CmosRtc::INDEX_NMI_DISABLE | CmosRtc::REG_HOURS);
  ports.write(FwCfg::kBase, 2, FwCfg::kSignature);
  (void)ports.read(FwCfg::kBase + 1, 1);  // 'Q'; the next read is 'E'
  ports.write(AcpiPm::kBase + AcpiPm::kPm1En, 2, AcpiPm::EN_MASK);
  for (char c : std::string_view("Shut")) ports.write(BochsShutdown::kBase, 1, static_cast<uint8_t>(c));
  ports.write(PciHost::kBase, 4, 0x80000000u | pci::REG_INTERRUPT_LINE);  // the host bridge's
  ports.write(PciHost::kBase + 4, 1, 0x0b);
  ports.write(memory_map::kPciTestdevIoBar, 1, 1);  // test 1 of the I/O BAR
  ports.write(PciHost::kBase, 4, 0x80000000u | (memory_map::kPciTestdevSlot << 11) | pci::REG_COMMAND);
  ports.write(PcTestdev::kBase, 4, 0x11223344);
  rig.window_at(PcTestdev::kIomemBase)->write(0x20, 8, 0x0102030405060708ull);
  ports.write(DebugExit::kBase, 1, 3);
  (void)ports.read(0x80, 1);  // nobody's
  write_ioapic(ioapic::REG_REDIRECTION_BASE + 2 * 7 + 1, 0);  // leaves IOREGSEL on pin 7

  const std::string bytes = save_state_bytes(rig.board);
  BoardRig restored(kEveryOptionalDevice);
  restored.events.now_ns = rig.events.now_ns;
  load_state_bytes(restored.board, bytes);
  EXPECT_EQ(save_state_bytes(restored.board), bytes);
  BoardRig fresh(kEveryOptionalDevice);
  EXPECT_NE(save_state_bytes(fresh.board), bytes);

  const std::vector<uint64_t> seen = run_on(rig);
  EXPECT_EQ(run_on(restored), seen);
  EXPECT_EQ(restored.board.guest_exit_value(), 3u);
  EXPECT_EQ(restored.events.shutdowns.size(), 1u);
  ASSERT_FALSE(restored.events.interrupts.empty());
  EXPECT_EQ(restored.events.interrupts.back().vector, 0x45);
  EXPECT_TRUE(restored.serial.empty());  // nothing was sent again
}

// A board without the optional devices saves none of their state, and
// loads what it saved.
TEST(PcBoardSnapshot, OptionalDevicesAreSavedOnlyWhenPresent) {
  BoardRig bare, full(kEveryOptionalDevice);
  const std::string bare_bytes = save_state_bytes(bare.board);
  EXPECT_LT(bare_bytes.size(), save_state_bytes(full.board).size());
  BoardRig restored;
  load_state_bytes(restored.board, bare_bytes);
  EXPECT_EQ(save_state_bytes(restored.board), bare_bytes);
}

}  // namespace
}  // namespace topolab
