// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/pc_board.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "base/errors.h"
#include "base/memory_map.h"

namespace topolab {

namespace {

// RAM as QEMU's pc machine lays it out (base/memory_map.h), once -m fits
// the board and the CPU's physical address width.
std::vector<RamRegion> checked_ram_regions(uint64_t mib, unsigned phys_bits) {
  if (mib < 2) throw ConfigError(fmt::format("-m {}: guest RAM must be at least 2 MiB", mib));
  if (const std::string problem = memory_map::ram_size_problem(mib, phys_bits); !problem.empty())
    throw ConfigError(problem);
  return memory_map::pc_ram_regions(mib << 20);
}

FwCfg::Config fw_cfg_config(const Topology& topology, uint64_t ram_bytes) {
  return FwCfg::Config{
      .nb_cpus = static_cast<uint16_t>(topology.cpus()),
      .apic_id_limit = static_cast<uint16_t>(std::min<uint32_t>(topology.apic_id(topology.max_cpus() - 1) + 1, 0xffff)),
      .ram_size = ram_bytes};
}

}  // namespace

template <class Access>
auto PcBoard::with_pit_line_synced(Access access) {
  if (!pit_) return access();
  const std::optional<uint64_t> before = next_timer_event();
  sync_pit_line(events_.device_now_ns(), false);
  struct Notify {
    PcBoard& board;
    std::optional<uint64_t> before;
    ~Notify() {
      if (board.next_timer_event() != before) board.events_.device_timers_changed();
    }
  } notify{*this, before};
  return access();
}

PcBoard::PcBoard(const PcBoardConfig& config, std::function<void(uint8_t)> serial_out, BoardEvents& events)
    : events_(events),
      ram_(checked_ram_regions(config.ram_mib, config.phys_bits)),
      uart_(std::move(serial_out), [this](bool asserted) { set_isa_irq(Uart16550::kCom1Gsi, asserted); }),
      debug_exit_([this] { events_.guest_exit_requested(); }),
      fw_cfg_(fw_cfg_config(config.topology, ram_.total_bytes())),
      pic_([this](bool) { events_.pic_output_changed(timed_change_ns_); }),
      measure_port_([this](MeasurePort::Mark mark) { events_.measure_mark(mark); }),
      ioapic_(config.ioapic_extended_destination),
      i8042_([this] {
        events_.request_shutdown("the guest reset the machine through the keyboard controller (0x64 <- 0xFE)");
      }),
      acpi_pm_([this] { return events_.device_now_ns(); },
               [this] { events_.request_shutdown("the guest powered the machine off (ACPI S5 through PM1a_CNT)"); },
               [this] { events_.request_suspend(); }),
      bochs_shutdown_(
          [this] { events_.request_shutdown("the guest powered the machine off (\"Shutdown\" to port 0x8900)"); }),
      cmos_rtc_([this] { return events_.device_now_ns(); },
                CmosRtc::Config{.below_4g_ram_bytes = memory_map::pc_ram_split(ram_.total_bytes()).below_4g,
                                .above_4g_ram_bytes = memory_map::pc_ram_split(ram_.total_bytes()).above_4g}),
      pci_host_([this] {
        events_.request_shutdown("the guest reset the machine through the reset control register (0xCF9)");
      }),
      host_bridge_(i440fx_host_bridge()) {
  for (const DeviceRow& row : device_table()) {
    if (row.optional && !config.devices.has(*row.optional)) continue;
    (this->*row.attach)();
    attached_.push_back(row.name);
  }
  map_device_windows();
}

// Every device the board can have, in attach order. Where a device sits
// is its own constant (devices/*.h, base/memory_map.h).
std::span<const PcBoard::DeviceRow> PcBoard::device_table() {
  static constexpr std::array kTable = {
      DeviceRow{"uart16550", std::nullopt, &PcBoard::attach_uart},
      DeviceRow{"isa-debug-exit", PlatformDevice::IsaDebugExit, &PcBoard::attach_debug_exit},
      DeviceRow{"fw_cfg", std::nullopt, &PcBoard::attach_fw_cfg},
      DeviceRow{"pic", std::nullopt, &PcBoard::attach_pics},
      DeviceRow{"measure-window", std::nullopt, &PcBoard::attach_measure_port},
      DeviceRow{"ioapic", std::nullopt, &PcBoard::attach_ioapic},
      DeviceRow{"i8042", std::nullopt, &PcBoard::attach_i8042},
      DeviceRow{"acpi-pm", std::nullopt, &PcBoard::attach_acpi_pm},
      DeviceRow{"bochs-shutdown", std::nullopt, &PcBoard::attach_bochs_shutdown},
      DeviceRow{"pit", PlatformDevice::Pit, &PcBoard::attach_pit},
      DeviceRow{"cmos-rtc", std::nullopt, &PcBoard::attach_cmos_rtc},
      DeviceRow{"pci-host", std::nullopt, &PcBoard::attach_pci_host},
      DeviceRow{"pci-testdev", PlatformDevice::PciTestdev, &PcBoard::attach_pci_testdev},
      DeviceRow{"pc-testdev", PlatformDevice::PcTestdev, &PcBoard::attach_pc_testdev},
  };
  return kTable;
}

void PcBoard::attach_uart() { ports_.attach(Uart16550::kCom1Base, Uart16550::kPortCount, uart_); }

void PcBoard::attach_debug_exit() { ports_.attach(DebugExit::kBase, DebugExit::kPortCount, debug_exit_); }

void PcBoard::attach_fw_cfg() { ports_.attach(FwCfg::kBase, FwCfg::kPortCount, fw_cfg_); }

// The two 8259As (devices/pic8259.h) and PIIX3's ELCR beside them.
void PcBoard::attach_pics() {
  ports_.attach(Pic8259::kMasterBase, Pic8259::kPortCount, pic_master_ports_);
  ports_.attach(Pic8259::kSlaveBase, Pic8259::kPortCount, pic_slave_ports_);
  ports_.attach(Pic8259::kElcrBase, Pic8259::kElcrPortCount, pic_.elcr_ports());
}

void PcBoard::set_isa_irq(unsigned line, bool asserted) {
  if (line < Pic8259::kLines) pic_.set_irq(line, asserted);
  events_.send_device_interrupts(ioapic_.set_pin(gsi_of_isa_irq(line), asserted));
}

void PcBoard::attach_measure_port() { ports_.attach(MeasurePort::kBase, MeasurePort::kPortCount, measure_port_); }

void PcBoard::attach_ioapic() { mmio_.attach(IoApic::kBase, IoApic::kMmioSize, ioapic_page_); }

void PcBoard::attach_i8042() {
  ports_.attach(I8042::kDataPort, 1, i8042_);
  ports_.attach(I8042::kCommandPort, 1, i8042_.command_port());
}

void PcBoard::attach_acpi_pm() { ports_.attach(AcpiPm::kBase, AcpiPm::kPortCount, acpi_pm_); }

void PcBoard::attach_bochs_shutdown() {
  ports_.attach(BochsShutdown::kBase, BochsShutdown::kPortCount, bochs_shutdown_);
}

void PcBoard::attach_pit() {
  pit_.emplace([this] { return events_.device_now_ns(); },
               [this] { with_pit_line_synced([] {}); });
  ports_.attach(Pit8254::kBase, Pit8254::kPortCount, *pit_);
  ports_.attach(Pit8254::kPortB, 1, pit_->port_b());
}

// --- Timed lines ---------------------------------------------------------------

std::optional<uint64_t> PcBoard::next_timer_event() const {
  if (!pit_) return std::nullopt;
  if ((ioapic_.redirection(kPitGsi) & ioapic::RTE_MASKED) && !pic_.line_unmasked(0)) return std::nullopt;
  return pit_next_change_;
}

void PcBoard::run_timers(uint64_t ns) {
  if (pit_) sync_pit_line(ns, true);
}

bool PcBoard::pit_rose_since_sync(uint64_t ns) const {
  if (!pit_next_change_ || *pit_next_change_ > ns) return false;
  if (!pit_line_) return true;  // low then, so its first change rose
  // High then: it fell first, and rose if it changed again.
  const std::optional<uint64_t> second = pit_->next_out_change(0, *pit_next_change_);
  return second && *second <= ns;
}

void PcBoard::sync_pit_line(uint64_t ns, bool timed) {
  const bool level = pit_->out_at(0, ns);
  if (timed) timed_change_ns_ = ns;
  // The 8259 latches any rising edge in IRR, masked or not: one the line
  // below does not make (low then, high now) is given to it as a pulse.
  // Only changes reach it, as OUT's own do: ICW1 forgets an edge, and a
  // line that stayed high must not bring it back.
  const bool pulse = pit_rose_since_sync(ns) && (pit_line_ || !level);
  if (pulse) {
    pic_.set_irq(0, false);
    pic_.set_irq(0, true);
  }
  if (pulse || level != pit_line_) pic_.set_irq(0, level);
  timed_change_ns_.reset();
  const IoApicMessages sent = ioapic_.set_pin(kPitGsi, level);
  if (timed) {
    events_.send_timed_interrupts(sent, ns);
  } else {
    events_.send_device_interrupts(sent);
  }
  pit_line_ = level;
  pit_next_change_ = pit_->next_out_change(0, ns);
}

uint32_t PcBoard::PicPorts::read(uint16_t offset, unsigned size) {
  return board_.with_pit_line_synced([&] { return chip_.read(offset, size); });
}

void PcBoard::PicPorts::write(uint16_t offset, unsigned size, uint32_t value) {
  board_.with_pit_line_synced([&] { chip_.write(offset, size, value); });
}

void PcBoard::write_ioapic_page(uint64_t offset, unsigned size, uint64_t value) {
  with_pit_line_synced([&] {
    events_.send_device_interrupts(
        ioapic_.mmio_write(static_cast<uint32_t>(offset), size, static_cast<uint32_t>(value)));
  });
}

void PcBoard::attach_cmos_rtc() { ports_.attach(CmosRtc::kBase, CmosRtc::kPortCount, cmos_rtc_); }

void PcBoard::attach_pci_host() {
  ports_.attach(PciHost::kBase, PciHost::kPortCount, pci_host_);
  pci_host_.plug(0, host_bridge_);
}

void PcBoard::attach_pci_testdev() {
  pci_testdev_.emplace(static_cast<uint32_t>(memory_map::kPciTestdevMemBar), memory_map::kPciTestdevIoBar);
  pci_host_.plug(memory_map::kPciTestdevSlot, pci_testdev_->function());
  ports_.attach(memory_map::kPciTestdevIoBar, PciTestdev::kIoBarSize, *pci_testdev_);
  mmio_.attach(memory_map::kPciTestdevMemBar, PciTestdev::kMemBarSize, pci_testdev_->memory_bar());
}

void PcBoard::attach_pc_testdev() {
  pc_testdev_.emplace([this](unsigned line, bool asserted) { set_isa_irq(line, asserted); });
  ports_.attach(PcTestdev::kBase, PcTestdev::kPortCount, *pc_testdev_);
  ports_.attach(PcTestdev::kIrqLineBase, PcTestdev::kIrqLines, pc_testdev_->irq_lines());
  mmio_.attach(PcTestdev::kIomemBase, PcTestdev::kIomemSize, pc_testdev_->iomem());
}

void PcBoard::map_device_windows() {
  for (const MmioBus::Range& range : mmio_.ranges()) {
    device_windows_.push_back(std::make_unique<DeviceWindow>(events_, *range.device));
    mmio_windows_.push_back({range.base, range.size, device_windows_.back().get()});
  }
}

}  // namespace topolab
