// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/register_file.h"

#include <array>

namespace topolab::x86 {
namespace {

constexpr std::string_view kCore = "org.gnu.gdb.i386.core";
constexpr std::string_view kSse = "org.gnu.gdb.i386.sse";
constexpr std::string_view kSegments = "org.gnu.gdb.i386.segments";
// QEMU's stub puts K_GS_BASE, the control registers and EFER in a feature
// gdb does not know, so gdb shows them as plain registers by name.
constexpr std::string_view kSystem = "org.topolab.i386.system";

using R = RegisterId;
constexpr std::array<RegisterInfo, static_cast<unsigned>(R::kCount)> kRegisters = {{
    {R::kRax, "rax", 64, "int64", "general", kCore},
    {R::kRbx, "rbx", 64, "int64", "general", kCore},
    {R::kRcx, "rcx", 64, "int64", "general", kCore},
    {R::kRdx, "rdx", 64, "int64", "general", kCore},
    {R::kRsi, "rsi", 64, "int64", "general", kCore},
    {R::kRdi, "rdi", 64, "int64", "general", kCore},
    {R::kRbp, "rbp", 64, "data_ptr", "general", kCore},
    {R::kRsp, "rsp", 64, "data_ptr", "general", kCore},
    {R::kR8, "r8", 64, "int64", "general", kCore},
    {R::kR9, "r9", 64, "int64", "general", kCore},
    {R::kR10, "r10", 64, "int64", "general", kCore},
    {R::kR11, "r11", 64, "int64", "general", kCore},
    {R::kR12, "r12", 64, "int64", "general", kCore},
    {R::kR13, "r13", 64, "int64", "general", kCore},
    {R::kR14, "r14", 64, "int64", "general", kCore},
    {R::kR15, "r15", 64, "int64", "general", kCore},
    {R::kRip, "rip", 64, "code_ptr", "general", kCore},
    {R::kEflags, "eflags", 32, "i386_eflags", "general", kCore},
    {R::kCs, "cs", 32, "int32", "general", kCore},
    {R::kSs, "ss", 32, "int32", "general", kCore},
    {R::kDs, "ds", 32, "int32", "general", kCore},
    {R::kEs, "es", 32, "int32", "general", kCore},
    {R::kFs, "fs", 32, "int32", "general", kCore},
    {R::kGs, "gs", 32, "int32", "general", kCore},
    {R::kSt0, "st0", 80, "i387_ext", "float", kCore},
    {R::kSt1, "st1", 80, "i387_ext", "float", kCore},
    {R::kSt2, "st2", 80, "i387_ext", "float", kCore},
    {R::kSt3, "st3", 80, "i387_ext", "float", kCore},
    {R::kSt4, "st4", 80, "i387_ext", "float", kCore},
    {R::kSt5, "st5", 80, "i387_ext", "float", kCore},
    {R::kSt6, "st6", 80, "i387_ext", "float", kCore},
    {R::kSt7, "st7", 80, "i387_ext", "float", kCore},
    {R::kFctrl, "fctrl", 32, "int", "float", kCore},
    {R::kFstat, "fstat", 32, "int", "float", kCore},
    {R::kFtag, "ftag", 32, "int", "float", kCore},
    {R::kFiseg, "fiseg", 32, "int", "float", kCore},
    {R::kFioff, "fioff", 32, "int", "float", kCore},
    {R::kFoseg, "foseg", 32, "int", "float", kCore},
    {R::kFooff, "fooff", 32, "int", "float", kCore},
    {R::kFop, "fop", 32, "int", "float", kCore},
    {R::kXmm0, "xmm0", 128, "vec128", "vector", kSse},
    {R::kXmm1, "xmm1", 128, "vec128", "vector", kSse},
    {R::kXmm2, "xmm2", 128, "vec128", "vector", kSse},
    {R::kXmm3, "xmm3", 128, "vec128", "vector", kSse},
    {R::kXmm4, "xmm4", 128, "vec128", "vector", kSse},
    {R::kXmm5, "xmm5", 128, "vec128", "vector", kSse},
    {R::kXmm6, "xmm6", 128, "vec128", "vector", kSse},
    {R::kXmm7, "xmm7", 128, "vec128", "vector", kSse},
    {R::kXmm8, "xmm8", 128, "vec128", "vector", kSse},
    {R::kXmm9, "xmm9", 128, "vec128", "vector", kSse},
    {R::kXmm10, "xmm10", 128, "vec128", "vector", kSse},
    {R::kXmm11, "xmm11", 128, "vec128", "vector", kSse},
    {R::kXmm12, "xmm12", 128, "vec128", "vector", kSse},
    {R::kXmm13, "xmm13", 128, "vec128", "vector", kSse},
    {R::kXmm14, "xmm14", 128, "vec128", "vector", kSse},
    {R::kXmm15, "xmm15", 128, "vec128", "vector", kSse},
    {R::kMxcsr, "mxcsr", 32, "i386_mxcsr", "vector", kSse},
    {R::kFsBase, "fs_base", 64, "int", "system", kSegments},
    {R::kGsBase, "gs_base", 64, "int", "system", kSegments},
    {R::kKernelGsBase, "k_gs_base", 64, "int", "system", kSystem},
    {R::kCr0, "cr0", 64, "int", "system", kSystem},
    {R::kCr2, "cr2", 64, "int", "system", kSystem},
    {R::kCr3, "cr3", 64, "int", "system", kSystem},
    {R::kCr4, "cr4", 64, "int", "system", kSystem},
    {R::kCr8, "cr8", 64, "int", "system", kSystem},
    {R::kEfer, "efer", 64, "int", "system", kSystem},
}};

// The table is indexed by id: a row out of place would answer `p` with the
// wrong register.
constexpr bool in_id_order() {
  for (unsigned i = 0; i < kRegisters.size(); ++i)
    if (static_cast<unsigned>(kRegisters[i].id) != i) return false;
  return true;
}
static_assert(in_id_order(), "debug register table out of RegisterId order");

}  // namespace

std::span<const RegisterInfo> debug_registers() { return kRegisters; }

}  // namespace topolab::x86
