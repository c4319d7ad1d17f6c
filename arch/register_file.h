// SPDX-License-Identifier: GPL-2.0-or-later
// The registers a debugger sees on an x86-64 vCPU, in the order of the
// target description topolab's gdb stub sends (debug/target_xml): gdb's own
// features for amd64 (gdb/features/i386/64bit-core.xml, 64bit-sse.xml,
// 64bit-segments.xml) and, as QEMU's stub adds them, K_GS_BASE, the
// control registers and EFER. A register's number in this table is its
// number in the `p`/`P` packets and in the `g` packet's order.
// Pure data: the vCPU engine reads each by its id, the stub lays them out.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace topolab::x86 {

enum class RegisterId : uint8_t {
  // org.gnu.gdb.i386.core
  kRax, kRbx, kRcx, kRdx, kRsi, kRdi, kRbp, kRsp,
  kR8, kR9, kR10, kR11, kR12, kR13, kR14, kR15,
  kRip, kEflags,
  kCs, kSs, kDs, kEs, kFs, kGs,
  kSt0, kSt1, kSt2, kSt3, kSt4, kSt5, kSt6, kSt7,
  kFctrl, kFstat, kFtag, kFiseg, kFioff, kFoseg, kFooff, kFop,
  // org.gnu.gdb.i386.sse
  kXmm0, kXmm1, kXmm2, kXmm3, kXmm4, kXmm5, kXmm6, kXmm7,
  kXmm8, kXmm9, kXmm10, kXmm11, kXmm12, kXmm13, kXmm14, kXmm15,
  kMxcsr,
  // org.gnu.gdb.i386.segments (fs_base, gs_base), then QEMU's additions
  kFsBase, kGsBase, kKernelGsBase,
  kCr0, kCr2, kCr3, kCr4, kCr8, kEfer,
  kCount,
};

// One register as the target description names it.
struct RegisterInfo {
  RegisterId id;
  std::string_view name;     // gdb's name ("rax", "eflags", "k_gs_base")
  unsigned bits;             // 32, 64, 80 or 128; the packets carry bits/8 bytes, little-endian
  std::string_view type;     // the description's type ("int64", "code_ptr", "i387_ext", "vec128", ...)
  std::string_view group;    // "general", "float", "vector", "system"
  std::string_view feature;  // the <feature> it belongs to
};

// Every register, by RegisterId order (index i is RegisterId(i)).
std::span<const RegisterInfo> debug_registers();
inline const RegisterInfo& register_info(RegisterId id) { return debug_registers()[static_cast<unsigned>(id)]; }
inline unsigned register_bytes(RegisterId id) { return register_info(id).bits / 8; }

}  // namespace topolab::x86
