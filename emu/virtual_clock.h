// Virtual time: what the guest's clocks (TSC, and later the APIC timer) read.
// Derived from retired instructions only, never from the host, so every run
// of the same image and configuration sees the same times.
#pragma once

#include <cstdint>

namespace topolab {

class VirtualClock {
 public:
  // The nominal TSC frequency and the cycles per instruction of the
  // modelled CPU; the cost model (virtual time charged for exits and
  // wakeups) builds on these.
  static constexpr uint64_t kTscHz = 2'000'000'000;
  static constexpr uint64_t kCyclesPerInstruction = 1;

  static constexpr uint64_t cycles_for(uint64_t instructions) { return instructions * kCyclesPerInstruction; }
  static constexpr uint64_t ns_for_cycles(uint64_t cycles) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(cycles) * 1'000'000'000 / kTscHz);
  }
  static constexpr uint64_t cycles_for_ns(uint64_t ns) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * kTscHz / 1'000'000'000);
  }
};

}  // namespace topolab
