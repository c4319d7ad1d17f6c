// SPDX-License-Identifier: GPL-2.0-or-later
// A platform device's MMIO window as the engines map it: what the board
// (emu/pc_board.h) hands the vCPUs (emu/machine_cpu.h), in a header of its
// own so that neither includes the other.
#pragma once

#include <cstdint>

namespace topolab {

class MmioHandler;  // emu/vcpu.h

// Mapped the same in every vCPU's engine.
struct PlatformMmio {
  uint64_t base = 0;
  uint64_t size = 0;
  MmioHandler* handler = nullptr;
};

}  // namespace topolab
