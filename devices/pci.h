// SPDX-License-Identifier: GPL-2.0-or-later
// PCI configuration mechanism #1 at ports 0xCF8/0xCFC (PCI Local Bus 3.0,
// 3.2.2.3.2), one bus of type-0 functions as QEMU's pc has them: the i440FX
// host bridge at 00:00.0 and, with `-device pci-testdev`, QEMU's test device
// (hw/misc/pci-testdev.c). Absent functions read all ones. PIIX3's reset
// control register, which sits at 0xCF9 inside the same four ports, is here
// too: a byte write with bit 2 (RST_CPU) set resets the machine.
//
// Each function's 256-byte header is a byte array with a write mask per
// byte: the command register's decode, bus-master, parity, SERR and INTx
// disable bits, the interrupt line, the latency timer and the BARs are
// writable; the rest reads what the device is. A BAR reads back the size
// mask a guest probes with (writing all ones reads ~(size - 1) | type).
//
// Not modelled (deliberately):
// - BARs do not move: the firmware addresses (topolab plays SeaBIOS) are the
//   only ones a device answers at, and only while its command register
//   enables decoding and the BAR holds that address again.
// - Status register bits (all 0), capabilities, expansion ROMs, other
//   buses and functions, configuration mechanism #2, PCIe extended space.
// - The i440FX's own registers (PAM, SMRAM...): they read 0 and ignore writes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "devices/mmio_bus.h"
#include "devices/port_bus.h"

namespace topolab {

namespace pci {
inline constexpr uint8_t REG_VENDOR = 0x00, REG_DEVICE = 0x02, REG_COMMAND = 0x04, REG_STATUS = 0x06,
                         REG_REVISION = 0x08, REG_CLASS = 0x09, REG_LATENCY = 0x0d, REG_HEADER_TYPE = 0x0e,
                         REG_BAR0 = 0x10, REG_SUBSYSTEM_VENDOR = 0x2c, REG_SUBSYSTEM = 0x2e,
                         REG_INTERRUPT_LINE = 0x3c, REG_INTERRUPT_PIN = 0x3d;
inline constexpr uint16_t COMMAND_IO = 1u << 0, COMMAND_MEMORY = 1u << 1, COMMAND_BUS_MASTER = 1u << 2,
                          COMMAND_PARITY = 1u << 6, COMMAND_SERR = 1u << 8, COMMAND_INTX_DISABLE = 1u << 10;
inline constexpr uint32_t BAR_IO = 1u << 0;
inline constexpr uint32_t CONFIG_ENABLE = 1u << 31;  // CONFIG_ADDRESS[31]
// QEMU gives every device it makes Red Hat's subsystem IDs.
inline constexpr uint16_t kSubsystemVendorQemu = 0x1af4, kSubsystemQemu = 0x1100;
}  // namespace pci

// One function's configuration header.
class PciFunction {
 public:
  PciFunction(uint16_t vendor, uint16_t device, uint8_t revision, uint32_t class_code);

  // BAR `n` (0-5) decodes `size` bytes (a power of two, at least 16 for
  // memory and 4 for I/O) of I/O or 32-bit memory space at `address`.
  void set_bar(unsigned n, bool io, uint32_t size, uint32_t address);
  void set_command(uint16_t command);

  uint32_t read(unsigned offset, unsigned size) const;
  void write(unsigned offset, unsigned size, uint32_t value);

  uint16_t command() const { return static_cast<uint16_t>(read(pci::REG_COMMAND, 2)); }
  // The BAR's address as the guest left it (type bits cleared).
  uint32_t bar_address(unsigned n) const;

  // Snapshots (base/state_archive.h). writable_ is the configuration: the
  // constructor and set_bar() build it, and the same device calls them alike.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(config_);
  }

 private:
  std::array<uint8_t, 256> config_{};
  std::array<uint8_t, 256> writable_{};
};

// The four ports at 0xCF8 (CONFIG_ADDRESS, with the reset control register
// at 0xCF9) and the four at 0xCFC (CONFIG_DATA).
class PciHost : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0xcf8;
  static constexpr uint32_t kPortCount = 8;
  static constexpr unsigned kDevices = 32;
  static constexpr uint8_t RCR_SYS_RST = 1u << 1, RCR_RST_CPU = 1u << 2;

  // `on_reset` runs for every write to 0xCF9 with RST_CPU set.
  explicit PciHost(std::function<void()> on_reset);

  // Puts `function` at bus 0, device `device`, function 0.
  void plug(unsigned device, PciFunction& function);

  std::string name() const override { return "pci-host"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // Snapshots (base/state_archive.h). The plugged functions are the
  // board's wiring (plug()); each serializes itself where it is owned.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(address_, rcr_);
  }

 private:
  PciFunction* selected() const;
  unsigned config_offset(uint16_t data_offset) const;

  std::function<void()> on_reset_;
  std::array<PciFunction*, kDevices> devices_{};
  uint32_t address_ = 0;  // CONFIG_ADDRESS
  uint8_t rcr_ = 0;       // reset control: SYS_RST as last written
};

// The i440FX host bridge of QEMU's pc: 8086:1237 revision 2, class 060000.
PciFunction i440fx_host_bridge();

// QEMU's pci-testdev (1b36:0005, class ff0000, PCI_CLASS_OTHERS): BAR0 4 KiB of memory, BAR1
// 256 I/O ports, the same test registers in both (PCITestDevHdr): a byte
// written at offset 0 selects test N (0 no-eventfd, 1 wildcard-eventfd, 2
// datamatch-eventfd) of that BAR and clears its count; each write of the
// test's data (or, for wildcard, of anything) at the test's offset counts
// once; reads return the selected test's header and name, byte by byte.
// Without KVM there is no eventfd: every test counts its writes, as under
// QEMU's TCG. The device is the I/O BAR's port device itself.
class PciTestdev : public PortDevice {
 public:
  static constexpr uint32_t kMemBarSize = 0x1000, kIoBarSize = 0x100;

  PciTestdev(uint32_t mem_base, uint16_t io_base);

  PciFunction& function() { return function_; }
  uint32_t mem_base() const { return mem_base_; }
  uint16_t io_base() const { return io_base_; }

  // BAR1, at io_base (PortDevice).
  std::string name() const override { return "pci-testdev"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;
  // BAR0, at mem_base: a device of its own on the MMIO bus.
  MmioDevice& memory_bar() { return memory_bar_; }
  uint64_t mem_read(uint64_t offset, unsigned size);
  void mem_write(uint64_t offset, unsigned size, uint64_t value);

  // Snapshots (base/state_archive.h). The bases are the configuration.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(function_, current_, count_);
  }

 private:

  enum class Space { Memory = 0, Io = 1 };
  bool decodes(Space space) const;
  uint64_t read_bytes(Space space, uint64_t offset, unsigned size) const;
  void write_bytes(Space space, uint64_t offset, unsigned size, uint64_t value);
  uint8_t read_byte(uint64_t offset) const;
  void write_byte(Space space, uint64_t offset, uint8_t value);
  // The selected test's header (16 bytes) and name, as QEMU lays them out.
  std::string header() const;

  PciFunction function_;
  MmioWindowOf<PciTestdev, &PciTestdev::mem_read, &PciTestdev::mem_write> memory_bar_{*this, "pci-testdev BAR0"};
  uint32_t mem_base_;
  uint16_t io_base_;
  int current_ = -1;  // the selected test: Space * 3 + N
  std::array<uint32_t, 6> count_{};
};

}  // namespace topolab
