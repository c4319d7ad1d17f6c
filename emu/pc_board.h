// SPDX-License-Identifier: GPL-2.0-or-later
// The PC board: guest RAM, the I/O-port bus and the MMIO bus, and the
// platform devices on them, QEMU's pc machine as far as topolab models it.
// Which devices a board has, and where, is one table (device_table() in
// pc_board.cc): every board has the rows without an optional device; a row
// with one (base/platform_devices.h) is there only when the configuration
// asks for it. The buses reject a device that overlaps another.
//
// The board knows nothing of vCPUs, time or the loop. What its devices
// need of the machine they sit in (an interrupt sent, a shutdown, the
// time, an exit charged) goes through BoardEvents, which the machine
// implements, so the board is tested without one (emu/pc_board_test.cc).
//
// Adding a device: its model in devices/ with its test, a member and an
// attach function here with its row in the table, a row in
// base/platform_devices.h if it is optional, and a case in the board's test.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/guest_ram.h"
#include "base/platform_devices.h"
#include "devices/acpi_pm.h"
#include "devices/bochs_shutdown.h"
#include "devices/cmos_rtc.h"
#include "devices/debug_exit.h"
#include "devices/fw_cfg.h"
#include "devices/i8042.h"
#include "devices/io_apic.h"
#include "devices/measure_port.h"
#include "devices/mmio_bus.h"
#include "devices/pc_testdev.h"
#include "devices/pci.h"
#include "devices/pic8259.h"
#include "devices/pit8254.h"
#include "devices/port_bus.h"
#include "devices/uart16550.h"
#include "emu/platform_mmio.h"
#include "emu/vcpu.h"
#include "model/topology.h"

namespace topolab {

// What the board's devices ask of the machine. Every call comes from inside
// a guest access to a device, that is, during some vCPU's slice, except
// send_timed_interrupts.
class BoardEvents {
 public:
  virtual ~BoardEvents() = default;
  // Interrupt messages the I/O APIC sent (a pin changed, an entry was
  // unmasked, an EOI found a pin still asserted), in a vCPU's access.
  virtual void send_device_interrupts(const IoApicMessages& messages) = 0;
  // Messages a timed line sent at `at_ns` (PcBoard::run_timers), outside
  // any vCPU's access.
  virtual void send_timed_interrupts(const IoApicMessages& messages, uint64_t at_ns) = 0;
  // INT of the 8259 pair (PcBoard::pic()) changed: in a vCPU's access or
  // its INTA (`at_ns` nullopt), or when a timed line changed at `at_ns`.
  virtual void pic_output_changed(std::optional<uint64_t> at_ns) = 0;
  // A guest access moved next_timer_event(): the slice that made it ends
  // after the access, so the next one is cut at the new time.
  virtual void device_timers_changed() = 0;
  // The guest reset the machine or powered it off; `how` is the closing line.
  virtual void request_shutdown(std::string how) = 0;
  // The guest put the machine to sleep in S3 (PM1a_CNT SLP_TYP 1).
  virtual void request_suspend() = 0;
  // The guest wrote to isa-debug-exit: its value is the board's
  // guest_exit_value(), and the run ends once the slice does.
  virtual void guest_exit_requested() = 0;
  // The virtual time a device reads (the PIT, the RTC, the PM timer).
  virtual uint64_t device_now_ns() = 0;
  // An access through an MMIO window: an I/O exit of the vCPU making it.
  virtual void charge_io_exit() = 0;
  // The guest wrote to the measuring port (devices/measure_port.h).
  virtual void measure_mark(MeasurePort::Mark mark) = 0;
};

struct PcBoardConfig {
  const Topology& topology;  // what fw_cfg tells the firmware; not kept
  uint64_t ram_mib = 128;
  PlatformDevices devices;  // the optional devices it has
  // The I/O APIC takes APIC IDs past 255 (CpuConfig::offers_ext_dest_id).
  bool ioapic_extended_destination = false;
  // CPUID's physical address width (CPUID.80000008H:EAX[7:0]), which must
  // reach the RAM (memory_map::ram_size_problem); QEMU's TCG default.
  unsigned phys_bits = 40;
};

class PcBoard {
 public:
  // Throws ConfigError for a RAM size outside what the board supports (and
  // std::invalid_argument if two rows of the table overlap: a bug, not input).
  PcBoard(const PcBoardConfig& config, std::function<void(uint8_t)> serial_out, BoardEvents& events);
  PcBoard(const PcBoard&) = delete;
  PcBoard& operator=(const PcBoard&) = delete;

