// SPDX-License-Identifier: GPL-2.0-or-later
#include "firmware/legacy_bios.h"

#include <array>
#include <cstring>

#include "devices/local_apic.h"

namespace topolab::legacy_bios {

namespace {

// Real-mode handlers (16-bit code), at these offsets in segment F000.
constexpr uint16_t kMasterEoiOffset = 0xfe00;
constexpr uint16_t kSlaveEoiOffset = 0xfe10;

constexpr std::array<uint8_t, 1> kIret = {0xcf};
// push ax; mov al, 0x20; out 0x20, al; pop ax; iret
constexpr std::array<uint8_t, 7> kMasterEoi = {0x50, 0xb0, 0x20, 0xe6, 0x20, 0x58, 0xcf};
// push ax; mov al, 0x20; out 0xa0, al; out 0x20, al; pop ax; iret
constexpr std::array<uint8_t, 9> kSlaveEoi = {0x50, 0xb0, 0x20, 0xe6, 0xa0, 0xe6, 0x20, 0x58, 0xcf};
// push ds; push ax; xor ax, ax; mov ds, ax; add word [0x46c], 1;
// adc word [0x46e], 0; int 0x1c; mov al, 0x20; out 0x20, al; pop ax;
// pop ds; iret
constexpr std::array<uint8_t, 25> kTimerTick = {0x1e, 0x50, 0x31, 0xc0, 0x8e, 0xd8, 0x83, 0x06, 0x6c,
                                                0x04, 0x01, 0x83, 0x16, 0x6e, 0x04, 0x00, 0xcd, 0x1c,
                                                0xb0, 0x20, 0xe6, 0x20, 0x58, 0x1f, 0xcf};

constexpr uint32_t kBiosBase = uint32_t{kBiosSegment} << 4;
constexpr uint8_t kMasterBase = 0x08, kSlaveBase = 0x70, kTimerVector = kMasterBase;

template <size_t N>
void put(GuestRam& ram, uint16_t offset, const std::array<uint8_t, N>& code) {
  std::memcpy(ram.bytes(kBiosBase + offset, N).data(), code.data(), N);
}

}  // namespace

std::span<const ApicSetting> bsp_apic_settings() {
  static constexpr ApicSetting kSettings[] = {
      {apic::REG_SVR, apic::SVR_APIC_ENABLED | 0xff},
      {apic::REG_LVT_LINT0, 0x8700},
      {apic::REG_LVT_LINT1, 0x8400},
  };
  return kSettings;
}

std::span<const PortWrite> port_writes() {
  // The PIT first: its control word raises OUT, and that edge must not be
  // left in IRR (SeaBIOS serviced its ticks with interrupts on long before
  // it boots the image); ICW1 then forgets it.
  static constexpr PortWrite kWrites[] = {
      // pit_setup: channel 0, mode 2, count 0 (65,536).
      {0x43, 0x34}, {0x40, 0x00}, {0x40, 0x00},
      // pic_setup: ICW1-ICW4 to each chip, then the masks SeaBIOS leaves.
      {0x20, 0x11}, {0x21, kMasterBase}, {0x21, 0x04}, {0x21, 0x01},
      {0xa0, 0x11}, {0xa1, kSlaveBase}, {0xa1, 0x02}, {0xa1, 0x01},
      {0x21, 0xb8}, {0xa1, 0x8e},
  };
  return kWrites;
}

void write_ivt_and_handlers(GuestRam& ram) {
  put(ram, kDummyIretOffset, kIret);
  put(ram, kMasterEoiOffset, kMasterEoi);
  put(ram, kSlaveEoiOffset, kSlaveEoi);
  put(ram, kTimerTickOffset, kTimerTick);
  uint8_t* ivt = ram.bytes(0, 256 * 4).data();
  for (unsigned vector = 0; vector < 256; ++vector) {
    uint16_t offset = kDummyIretOffset;
    if (vector == kTimerVector) {
      offset = kTimerTickOffset;
    } else if (vector >= kMasterBase && vector < kMasterBase + 8) {
      offset = kMasterEoiOffset;
    } else if (vector >= kSlaveBase && vector < kSlaveBase + 8) {
      offset = kSlaveEoiOffset;
    }
    const uint8_t entry[4] = {static_cast<uint8_t>(offset), static_cast<uint8_t>(offset >> 8),
                              static_cast<uint8_t>(kBiosSegment), static_cast<uint8_t>(kBiosSegment >> 8)};
    std::memcpy(ivt + vector * 4, entry, 4);
  }
  std::memset(ram.bytes(kBdaTicks, 5).data(), 0, 5);  // the ticks and the midnight flag
}

}  // namespace topolab::legacy_bios
