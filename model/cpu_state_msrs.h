// SPDX-License-Identifier: GPL-2.0-or-later
// The write rules of the MSRs the engine keeps as CPU state: IA32_EFER,
// STAR, LSTAR, CSTAR, FMASK, FS_BASE, GS_BASE, KERNEL_GS_BASE,
// SYSENTER_CS/ESP/EIP and PAT (SDM Vol. 4 table 2-2, Vol. 2B WRMSR; AMD APM
// Vol. 2 3.1.7 and 6.1). The vCPU hands these MSRs to Unicorn, whose own
// WRMSR silently drops bad values; it asks check_cpu_state_msr_write()
// first and raises #GP(0) where hardware does.
//
// Header-only and pure, so the vCPU library can use it without linking the
// model. model/msr_file.h keeps the other MSRs.
#pragma once

#include <cstdint>
#include <optional>

#include "arch/x86_arch.h"
#include "model/cpuid_regs.h"
#include "model/msr_features.h"  // CpuidQuery (the alias only)

namespace topolab {

// Whether `value` is canonical for `bits`-wide linear addresses: bits
// 63:bits-1 all equal.
inline bool is_canonical(uint64_t value, unsigned bits) {
  if (bits >= 64) return true;
  const unsigned shift = 64 - bits;
  return static_cast<uint64_t>(static_cast<int64_t>(value << shift) >> shift) == value;
}

// PAT's eight fields: memory types 0 (UC), 1 (WC), 4 (WT), 5 (WP), 6 (WB),
// 7 (UC-); 2, 3 and anything in bits 7:3 are reserved (SDM Vol. 3A, "Memory
// Types That Can Be Encoded With PAT").
inline bool is_pat_value(uint64_t pat) {
  for (unsigned i = 0; i < 8; ++i) {
    const uint64_t type = (pat >> (8 * i)) & 0xff;
    if (type > 7 || type == 2 || type == 3) return false;
  }
  return true;
}

// The state check_cpu_state_msr_write() looks at.
struct CpuStateForMsr {
  uint64_t efer = 0;
  uint64_t cr0 = 0;
};

// A WRMSR of an MSR the engine keeps: the value to give the engine, or
// nullopt for #GP(0).
// - EFER: a bit CPUID does not announce (SCE with SYSCALL, LME/LMA with LM,
//   NXE with NX, SVME with SVM, FFXSR, TCE) is reserved; LME cannot change
//   while CR0.PG = 1; LMA is the CPU's (the write keeps it, as KVM does). A
//   CPUID with no extended leaves at all (a host that cannot describe its
//   CPU) lets SCE, LME and NXE through, which is what the 64-bit engine runs.
// - LSTAR, CSTAR, FS/GS/KERNEL_GS_BASE, SYSENTER_ESP/EIP: canonical, 57
//   bits wide with LA57 support (CPUID.(07H,0):ECX[16]) whatever CR4.LA57
//   says, else 48. Intel checks all seven; AMD truncates SYSENTER_ESP/EIP to
//   32 bits instead (docs/msrs.md).
// - FMASK: bits 63:32 reserved. PAT: eight valid types. STAR, SYSENTER_CS:
//   anything.
inline std::optional<uint64_t> check_cpu_state_msr_write(const CpuidQuery& cpuid, uint32_t msr, uint64_t value,
                                                         const CpuStateForMsr& state) {
  using namespace x86;
  switch (msr) {
    case kMsrEfer: {
      uint64_t allowed = kEferSce | kEferLme | kEferLma | kEferNxe;
      if (cpuid(0x80000000, 0).eax >= 0x80000001) {
        const CpuidRegs ext = cpuid(0x80000001, 0);
        auto has = [](uint32_t reg, unsigned bit) { return (reg >> bit) & 1; };
        allowed = (has(ext.edx, 11) ? kEferSce : 0) | (has(ext.edx, 29) ? kEferLme | kEferLma : 0) |
                  (has(ext.edx, 20) ? kEferNxe : 0) | (has(ext.ecx, 2) ? kEferSvme : 0) |
                  (has(ext.edx, 25) ? kEferFfxsr : 0) | (has(ext.ecx, 17) ? kEferTce : 0);
      }
      if (value & ~allowed) return std::nullopt;
      if ((state.cr0 & kCr0Pg) && ((value ^ state.efer) & kEferLme)) return std::nullopt;
      return (value & ~kEferLma) | (state.efer & kEferLma);
    }
    case kMsrLstar: case kMsrCstar: case kMsrFsBase: case kMsrGsBase: case kMsrKernelGsBase:
    case kMsrSysenterEsp: case kMsrSysenterEip: {
      const bool la57 = cpuid(0, 0).eax >= 7 && ((cpuid(7, 0).ecx >> 16) & 1);
      if (!is_canonical(value, la57 ? 57 : 48)) return std::nullopt;
      return value;
    }
    case kMsrFmask:
      if (value >> 32) return std::nullopt;
      return value;
    case kMsrPat:
      if (!is_pat_value(value)) return std::nullopt;
      return value;
    default:
      return value;
  }
}

}  // namespace topolab
