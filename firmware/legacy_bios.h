// SPDX-License-Identifier: GPL-2.0-or-later
// The machine state SeaBIOS leaves behind it when QEMU boots a -kernel
// image, for guests that rely on it: kvm-unit-tests' realmode.flat never
// programs the 8259s, the PIT or the APIC, and halts until the BIOS's timer
// tick ends its HLT. topolab has no BIOS; the QEMU front
// (MachineConfig::legacy_bios) sets this state up instead, before vCPU 0's
// first instruction:
// - the 8259 pair as SeaBIOS's pic_setup: ICW1 0x11, vector bases 0x08 and
//   0x70, the slave on IR2, 8086 mode, then the masks SeaBIOS leaves
//   (master 0xB8: IRQ 0, 1, 2 and 6 open; slave 0x8E);
// - the PIT's channel 0 as pit_setup: control word 0x34 (mode 2, LSB then
//   MSB), count 0 (65,536: 18.2 Hz);
// - the BSP's local APIC as smp_setup: SVR | 0x100 (software-enabled),
//   LINT0 0x8700 (ExtINT, level) and LINT1 0x8400 (NMI, level);
// - the real-mode IVT as ivt_init: every vector at an IRET, IRQ 0-7
//   (0x08-0x0F) and IRQ 8-15 (0x70-0x77) at handlers that EOI, and vector
//   8 at F000:FEA5, the timer tick: BDA ticks (0x46C) + 1, INT 1Ch, EOI.
// The handlers are a few bytes each at the top of the BIOS area, which
// the ACPI tables then leave alone (kLegacyBiosCodeBase).
//
// Not reproduced: SeaBIOS's other work (POST, option ROMs, the keyboard,
// disk and video services, the E820 call, SMM) and its midnight rollover
// of the tick count. Checked against QEMU 7.2 with `-d int` and
// `-trace pic_*,apic_local_deliver`.
#pragma once

#include <cstdint>
#include <span>

#include "base/guest_ram.h"

namespace topolab::legacy_bios {

// Where the handlers sit; the ACPI tables must end below it.
inline constexpr uint32_t kCodeBase = 0xfe000;
inline constexpr uint16_t kBiosSegment = 0xf000;
inline constexpr uint16_t kTimerTickOffset = 0xfea5;  // SeaBIOS's entry_08
inline constexpr uint16_t kDummyIretOffset = 0xff53;  // SeaBIOS's entry_iret_official
inline constexpr uint32_t kBdaTicks = 0x46c;

// The BSP's APIC registers, in this order: (xAPIC offset, value).
struct ApicSetting {
  uint32_t offset;
  uint32_t value;
};
std::span<const ApicSetting> bsp_apic_settings();

// The 8259 and PIT port writes, byte wide, in order.
struct PortWrite {
  uint16_t port;
  uint8_t value;
};
std::span<const PortWrite> port_writes();

// Writes the IVT (0-0x3FF), zeroes the BDA's tick count and writes the
// handlers at F000:xxxx. `ram` must hold the first MiB.
void write_ivt_and_handlers(GuestRam& ram);

}  // namespace topolab::legacy_bios