  GuestRam& ram() { return ram_; }
  const IoApic& ioapic() const { return ioapic_; }
  PortBus& ports() { return ports_; }
  const MmioBus& mmio() const { return mmio_; }
  // Every MMIO bus range as the engines map it, by base address; each
  // access is charged as an I/O exit before it reaches the device.
  const std::vector<PlatformMmio>& mmio_windows() const { return mmio_windows_; }
  // The table's rows this board attached, by name, in attach order.
  const std::vector<std::string_view>& attached() const { return attached_; }
  // What the guest wrote to isa-debug-exit, once it did.
  std::optional<uint32_t> guest_exit_value() const { return debug_exit_.value(); }
  // The local APICs EOIed a level-triggered vector: the EOI message the
  // I/O APIC hears (SDM 10.8.5).
  void broadcast_eoi(uint8_t vector) { events_.send_device_interrupts(ioapic_.eoi(vector)); }

  // --- S3 -----------------------------------------------------------------------------
  // When the machine, asleep in S3 since `ns`, wakes: at the RTC's next
  // alarm, if PM1_EN.RTC_EN and the RTC's B.AIE let it (QEMU's wakeup
  // reasons); nullopt: nothing can wake it.
  std::optional<uint64_t> s3_wake_ns(uint64_t ns) const {
    if (!acpi_pm_.rtc_wakes() || !cmos_rtc_.alarm_interrupts()) return std::nullopt;
    return cmos_rtc_.next_alarm_ns(ns);
  }
  // It woke by the RTC alarm: PM1_STS says so.
  void wake_from_s3() { acpi_pm_.wake_from_s3(true); }

  // --- The 8259 pair: ISA IRQs 0-15 through ExtINT --------------------------------
  const Pic8259& pic() const { return pic_; }
  // A vCPU's INTA cycle for ExtINT: the vector the pair answers, IRR to ISR.
  uint8_t acknowledge_pic_interrupt() { return pic_.acknowledge(); }
  // Where ISA IRQ `line` meets the I/O APIC: the pin of the same number, but
  // IRQ 0 on pin 2 (the MADT's interrupt source override, QEMU's pc).
  static unsigned gsi_of_isa_irq(unsigned line) { return line == 0 ? kPitGsi : line; }

  // --- Timed lines: the PIT's channel 0 OUT on ISA IRQ 0 ------------------
  // ISA IRQ 0 is the I/O APIC's pin 2, as the MADT's interrupt source
  // override says (firmware/acpi) and QEMU's pc machine wires it.
  static constexpr unsigned kPitGsi = 2;
  // When a timed line next changes level (virtual ns), nullopt for never.
  // While pin 2's entry and the 8259's IRQ 0 are both masked, nothing is
  // run: pin 2 loses its edges (82093AA) and the 8259 latches at most one
  // in IRR, so the line is brought up to date when the guest accesses the
  // PIT, the I/O APIC or the 8259s, before the access can unmask or read it.
  std::optional<uint64_t> next_timer_event() const;
  // Brings the timed lines to their levels at `ns` (the machine calls it at
  // next_timer_event()); their messages leave at `ns`.
  void run_timers(uint64_t ns);

