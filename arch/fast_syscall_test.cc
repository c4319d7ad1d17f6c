// SPDX-License-Identifier: GPL-2.0-or-later
#include "arch/fast_syscall.h"

#include <gtest/gtest.h>

#include "arch/x86_test_printers.h"

namespace topolab::x86 {
namespace {

// A Linux-like MSR setup: kernel CS 0x10 / SS 0x18, user SS 0x2b / CS 0x33.
FastCallMsrs linux_msrs() {
  return FastCallMsrs{.efer = kEferSce | kEferLme | kEferLma,
                      .star = (uint64_t{0x23} << 48) | (uint64_t{0x10} << 32),
                      .lstar = 0xffffffff81000000,
                      .cstar = 0xffffffff81000100,
                      .fmask = kFlagTf | kFlagDf | kFlagIf | kFlagNt | kFlagAc | kFlagIopl,
                      .sysenter_cs = 0x10,
                      .sysenter_esp = 0xfffffe0000001000,
                      .sysenter_eip = 0xffffffff81000200};
}

FastCallState user64() {
  return FastCallState{.mode = CpuMode::kLong64,
                       .cpl = 3,
                       .cs = {0x33, flat_code(3, true)},
                       .ss = {0x2b, flat_data(3)},
                       .rip = 0x401000,
                       .instruction_length = 2,
                       .rsp = 0x7ffc0000,
                       .rflags = kFlagReserved1 | kFlagIf | kFlagCf | kFlagZf | kFlagTf};
}

FastCallState expect_state(const FastCallOutcome& o) {
  if (const auto* f = std::get_if<Fault>(&o)) ADD_FAILURE() << "fault " << describe(Event::from_fault(*f));
  return std::holds_alternative<FastCallState>(o) ? std::get<FastCallState>(o) : FastCallState{};
}

Fault expect_fault(const FastCallOutcome& o) {
  EXPECT_TRUE(std::holds_alternative<Fault>(o));
  return std::holds_alternative<Fault>(o) ? std::get<Fault>(o) : Fault{};
}

TEST(Syscall, LongModeEntry) {
  const FastCallState s = expect_state(syscall(user64(), linux_msrs(), CpuVendor::kIntel));
  EXPECT_EQ(s.rcx, 0x401002u);
  EXPECT_EQ(s.r11, user64().rflags);
  EXPECT_EQ(s.rip, 0xffffffff81000000u);
  EXPECT_EQ(s.cpl, 0u);
  EXPECT_EQ(s.cs, (Segment{0x10, flat_code(0, true)}));
  EXPECT_EQ(s.ss, (Segment{0x18, flat_data(0)}));
  EXPECT_EQ(s.rsp, user64().rsp);  // SYSCALL does not switch stacks
}

// SDM: RFLAGS <- RFLAGS AND NOT(IA32_FMASK), then RF cleared; nothing else.
struct FmaskCase {
  uint64_t rflags, fmask, want;
};

class SyscallFmask : public testing::TestWithParam<FmaskCase> {};

TEST_P(SyscallFmask, ClearsExactlyTheMaskedBits) {
  FastCallState u = user64();
  u.rflags = GetParam().rflags;
  FastCallMsrs m = linux_msrs();
  m.fmask = GetParam().fmask;
  EXPECT_EQ(expect_state(syscall(u, m, CpuVendor::kIntel)).rflags, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Sdm, SyscallFmask,
    testing::Values(
        // Arithmetic flags survive a mask that does not name them (QEMU TCG clears them).
        FmaskCase{0x2 | kFlagCf | kFlagPf | kFlagAf | kFlagZf | kFlagSf | kFlagOf | kFlagIf, kFlagIf,
                  0x2 | kFlagCf | kFlagPf | kFlagAf | kFlagZf | kFlagSf | kFlagOf},
        FmaskCase{0x2 | kFlagIf | kFlagTf | kFlagDf | kFlagAc, kFlagTf | kFlagDf | kFlagIf | kFlagAc, 0x2},
        FmaskCase{0x2 | kFlagIf | kFlagRf, 0, 0x2 | kFlagIf},  // RF always cleared
        FmaskCase{0x2 | kFlagCf, kFlagCf | kFlagReserved1, 0x2},  // bit 1 stays set
        FmaskCase{0x2 | kFlagId | kFlagZf, kFlagZf, 0x2 | kFlagId}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(Syscall, UdWithoutSce) {
  FastCallMsrs m = linux_msrs();
  m.efer &= ~kEferSce;
  EXPECT_EQ(expect_fault(syscall(user64(), m, CpuVendor::kIntel)).vector, kInvalidOpcode);
}

TEST(Syscall, CompatibilityModeIsUdOnIntelCstarOnAmd) {
  FastCallState u = user64();
  u.mode = CpuMode::kCompatibility;
  u.cs = {0x23, flat_code(3, false)};
  EXPECT_EQ(expect_fault(syscall(u, linux_msrs(), CpuVendor::kIntel)).vector, kInvalidOpcode);
  const FastCallState s = expect_state(syscall(u, linux_msrs(), CpuVendor::kAmd));
  EXPECT_EQ(s.rip, 0xffffffff81000100u);
  EXPECT_EQ(s.mode, CpuMode::kLong64);
  EXPECT_EQ(s.r11, u.rflags);
}

TEST(Syscall, LegacyModeIsUdOnIntel) {
  FastCallState u = user64();
  u.mode = CpuMode::kProtected;
  EXPECT_EQ(expect_fault(syscall(u, linux_msrs(), CpuVendor::kIntel)).vector, kInvalidOpcode);
}

TEST(Syscall, SsTakesStarPlus8AsWritten) {
  FastCallMsrs m = linux_msrs();
  m.star = uint64_t{0x13} << 32;  // RPL 3 in STAR[33:32]
  const FastCallState s = expect_state(syscall(user64(), m, CpuVendor::kIntel));
  EXPECT_EQ(s.cs.selector, 0x10);
  EXPECT_EQ(s.ss.selector, 0x1b);
}

TEST(Sysret, RoundTripTo64BitUser) {
  const FastCallState k = expect_state(syscall(user64(), linux_msrs(), CpuVendor::kIntel));
  FastCallState back = expect_state(sysret(k, linux_msrs(), true));
  EXPECT_EQ(back.rip, 0x401002u);
  EXPECT_EQ(back.rflags, user64().rflags);
  EXPECT_EQ(back.cs, (Segment{0x33, flat_code(3, true)}));
  EXPECT_EQ(back.ss, (Segment{0x2b, flat_data(3)}));
  EXPECT_EQ(back.cpl, 3u);
}

TEST(Sysret, NonCanonicalRcxIsGp0AndRing3IsGp0) {
  FastCallState k = expect_state(syscall(user64(), linux_msrs(), CpuVendor::kIntel));
  k.rcx = 0x0000800000000000;
  EXPECT_EQ(expect_fault(sysret(k, linux_msrs(), true)), (Fault{.vector = kGeneralProtection, .error_code = 0u}));
  EXPECT_EQ(expect_fault(sysret(user64(), linux_msrs(), true)), (Fault{.vector = kGeneralProtection, .error_code = 0u}));
}

TEST(Sysenter, ZeroSysenterCsIsGp0) {
  FastCallMsrs m = linux_msrs();
  for (uint64_t cs : {0x0, 0x3}) {  // [15:2] == 0 whatever the RPL bits
    m.sysenter_cs = cs;
    EXPECT_EQ(expect_fault(sysenter(user64(), m, CpuVendor::kIntel)),
              (Fault{.vector = kGeneralProtection, .error_code = 0u}));
  }
}

TEST(Sysenter, ProtectedModeEntry) {
  FastCallState u{.mode = CpuMode::kProtected,
                  .cpl = 3,
                  .cs = {0x73, flat_code(3, false)},
                  .ss = {0x7b, flat_data(3)},
                  .rip = 0x8048000,
                  .rsp = 0xbffff000,
                  .rflags = kFlagReserved1 | kFlagIf | kFlagRf | kFlagCf};
  FastCallMsrs m = linux_msrs();
  m.sysenter_cs = 0x61;  // RPL bits dropped
  m.sysenter_esp = 0xfffff000;
  m.sysenter_eip = 0xc1000000;
  const FastCallState s = expect_state(sysenter(u, m, CpuVendor::kIntel));
  EXPECT_EQ(s.cs, (Segment{0x60, flat_code(0, false)}));
  EXPECT_EQ(s.ss, (Segment{0x68, flat_data(0)}));
  EXPECT_EQ(s.rip, 0xc1000000u);
  EXPECT_EQ(s.rsp, 0xfffff000u);
  EXPECT_EQ(s.rflags, kFlagReserved1 | kFlagCf);  // VM, IF, RF cleared
  EXPECT_EQ(s.cpl, 0u);
}

TEST(Sysenter, LongModeEntryIs64BitCodeOnIntelUdOnAmd) {
  const FastCallState s = expect_state(sysenter(user64(), linux_msrs(), CpuVendor::kIntel));
  EXPECT_TRUE(s.cs.desc.l);
  EXPECT_FALSE(s.cs.desc.db);
  EXPECT_EQ(s.rip, 0xffffffff81000200u);
  EXPECT_EQ(s.rsp, 0xfffffe0000001000u);
  EXPECT_EQ(expect_fault(sysenter(user64(), linux_msrs(), CpuVendor::kAmd)).vector, kInvalidOpcode);
}

TEST(Sysenter, RealModeIsGp0) {
  FastCallState u = user64();
  u.mode = CpuMode::kReal;
  EXPECT_EQ(expect_fault(sysenter(u, linux_msrs(), CpuVendor::kIntel)).vector, kGeneralProtection);
}

TEST(Sysexit, SelectorsFromSysenterCs) {
  FastCallState k = expect_state(sysenter(user64(), linux_msrs(), CpuVendor::kIntel));
  k.rcx = 0x7ffc0000;
  k.rdx = 0x401002;
  const FastCallState s64 = expect_state(sysexit(k, linux_msrs(), true));
  EXPECT_EQ(s64.cs.selector, 0x10 + 32 + 3);
  EXPECT_EQ(s64.ss.selector, 0x10 + 40 + 3);
  EXPECT_EQ(s64.rip, 0x401002u);
  EXPECT_EQ(s64.rsp, 0x7ffc0000u);
  const FastCallState s32 = expect_state(sysexit(k, linux_msrs(), false));
  EXPECT_EQ(s32.cs.selector, 0x10 + 16 + 3);
  EXPECT_EQ(s32.mode, CpuMode::kCompatibility);
  EXPECT_EQ(expect_fault(sysexit(user64(), linux_msrs(), false)).vector, kGeneralProtection);  // CPL 3
}

}  // namespace
}  // namespace topolab::x86
