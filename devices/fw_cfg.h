// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's firmware configuration device (fw_cfg), legacy I/O interface only,
// as QEMU docs/specs/fw_cfg.txt describes it for x86: a 16-bit selector
// written to port 0x510 picks an item and rewinds it; byte reads from 0x511
// (or 0x510) return the item's bytes in order, then 0 past its end.
// Unknown keys read as an empty item.
//
// Items (QEMU include/standard-headers/linux/qemu_fw_cfg.h):
// - 0x00 SIGNATURE "QEMU";
// - 0x01 ID, u32 1: traditional interface only (bit 1, DMA, is clear);
// - 0x03 RAM_SIZE, u64;
// - 0x05 NB_CPUS, u16: CPUs present at boot;
// - 0x0F MAX_CPUS, u16: on x86 QEMU puts the *APIC ID limit* here (highest
//   possible APIC ID + 1, hw/i386/fw_cfg.c), not maxcpus, for old SeaBIOS;
//   the two differ for sparse topologies (2 sockets x 3 cores x 2 threads:
//   12 CPUs, limit 14). The caller passes the value; see Config;
// - 0x19 FILE_DIR: an empty directory (big-endian u32 count 0).
//
// Not provided: the DMA interface (0x514), data-port writes (QEMU ignores
// them too since 2.4), named files (etc/boot-cpus, ACPI tables for the
// table loader), the arch-local keys (bit 15 set: E820, ACPI, SMBIOS),
// and reads wider than a byte, which QEMU refuses; here they read 0 and
// consume nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "devices/port_bus.h"

namespace topolab {

class FwCfg : public PortDevice {
 public:
  static constexpr uint16_t kBase = 0x510;
  static constexpr uint32_t kPortCount = 2;  // offset 0 selector, offset 1 data

  // Selector keys.
  static constexpr uint16_t kSignature = 0x00, kId = 0x01, kRamSize = 0x03, kNbCpus = 0x05, kMaxCpus = 0x0f,
                            kFileDir = 0x19;

  struct Config {
    uint16_t nb_cpus = 1;
    // What QEMU x86 reports as MAX_CPUS: Topology::apic_id(max_cpus() - 1) + 1,
    // clamped to 0xFFFF (QEMU truncates; no real topology gets there).
    uint16_t apic_id_limit = 1;
    uint64_t ram_size = 0;
  };
  explicit FwCfg(const Config& config);

  std::string name() const override { return "fw_cfg"; }
  uint32_t read(uint16_t offset, unsigned size) override;
  void write(uint16_t offset, unsigned size, uint32_t value) override;

  // Adds or replaces an item (little-endian data, as the guest reads it).
  void set_item(uint16_t key, std::vector<uint8_t> bytes);

  // Snapshots (base/state_archive.h). items_ is the configuration: the
  // guest cannot write an item, and the constructor sets them all.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(selected_, offset_);
  }

 private:
  std::map<uint16_t, std::vector<uint8_t>> items_;
  uint16_t selected_ = kSignature;
  size_t offset_ = 0;
};

}  // namespace topolab