  // Snapshots (base/state_archive.h): every device's state. Not the RAM,
  // which the snapshot saves on its own, nor the buses' ranges and the MMIO
  // windows, which construction attaches again. The i8042 and the measuring
  // port keep no state. An optional device is written only when present:
  // the same configuration makes the same ones.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(ports_, uart_, debug_exit_, fw_cfg_, pic_, ioapic_, acpi_pm_, bochs_shutdown_, cmos_rtc_, pci_host_,
       host_bridge_);
    if (pit_) ar(*pit_, pit_next_change_, pit_line_);
    if (pci_testdev_) ar(*pci_testdev_);
    if (pc_testdev_) ar(*pc_testdev_);
  }

 private:
  // One row of the device table.
  struct DeviceRow {
    std::string_view name;
    std::optional<PlatformDevice> optional;  // nullopt: on every board
    void (PcBoard::*attach)();
  };
  static std::span<const DeviceRow> device_table();

  // One MMIO bus range as every engine maps it: each access is an I/O
  // exit, charged to the vCPU that makes it.
  class DeviceWindow final : public MmioHandler {
   public:
    DeviceWindow(BoardEvents& events, MmioDevice& device) : events_(events), device_(device) {}
    uint64_t read(uint64_t offset, unsigned size) override {
      events_.charge_io_exit();
      return device_.read(offset, size);
    }
    void write(uint64_t offset, unsigned size, uint64_t value) override {
      events_.charge_io_exit();
      device_.write(offset, size, value);
    }

   private:
    BoardEvents& events_;
    MmioDevice& device_;
  };

  // The table's attach steps (pc_board.cc).
  void attach_uart();
  void attach_debug_exit();
  void attach_fw_cfg();
  void attach_pics();
  void attach_measure_port();
  void attach_ioapic();
  void attach_i8042();
  void attach_acpi_pm();
  void attach_bochs_shutdown();
  void attach_pit();
  void attach_cmos_rtc();
  void attach_pci_host();
  void attach_pci_testdev();
  void attach_pc_testdev();
  void map_device_windows();

  // ISA IRQ `line` (0-23) to `asserted`, as QEMU's gsi_handler: lines 0-15
  // reach the 8259s, and every line its I/O APIC pin, whose messages
  // leave at once.
  void set_isa_irq(unsigned line, bool asserted);
  // IRQ 0 to channel 0's OUT at `ns`, in a guest access or (`timed`) at
  // the line's own time; and when OUT changes next.
  void sync_pit_line(uint64_t ns, bool timed);
  // OUT rose at least once after the last sync and up to `ns`.
  bool pit_rose_since_sync(uint64_t ns) const;
  // A guest access that may move IRQ 0 or read what it latched (the PIT,
  // the I/O APIC, the 8259s): the line as it stands at the access, then
  // `access`, then the machine told if the next change moved.
  template <class Access>
  auto with_pit_line_synced(Access access);
  // The 8259s' ports, each access with the PIT's line synced before it.
  class PicPorts final : public PortDevice {
   public:
    PicPorts(PcBoard& board, PortDevice& chip) : board_(board), chip_(chip) {}
    std::string name() const override { return chip_.name(); }
    uint32_t read(uint16_t offset, unsigned size) override;
    void write(uint16_t offset, unsigned size, uint32_t value) override;

   private:
    PcBoard& board_;
    PortDevice& chip_;
  };
  // The I/O APIC's page on the MMIO bus.
  uint64_t read_ioapic_page(uint64_t offset, unsigned size) {
    return ioapic_.mmio_read(static_cast<uint32_t>(offset), size);
  }
  void write_ioapic_page(uint64_t offset, unsigned size, uint64_t value);

  BoardEvents& events_;
  GuestRam ram_;
  PortBus ports_;
  MmioBus mmio_;
  Uart16550 uart_;
  DebugExit debug_exit_;
  FwCfg fw_cfg_;
  Pic8259 pic_;
  PicPorts pic_master_ports_{*this, pic_.master_ports()}, pic_slave_ports_{*this, pic_.slave_ports()};
  // Set while a timed line changes (run_timers): when INT changed.
  std::optional<uint64_t> timed_change_ns_;
  MeasurePort measure_port_;
  IoApic ioapic_;
  MmioWindowOf<PcBoard, &PcBoard::read_ioapic_page, &PcBoard::write_ioapic_page> ioapic_page_{*this, "ioapic"};
  I8042 i8042_;
  AcpiPm acpi_pm_;
  BochsShutdown bochs_shutdown_;
  std::optional<Pit8254> pit_;
  std::optional<uint64_t> pit_next_change_;  // channel 0's OUT, as of the last sync
  bool pit_line_ = false;                    // and its level then
  CmosRtc cmos_rtc_;
  PciHost pci_host_;
  PciFunction host_bridge_;
  std::optional<PciTestdev> pci_testdev_;
  std::optional<PcTestdev> pc_testdev_;
  std::vector<std::unique_ptr<DeviceWindow>> device_windows_;  // one per mmio_ range
  std::vector<PlatformMmio> mmio_windows_;
  std::vector<std::string_view> attached_;
};

}  // namespace topolab
