// SPDX-License-Identifier: GPL-2.0-or-later
// The platform devices a machine may or may not have, in one table that the
// QEMU front (-device, -device help, -machine pit=) and the machine (which
// device it attaches) both read. The devices every machine has (the UART,
// the I/O APIC, PCI's host bridge, the CMOS RTC, ...) are not here: nothing
// turns them off. Adding an optional device: a row here, its model in
// devices/ with its test, and its row in the board's device table
// (emu/pc_board.cc), whose test checks the two tables agree.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace topolab {

enum class PlatformDevice : uint8_t { IsaDebugExit, PcTestdev, PciTestdev, Pit };
inline constexpr size_t kPlatformDeviceCount = 4;

struct PlatformDeviceInfo {
  PlatformDevice device;
  // How QEMU names it: `-device NAME` (or, for the PIT, `-machine pit=`).
  std::string_view qemu_name;
  // What `-device help` lists it as (QEMU's format); empty: it is no -device.
  std::string_view qemu_help;
};

inline constexpr std::array<PlatformDeviceInfo, kPlatformDeviceCount> kPlatformDevices = {{
    {PlatformDevice::IsaDebugExit, "isa-debug-exit", "name \"isa-debug-exit\", bus ISA"},
    {PlatformDevice::PcTestdev, "pc-testdev", "name \"pc-testdev\", bus ISA"},
    {PlatformDevice::PciTestdev, "pci-testdev", "name \"pci-testdev\", bus PCI, desc \"PCI Test Device\""},
    {PlatformDevice::Pit, "pit", ""},
}};

// Each row sits at its enumerator's index.
constexpr bool platform_devices_in_enum_order() {
  for (size_t i = 0; i < kPlatformDevices.size(); ++i)
    if (static_cast<size_t>(kPlatformDevices[i].device) != i) return false;
  return true;
}
static_assert(platform_devices_in_enum_order());

constexpr const PlatformDeviceInfo& platform_device_info(PlatformDevice device) {
  return kPlatformDevices[static_cast<size_t>(device)];
}

// The device `-device NAME` adds, if it is one of these.
constexpr std::optional<PlatformDevice> platform_device_named(std::string_view qemu_name) {
  for (const PlatformDeviceInfo& info : kPlatformDevices)
    if (!info.qemu_help.empty() && info.qemu_name == qemu_name) return info.device;
  return std::nullopt;
}

// Which of them a machine has.
class PlatformDevices {
 public:
  constexpr PlatformDevices() = default;
  PlatformDevices(std::initializer_list<PlatformDevice> devices) {
    for (PlatformDevice d : devices) add(d);
  }
  bool has(PlatformDevice device) const { return bits_.test(static_cast<size_t>(device)); }
  void add(PlatformDevice device) { bits_.set(static_cast<size_t>(device)); }
  void remove(PlatformDevice device) { bits_.reset(static_cast<size_t>(device)); }
  void set(PlatformDevice device, bool present) { bits_.set(static_cast<size_t>(device), present); }
  bool operator==(const PlatformDevices&) const = default;

 private:
  std::bitset<kPlatformDeviceCount> bits_;
};

}  // namespace topolab
