// SPDX-License-Identifier: GPL-2.0-or-later
// What one CPUID query returns (EAX, EBX, ECX, EDX), the vocabulary the CPUID
// model, the vCPU interface and the dumps share; no leaf knowledge here.
#pragma once

#include <cstdint>

namespace topolab {

// The four registers one CPUID query returns.
struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool operator==(const CpuidRegs&) const = default;
};

// EAX, EBX, ECX or EDX of `r`, by the letter 'a', 'b', 'c' or 'd'.
inline uint32_t register_value(const CpuidRegs& r, char reg) {
  switch (reg) {
    case 'a': return r.eax;
    case 'b': return r.ebx;
    case 'c': return r.ecx;
    default: return r.edx;
  }
}

}  // namespace topolab
