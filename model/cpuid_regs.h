#pragma once

#include <cstdint>

namespace topolab {

// The four registers one CPUID query returns.
struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool operator==(const CpuidRegs&) const = default;
};

}  // namespace topolab
