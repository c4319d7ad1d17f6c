// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/fast_syscall.h"

namespace topolab::x86 {
namespace {

// IA32_STAR fields (SDM Vol. 2B SYSCALL/SYSRET; Vol. 3A 5.8.8).
uint16_t star_syscall_cs(uint64_t star) { return static_cast<uint16_t>(star >> 32); }  // STAR[47:32]
uint16_t star_sysret_cs(uint64_t star) { return static_cast<uint16_t>(star >> 48); }   // STAR[63:48]

// SYSRET: RFLAGS <- (R11 & 3C7FD7H) | 2 (reserved bits and VM, RF cleared).
constexpr uint64_t kSysretFlagsMask = 0x3c7fd7;

Fault gp0() { return Fault{.vector = kGeneralProtection, .error_code = 0u}; }
Fault ud() { return Fault{.vector = kInvalidOpcode, .error_code = std::nullopt}; }

bool canonical48(uint64_t a) {
  const uint64_t top = a >> 47;
  return top == 0 || top == 0x1ffff;
}

uint64_t next_rip(const FastCallState& s) {
  const uint64_t next = s.rip + s.instruction_length;
  return s.mode == CpuMode::kLong64 ? next : next & 0xffffffff;
}

Segment segment(uint16_t selector, const SegmentDescriptor& d) { return Segment{.selector = selector, .desc = d}; }

}  // namespace

FastCallOutcome syscall(const FastCallState& s, const FastCallMsrs& msrs, CpuVendor vendor) {
  if (!(msrs.efer & kEferSce)) return ud();
  if (vendor == CpuVendor::kIntel && s.mode != CpuMode::kLong64) return ud();  // SDM: CS.L and EFER.LMA must be 1
  if (s.mode == CpuMode::kReal) return ud();
  FastCallState out = s;
  const uint16_t cs = star_syscall_cs(msrs.star) & ~kSelectorRplMask;  // RPL forced to 0
  // SDM: SS.Selector <- IA32_STAR[47:32] + 8, its RPL bits as the OS wrote them.
  const uint16_t ss = static_cast<uint16_t>(star_syscall_cs(msrs.star) + 8);
  out.cpl = 0;
  out.ss = segment(ss, flat_data(0));
  if (is_ia32e(s.mode)) {
    out.rcx = next_rip(s);
    // SDM: R11 <- RFLAGS. AMD saves it with RF cleared (APM Vol. 3 SYSCALL).
    out.r11 = vendor == CpuVendor::kAmd ? s.rflags & ~kFlagRf : s.rflags;
    out.rflags = (s.rflags & ~msrs.fmask & ~kFlagRf) | kFlagReserved1;
    out.cs = segment(cs, flat_code(0, true));
    out.mode = CpuMode::kLong64;
    out.rip = s.mode == CpuMode::kLong64 ? msrs.lstar : msrs.cstar;
  } else {
    // AMD legacy mode: ECX <- next EIP, EIP <- STAR[31:0], IF, VM, RF cleared.
    out.rcx = next_rip(s);
    out.rflags = s.rflags & ~(kFlagIf | kFlagVm | kFlagRf);
    out.cs = segment(cs, flat_code(0, false));
    out.rip = msrs.star & 0xffffffff;
  }
  return out;
}

FastCallOutcome sysenter(const FastCallState& s, const FastCallMsrs& msrs, CpuVendor vendor) {
  if (vendor == CpuVendor::kAmd && is_ia32e(s.mode)) return ud();  // APM: SYSENTER is invalid in long mode
  // SDM: #GP(0) if CR0.PE = 0 or IA32_SYSENTER_CS[15:2] = 0.
  if (s.mode == CpuMode::kReal || (msrs.sysenter_cs & 0xfffc) == 0) return gp0();
  FastCallState out = s;
  const bool ia32e = is_ia32e(s.mode);
  const uint16_t cs = static_cast<uint16_t>(msrs.sysenter_cs) & ~kSelectorRplMask;
  out.rflags = s.rflags & ~(kFlagVm | kFlagIf | kFlagRf);
  out.rsp = ia32e ? msrs.sysenter_esp : msrs.sysenter_esp & 0xffffffff;
  out.rip = ia32e ? msrs.sysenter_eip : msrs.sysenter_eip & 0xffffffff;
  out.cs = segment(cs, flat_code(0, ia32e));
  out.ss = segment(static_cast<uint16_t>(cs + 8), flat_data(0));
  out.cpl = 0;
  out.mode = ia32e ? CpuMode::kLong64 : CpuMode::kProtected;
  return out;
}

FastCallOutcome sysret(const FastCallState& s, const FastCallMsrs& msrs, bool rex_w) {
  if (!(msrs.efer & kEferSce) || s.mode != CpuMode::kLong64) return ud();
  if (s.cpl != 0) return gp0();
  if (rex_w && !canonical48(s.rcx)) return gp0();
  FastCallState out = s;
  const uint16_t base = star_sysret_cs(msrs.star);
  out.rip = rex_w ? s.rcx : s.rcx & 0xffffffff;
  out.rflags = (s.r11 & kSysretFlagsMask) | kFlagReserved1;
  out.cs = segment(static_cast<uint16_t>((rex_w ? base + 16 : base) | 3), flat_code(3, rex_w));
  out.ss = segment(static_cast<uint16_t>((base + 8) | 3), flat_data(3));
  out.cpl = 3;
  out.mode = rex_w ? CpuMode::kLong64 : CpuMode::kCompatibility;
  return out;
}

FastCallOutcome sysexit(const FastCallState& s, const FastCallMsrs& msrs, bool rex_w) {
  if (s.mode == CpuMode::kReal || (msrs.sysenter_cs & 0xfffc) == 0 || s.cpl != 0) return gp0();
  if (rex_w && (!canonical48(s.rcx) || !canonical48(s.rdx))) return gp0();
  FastCallState out = s;
  const uint16_t base = static_cast<uint16_t>(msrs.sysenter_cs);
  const uint16_t cs = static_cast<uint16_t>((base + (rex_w ? 32 : 16)) | 3);
  out.rsp = rex_w ? s.rcx : s.rcx & 0xffffffff;
  out.rip = rex_w ? s.rdx : s.rdx & 0xffffffff;
  out.cs = segment(cs, flat_code(3, rex_w));
  out.ss = segment(static_cast<uint16_t>(cs + 8), flat_data(3));
  out.cpl = 3;
  out.mode = rex_w ? CpuMode::kLong64 : is_ia32e(s.mode) ? CpuMode::kCompatibility : CpuMode::kProtected;
  return out;
}

}  // namespace topolab::x86
