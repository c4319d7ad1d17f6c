// SPDX-License-Identifier: GPL-2.0-or-later
// SYSCALL/SYSRET and SYSENTER/SYSEXIT as pure state transitions.
//
// Unicorn runs SYSCALL and SYSENTER as no-ops, so topolab performs them on
// the host side with these rules. SYSRET and SYSEXIT run as real QEMU code
// in the engine; they are here so the tests can check the round trip.
//
// Follows the Intel SDM Vol. 2B (SYSCALL, SYSENTER, SYSEXIT, SYSRET), and the
// AMD APM Vol. 3 where the vendors differ: AMD SYSCALL works in
// compatibility mode (to IA32_CSTAR) and legacy mode (to STAR[31:0]),
// where Intel raises #UD; AMD SYSENTER is #UD in long mode.
//
// Differences from QEMU TCG on purpose: QEMU's SYSCALL clears every
// arithmetic flag; the SDM clears exactly the IA32_FMASK bits (and RF).
// QEMU forces SS.RPL to 0 on SYSCALL; the SDM loads STAR[47:32] + 8 as is.
//
// Not modelled: the SYSRET #GP on a non-canonical RCX is checked against
// 48-bit linear addresses (no LA57); CET shadow-stack switching.
#pragma once

#include <cstdint>
#include <variant>

#include "arch/descriptors.h"
#include "arch/event_delivery.h"
#include "arch/x86_arch.h"

namespace topolab::x86 {

enum class CpuVendor { kIntel, kAmd };

// The MSRs the fast system calls read (SDM Vol. 4, table 2-2).
struct FastCallMsrs {
  uint64_t efer = 0;          // IA32_EFER, C000_0080H
  uint64_t star = 0;          // IA32_STAR, C000_0081H: [47:32] SYSCALL CS, [63:48] SYSRET CS
  uint64_t lstar = 0;         // IA32_LSTAR, C000_0082H: 64-bit SYSCALL entry
  uint64_t cstar = 0;         // IA32_CSTAR, C000_0083H: compatibility-mode entry (AMD)
  uint64_t fmask = 0;         // IA32_FMASK, C000_0084H: RFLAGS bits SYSCALL clears
  uint64_t sysenter_cs = 0;   // IA32_SYSENTER_CS, 174H
  uint64_t sysenter_esp = 0;  // IA32_SYSENTER_ESP, 175H
  uint64_t sysenter_eip = 0;  // IA32_SYSENTER_EIP, 176H
};

// What the instructions read and write. `rip` is the address of the
// instruction itself; `instruction_length` takes it to the next one.
struct FastCallState {
  CpuMode mode = CpuMode::kLong64;
  unsigned cpl = 3;
  Segment cs, ss;
  uint64_t rip = 0;
  uint8_t instruction_length = 2;  // 0F 05 / 0F 34 (SYSRET/SYSEXIT with REX.W: 3)
  uint64_t rsp = 0, rflags = kFlagReserved1;
  uint64_t rcx = 0, rdx = 0, r11 = 0;
};

using FastCallOutcome = std::variant<FastCallState, Fault>;

FastCallOutcome syscall(const FastCallState& s, const FastCallMsrs& msrs, CpuVendor vendor);
FastCallOutcome sysenter(const FastCallState& s, const FastCallMsrs& msrs, CpuVendor vendor);
// `rex_w`: the 64-bit operand size form (return to 64-bit mode).
FastCallOutcome sysret(const FastCallState& s, const FastCallMsrs& msrs, bool rex_w);
FastCallOutcome sysexit(const FastCallState& s, const FastCallMsrs& msrs, bool rex_w);

}  // namespace topolab::x86
