// SPDX-License-Identifier: GPL-2.0-or-later
// Interrupt and exception delivery (emu/vcpu_inject.cc): gates, privilege
// changes, NMI blocking, shadows and the interrupt window.
// One behaviour per test, each a tiny guest program with its instructions
// in comments (addresses on the left), in the style of Unicorn's
// tests/unit/test_x86.c; the fixtures are in emu/vcpu_test_support.h.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using namespace vcpu_test;

constexpr uint8_t kTrapGate = 0xF;

constexpr uint64_t kIf = 0x200;

// --- interrupt and exception injection ------------------------------------

// The start of every 32-bit injection snippet: its own GDT (IRETD reloads
// CS), the IDT at kIdt, a stack below 0x8000.
const Bytes kProtectedModeSetup = {
    0x0f, 0x01, 0x15, 0x20, 0x31, 0x00, 0x00,  // 1000: lgdt [0x3120]
    0x0f, 0x01, 0x1d, 0x28, 0x31, 0x00, 0x00,  // 1007: lidt [0x3128]
    0xbc, 0x00, 0x80, 0x00, 0x00,              // 100e: mov esp, 0x8000
};

const Bytes kHandlerIncEcx32 = {
    0x41,  // inc ecx
    0xcf,  // iretd
};

Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class InjectionTest : public VcpuTest {
 protected:
  // Vector 0x20 goes to `inc ecx; iretd`; `code` runs after kProtectedModeSetup.
  void boot_with_handler_for_0x20(const Bytes& code) {
    write_gdt32();
    write_idtr(0x7FF);
    set_gate32(0x20, 0x1100);
    load(0x1100, kHandlerIncEcx32);
    boot32(kProtectedModeSetup + code);
  }

  // kProtectedModeSetup, then `sti; hlt; inc ebx; hlt`, run to the first HLT.
  void halt_in_protected_mode_with_interrupts_on() {
    write_gdt32();
    write_idtr(0x7FF);
    boot32(kProtectedModeSetup + Bytes{
                                     0xfb,  // 1013: sti
                                     0xf4,  // 1014: hlt
                                     0x43,  // 1015: inc ebx
                                     0xf4,  // 1016: hlt
                                 });
    const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
    ASSERT_EQ(exit.rip, 0x1015u);
    ASSERT_EQ(cpu.instructions(), 5u);
  }
};

// Also: an interrupt delivered while halted resumes execution at the
// handler, and IRETD returns to the instruction after the HLT.
TEST_F(InjectionTest, ProtectedModeInterruptGateClearsIfAndIretdReturnsAfterHlt) {
  set_gate32(0x20, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.interrupt_window_open());
  const uint64_t rflags = cpu.state().rflags;

  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rip, 0x1100u);
  EXPECT_EQ(s.rflags & kIf, 0u) << "interrupt gate clears IF";
  EXPECT_EQ(s.rsp, 0x8000u - 12);
  EXPECT_EQ(stack32(0), 0x1015u) << "EIP";
  EXPECT_EQ(stack32(4), 0x08u) << "CS";
  EXPECT_EQ(stack32(8), rflags) << "EFLAGS";
  EXPECT_EQ(cpu.instructions(), 5u) << "a delivery is not an instruction";
  EXPECT_FALSE(cpu.interrupt_window_open());

  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(exit.rip, 0x1017u);
  s = cpu.state();
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8000u);
  EXPECT_EQ(s.rflags, rflags) << "IRETD restores IF";
  EXPECT_EQ(s.cs, 0x08);
  EXPECT_EQ(cpu.instructions(), 9u);
}

TEST_F(InjectionTest, NmiBlocksFurtherNmisUntilTheHandlersIret) {
  set_gate32(2, 0x1100);
  load(0x1100, kHandlerIncEcx32);  // inc ecx; iretd
  halt_in_protected_mode_with_interrupts_on();
  EXPECT_FALSE(cpu.nmi_blocked());
  const Injection injection = cpu.inject_nmi();
  ASSERT_TRUE(injection) << injection.detail;
  EXPECT_TRUE(cpu.nmi_blocked()) << "SDM 6.7.1: blocked from delivery to the next IRET";
  run_expecting(VcpuExit::Reason::Halt);  // the handler's IRETD returns to the HLT after it
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_FALSE(cpu.nmi_blocked()) << "the IRETD unblocked NMIs";
}

TEST_F(VcpuTest, StopWhenInterruptibleStopsOnceStiTakesEffect) {
  boot32({
      0xfa,  // 1000: cli
      0x90,  // 1001: nop
      0xfb,  // 1002: sti (its block ends here)
      0x90,  // 1003: nop (in the STI shadow: a block of its own)
      0x90,  // 1004: nop  <- the first point an interrupt can be taken
      0xf4,  // 1005: hlt
  });
  cpu.stop_when_interruptible(true);
  VcpuExit exit = cpu.run(kBudget);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << exit.detail;
  EXPECT_EQ(exit.rip, 0x1004u);
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_TRUE(cpu.interrupt_window_open());
  cpu.stop_when_interruptible(false);
  exit = cpu.run(kBudget);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::Halt);
}

TEST_F(InjectionTest, ProtectedModeTrapGateKeepsIf) {
  set_gate32(0x21, 0x1100, kTrapGate);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
}

// #GP pushes its error code below EIP; the handler pops it before IRETD.
// Injected on top of a pending interrupt frame: the #GP handler runs first,
// returns into the interrupt handler, which returns to the guest.
TEST_F(InjectionTest, NestedInjectionWithAnErrorCode) {
  set_gate32(0x21, 0x1100, kTrapGate);
  load(0x1100, kHandlerIncEcx32);
  set_gate32(13, 0x1120);
  load(0x1120, {
                   0x5a,  // 1120: pop edx
                   0xcf,  // 1121: iretd
               });
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  const Injection gp = cpu.inject_exception(13, 0x18);
  ASSERT_TRUE(gp) << gp.detail;
  EXPECT_EQ(cpu.state().rsp, 0x8000u - 12 - 16);
  EXPECT_EQ(stack32(0), 0x18u) << "error code";
  EXPECT_EQ(stack32(4), 0x1100u) << "returns into the first handler";
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rdx, 0x18u);
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8000u);
  EXPECT_EQ(cpu.instructions(), 5u + 2 + 2 + 2);
}

TEST_F(InjectionTest, UdPushesNoErrorCode) {
  set_gate32(6, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  halt_in_protected_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_exception(6, std::nullopt));
  EXPECT_EQ(cpu.state().rsp, 0x8000u - 12);
  EXPECT_EQ(stack32(0), 0x1015u);
}

TEST_F(InjectionTest, NoUsableHandlerLeavesTheVcpuUnchanged) {
  set_gate32(0x22, 0x1100);
  ram.write<uint64_t>(kIdt + 8 * 0x22, ram.read<uint64_t>(kIdt + 8 * 0x22) & ~(uint64_t{1} << 47));  // P = 0
  set_gate32(0x23, 0x1100, 0x6);  // 16-bit interrupt gate
  set_gate32(0x24, 0x1100, 0x5);  // task gate
  set_gate32(0x25, 0x1100, kInterruptGate, 0x10);  // a data segment
  halt_in_protected_mode_with_interrupts_on();
  const VcpuState before = cpu.state();
  const auto failure = [&](Injection injection) {
    EXPECT_FALSE(injection);
    return injection.detail;
  };
  // SDM 6.12, 6.13: a not-present gate is #NP(vector*8+2+EXT), a gate to a
  // data segment #GP(selector+EXT); with no handlers for those, #DF, then a
  // triple fault. 16-bit and task gates are not modelled.
  const std::string np = failure(cpu.inject_interrupt(0x22));
  EXPECT_NE(np.find("while delivering #NP(0x113) while delivering INTR 0x22"), std::string::npos) << np;
  const std::string gate16 = failure(cpu.inject_interrupt(0x23));
  EXPECT_NE(gate16.find("16-bit"), std::string::npos) << gate16;
  const std::string task = failure(cpu.inject_interrupt(0x24));
  EXPECT_NE(task.find("task gate"), std::string::npos) << task;
  const std::string data = failure(cpu.inject_interrupt(0x25));
  EXPECT_NE(data.find("#GP(0x11) while delivering INTR 0x25"), std::string::npos) << data;
  const VcpuState after = cpu.state();
  EXPECT_EQ(after.rip, before.rip);
  EXPECT_EQ(after.rsp, before.rsp);
  EXPECT_EQ(after.rflags, before.rflags);
}

TEST_F(VcpuTest, GateBeyondTheIdtLimitIsNoUsableHandler) {
  write_gdt32();
  write_idtr(8 * 2 - 1);  // vectors 0 and 1
  boot32(kProtectedModeSetup + Bytes{0xf4});  // 1013: hlt
  run_expecting(VcpuExit::Reason::Halt);
  const Injection nmi = cpu.inject_interrupt(2);
  EXPECT_FALSE(nmi);
  EXPECT_NE(nmi.detail.find("#GP(0x13) while delivering INTR 0x2"), std::string::npos) << nmi.detail;
  EXPECT_EQ(cpu.state().rip, 0x1014u);
}

// --- the STI / MOV SS shadow ---------------------------------------------

// Unicorn ends a block right after STI: a budget that ends at the STI stops
// in front of the HLT, and the window stays closed for the HLT. The machine
// runs once more; the HLT executes; the interrupt then wakes it.
TEST_F(InjectionTest, StiShadowDefersTheInterruptPastTheHlt) {
  write_gdt32();
  write_idtr(0x7FF);
  set_gate32(0x20, 0x1100);
  load(0x1100, kHandlerIncEcx32);
  boot32(kProtectedModeSetup + Bytes{
                                   0xfb,  // 1013: sti
                                   0xf4,  // 1014: hlt
                                   0x43,  // 1015: inc ebx
                                   0xf4,  // 1016: hlt
                               });
  const VcpuExit after_sti = run_expecting(VcpuExit::Reason::QuantumEnd, 4);
  EXPECT_EQ(after_sti.rip, 0x1014u);
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  EXPECT_FALSE(cpu.interrupt_window_open()) << "the HLT is in the STI shadow";

  const VcpuExit halted = run_expecting(VcpuExit::Reason::Halt, 1);
  EXPECT_EQ(halted.rip, 0x1015u);
  EXPECT_TRUE(cpu.interrupt_window_open());
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rcx, 1u);
  EXPECT_EQ(cpu.state().rbx, kMultibootInfo + 1);
}

TEST_F(VcpuTest, MovSsEndsItsBlockAndShadowsTheNextInstruction) {
  write_gdt32();
  boot32({
      0x0f, 0x01, 0x15, 0x20, 0x31, 0x00, 0x00,  // 1000: lgdt [0x3120]
      0xfb,                                      // 1007: sti
      0x66, 0xb8, 0x10, 0x00,                    // 1008: mov ax, 0x10
      0x8e, 0xd0,                                // 100c: mov ss, ax
      0x90,                                      // 100e: nop
      0xf4,                                      // 100f: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 4);
  EXPECT_EQ(exit.rip, 0x100eu);
  EXPECT_FALSE(cpu.interrupt_window_open());
  // Unicorn translates the shadowed instruction as a block of its own, so
  // the window opens exactly one instruction later.
  EXPECT_EQ(run_expecting(VcpuExit::Reason::QuantumEnd, 1).rip, 0x100fu);
  EXPECT_EQ(cpu.instructions(), 5u);
  EXPECT_TRUE(cpu.interrupt_window_open());
}

TEST_F(VcpuTest, WindowIsClosedWithIfClear) {
  boot32({0xf4});  // 1000: hlt
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_FALSE(cpu.interrupt_window_open());
}

// --- long mode ------------------------------------------------------------

class LongModeInjectionTest : public VcpuTest {
 protected:
  // For the ring-change tests: a GDT at 0x3200 (GDTR at 0x3280) with ring 0
  // code 0x08 and data 0x10, ring 3 data 0x18 and code 0x20, and a 64-bit
  // TSS at 0x28 whose RSP0 and IST1 are given; pages 0x2000 and 0x7000 (and
  // the tables above them) user-accessible.
  static constexpr uint64_t kRingGdt = 0x3200, kRingGdtr = 0x3280, kRingTss = 0x6000;
  void set_up_ring_three(uint64_t rsp0, uint64_t ist1 = 0) {
    adjust_tables = [this] {
      for (uint64_t table : {kPml4, kPdpt, kPd}) ram.write<uint64_t>(table, ram.read<uint64_t>(table) | 0x4);  // U/S
      for (uint64_t page : {0x2000u, 0x7000u}) ram.write<uint64_t>(kPt + 8 * (page >> 12), page | 0x7);  // user
    };
    ram.write<uint64_t>(kRingGdt + 0x08, 0x00AF'9A00'0000'FFFF);  // 64-bit code, DPL 0
    ram.write<uint64_t>(kRingGdt + 0x10, 0x00CF'9200'0000'FFFF);  // data, DPL 0
    ram.write<uint64_t>(kRingGdt + 0x18, 0x00CF'F200'0000'FFFF);  // data, DPL 3
    ram.write<uint64_t>(kRingGdt + 0x20, 0x00AF'FA00'0000'FFFF);  // 64-bit code, DPL 3
    ram.write<uint64_t>(kRingGdt + 0x28, 0x0000'8900'0000'0067 | (kRingTss << 16));  // 64-bit TSS, available
    ram.write<uint64_t>(kRingGdt + 0x30, 0);
    ram.write<uint16_t>(kRingGdtr, 7 * 8 - 1);
    ram.write<uint32_t>(kRingGdtr + 2, kRingGdt);
    ram.write<uint64_t>(kRingTss + 0x04, rsp0);  // RSP0
    ram.write<uint64_t>(kRingTss + 0x24, ist1);  // IST1
  }
  // `code`, then IRETQ to ring 3 at 0x2200 with RSP 0x8000 (SS 0x1b, CS
  // 0x23, RFLAGS 2), from ring 0's own stack at 0x8800.
  static Bytes then_iretq_to_ring_three(Bytes code) {
    const Bytes iretq = {
        0x48, 0xc7, 0xc4, 0x00, 0x88, 0x00, 0x00,  // mov rsp, 0x8800 (ring 0's own stack)
        0x6a, 0x1b,                                // push 0x1b (SS, RPL 3)
        0x68, 0x00, 0x80, 0x00, 0x00,              // push 0x8000 (RSP)
        0x6a, 0x02,                                // push 2 (RFLAGS)
        0x6a, 0x23,                                // push 0x23 (CS, RPL 3)
        0x68, 0x00, 0x22, 0x00, 0x00,              // push 0x2200 (RIP)
        0x48, 0xcf,                                // iretq
    };
    code.insert(code.end(), iretq.begin(), iretq.end());
    return code;
  }
  void halt_in_long_mode_with_interrupts_on() {
    write_idtr(0xFFF);
    load(0x2100, {
                     0x48, 0xff, 0xc1,  // 2100: inc rcx
                     0x48, 0xcf,        // 2103: iretq
                 });
    load(0x2120, {
                     0x5a,        // 2120: pop rdx
                     0x48, 0xcf,  // 2121: iretq
                 });
    boot64({
        0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
        0x48, 0xc7, 0xc4, 0x08, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8008 (not 16-byte aligned)
        0xfb,                                            // 2010: sti
        0xf4,                                            // 2011: hlt
        0x48, 0xff, 0xc3,                                // 2012: inc rbx
        0xf4,                                            // 2015: hlt
    });
    const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
    ASSERT_EQ(exit.rip, 0x2012u);
    start_ = cpu.instructions();
    rcx_ = cpu.state().rcx;
  }
  uint64_t start_ = 0;
  uint64_t rcx_ = 0;
};

TEST_F(LongModeInjectionTest, InterruptGateAlignsTheStackPushesSsRspAndIretqReturns) {
  set_gate64(0x20, 0x2100);
  halt_in_long_mode_with_interrupts_on();
  const uint64_t rflags = cpu.state().rflags;
  ASSERT_TRUE(cpu.interrupt_window_open());
  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rip, 0x2100u);
  EXPECT_EQ(s.rflags & kIf, 0u);
  EXPECT_EQ(s.rsp, 0x8000u - 40) << "aligned down to 16, then five quadwords";
  EXPECT_EQ(stack64(0), 0x2012u) << "RIP";
  EXPECT_EQ(stack64(8), 0x08u) << "CS";
  EXPECT_EQ(stack64(16), rflags) << "RFLAGS";
  EXPECT_EQ(stack64(24), 0x8008u) << "RSP";
  EXPECT_EQ(stack64(32), 0x10u) << "SS";
  EXPECT_EQ(cpu.instructions(), start_);

  run_expecting(VcpuExit::Reason::Halt);
  s = cpu.state();
  EXPECT_EQ(s.rcx, rcx_ + 1);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8008u);
  EXPECT_NE(s.rflags & kIf, 0u) << "IRETQ restores IF";
  EXPECT_EQ(cpu.instructions(), start_ + 2 + 2);
}

TEST_F(LongModeInjectionTest, TrapGateKeepsIfAndGpPushesItsErrorCode) {
  set_gate64(0x21, 0x2100, kTrapGate);
  set_gate64(13, 0x2120);
  halt_in_long_mode_with_interrupts_on();
  ASSERT_TRUE(cpu.inject_interrupt(0x21));
  EXPECT_NE(cpu.state().rflags & kIf, 0u);
  ASSERT_TRUE(cpu.inject_exception(13, 0));
  EXPECT_EQ(stack64(0), 0u) << "error code";
  EXPECT_EQ(stack64(8), 0x2100u);
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rdx, 0u);
  EXPECT_EQ(s.rcx, rcx_ + 1);
  EXPECT_EQ(s.rbx, kMultibootInfo + 1);
  EXPECT_EQ(s.rsp, 0x8008u);
}

TEST_F(LongModeInjectionTest, IstTakesTheStackFromTheTss) {
  // TR.base is what LTR loaded; a TSS descriptor at GDT 0x18 (SDM Vol. 3A 7.2.3).
  halt_in_long_mode_with_interrupts_on();
  set_gate64(0x20, 0x2100, kInterruptGate, 1);
  // No TSS was loaded (TR limit 0): IST1 is outside it, #TS(TR + EXT)
  // (SDM 6.14.5); the ring changes through a real TSS are in the
  // higher_half testcase and event_delivery_test.
  const Injection injection = cpu.inject_interrupt(0x20);
  EXPECT_FALSE(injection);
  EXPECT_NE(injection.detail.find("#TS(0x1) while delivering INTR 0x20"), std::string::npos) << injection.detail;
  return;
  EXPECT_EQ(cpu.state().rsp, 0x7000u - 40);
  EXPECT_EQ(stack64(24), 0x8008u) << "the interrupted RSP";
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsp, 0x8008u);
}

TEST_F(LongModeInjectionTest, NotPresentGateNamesVectorGateAndMode) {
  halt_in_long_mode_with_interrupts_on();
  const Injection injection = cpu.inject_exception(13, 0);
  EXPECT_FALSE(injection);
  EXPECT_NE(injection.detail.find("while delivering #DF(0x0) while delivering #GP(0x0)"), std::string::npos) << injection.detail;
}

TEST_F(VcpuTest, RealModeInterruptGoesThroughTheIvtAndIretReturns) {
  ram.write<uint16_t>(0x20 * 4, 0x0100);      // IVT[0x20]: IP
  ram.write<uint16_t>(0x20 * 4 + 2, 0x0900);  //            CS (handler at 0x9100)
  load(0x9100, {
                   0x41,  // 9100: inc cx
                   0xcf,  // 9101: iret
               });
  load(0x8000, {
                   0xbc, 0x00, 0x70,  // 8000: mov sp, 0x7000
                   0xfb,              // 8003: sti
                   0xf4,              // 8004: hlt
                   0x43,              // 8005: inc bx
                   0xf4,              // 8006: hlt
               });
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 5u);
  ASSERT_TRUE(cpu.interrupt_window_open());
  const uint64_t flags = cpu.state().rflags;
  const Injection injection = cpu.inject_interrupt(0x20);
  ASSERT_TRUE(injection) << injection.detail;
  VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x0900);
  EXPECT_EQ(s.rip, 0x100u);
  EXPECT_EQ(s.rflags & kIf, 0u);
  EXPECT_EQ(s.rsp, 0x7000u - 6);
  EXPECT_EQ(ram.read<uint16_t>(0x6FFA), 0x0005) << "IP";
  EXPECT_EQ(ram.read<uint16_t>(0x6FFC), 0x0800) << "CS";
  EXPECT_EQ(ram.read<uint16_t>(0x6FFE), flags) << "FLAGS";
  EXPECT_EQ(run_expecting(VcpuExit::Reason::Halt).rip, 7u);
  s = cpu.state();
  EXPECT_EQ(s.cs, 0x0800);
  EXPECT_EQ(s.rcx, 1u);
  EXPECT_EQ(s.rbx, 1u);
  EXPECT_EQ(s.rsp, 0x7000u);
  EXPECT_EQ(s.rflags, flags);
  EXPECT_EQ(cpu.instructions(), 3u + 2 + 2);
}

TEST_F(VcpuTest, RealModeIvtEntryBeyondTheLimitIsNoUsableHandler) {
  load(0x8000, {0xf4});  // 8000: hlt
  cpu.reset_for_init();
  cpu.start_at_sipi(0x08);
  run_expecting(VcpuExit::Reason::Halt);
  const Injection injection = cpu.inject_exception(13, 0);  // IVT limit 0xFFFF covers all 256; #GP is fine
  EXPECT_TRUE(injection) << injection.detail;
}

// `sti; mwait`: MWAIT sits in the STI shadow, so no interrupt may come in
// between (the guest would sleep with its wakeup already taken).
TEST_F(InjectionTest, StiShadowCoversAnMwaitUntilItIsRetired) {
  boot_with_handler_for_0x20(Bytes{
                                   0xfb,              // 1013: sti
                                   0x0f, 0x01, 0xc9,  // 1014: mwait
                                   0xf4,              // 1017: hlt
                               });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Mwait);
  EXPECT_EQ(exit.rip, 0x1014u);
  EXPECT_FALSE(cpu.interrupt_window_open()) << "MWAIT is in the STI shadow";
  cpu.retire_emulated_instruction();
  EXPECT_TRUE(cpu.interrupt_window_open());
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  const VcpuExit halted = run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(halted.rip, 0x1018u) << "IRET returns past the MWAIT";
}

TEST_F(InjectionTest, MonitorAfterAnInterruptHandlerReturnedStops) {
  boot_with_handler_for_0x20(Bytes{
                                   0xfb,                          // 1013: sti
                                   0xf4,                          // 1014: hlt
                                   0xfa,                          // 1015: cli
                                   0xb8, 0x40, 0x50, 0x00, 0x00,  // 1016: mov eax, 0x5040
                                   0x0f, 0x01, 0xc8,              // 101b: monitor
                                   0xf4,                          // 101e: hlt
                               });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_TRUE(cpu.inject_interrupt(0x20));
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Monitor);
  EXPECT_EQ(exit.rip, 0x101bu);
}

// The #PF error code is the SDM's, computed by the walker, and the handler
// gets CR2 and RIP exact: a write to a not-present page is 0x2; a read
// through an entry with a reserved bit set is P|RSVD = 0x9 (QEMU 7.2 says
// 0x8: docs/deviations.md).
TEST_F(LongModeInjectionTest, PageFaultHandlerGetsTheSdmErrorCodeAndCr2) {
  write_idtr(0xFFF);
  set_gate64(14, 0x2100);
  load(0x2100, {
                   0x5b,                    // 2100: pop rbx (the error code)
                   0x0f, 0x20, 0xd1,        // 2101: mov rcx, cr2
                   0x48, 0x8b, 0x14, 0x24,  // 2104: mov rdx, [rsp] (the saved RIP)
                   0xf4,                    // 2108: hlt
               });
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0xc6, 0x04, 0x25, 0x10, 0x00, 0x08, 0x00, 0x01,  // 2010: mov byte [0x80010], 1 (not present)
  });
  run_expecting(VcpuExit::Reason::Halt);
  VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx, 0x2u) << "W/R = 1, P = 0";
  EXPECT_EQ(s.rcx, kNotPresent + 0x10);
  EXPECT_EQ(s.rdx, 0x2010u) << "the faulting instruction";

}

TEST_F(LongModeInjectionTest, ReservedBitPageFaultCarriesPresentAsTheSdmSays) {
  write_idtr(0xFFF);
  set_gate64(14, 0x2100);
  load(0x2100, {
                   0x5b,              // 2100: pop rbx (the error code)
                   0x0f, 0x20, 0xd1,  // 2101: mov rcx, cr2
                   0xf4,              // 2104: hlt
               });
  // Present, but bit 51 is reserved: MAXPHYADDR is 36 when the host reports
  // no CPUID leaf 0x80000008 (the fake host reports none).
  ram.write<uint64_t>(kPt + 8 * (kNotPresent >> 12), kNotPresent | (uint64_t{1} << 51) | 0x3);
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0x48, 0x8b, 0x04, 0x25, 0x20, 0x00, 0x08, 0x00,  // 2010: mov rax, [0x80020]
  });
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.rbx, 0x9u) << "P | RSVD (QEMU 7.2 reports 0x8)";
  EXPECT_EQ(s.rcx, kNotPresent + 0x20);
}

// Ring 3 -> 0 -> 3 -> 0: IRETQ to ring 3 (the engine's own), INT 0x80
// through a DPL-3 gate onto RSP0 from the TSS, IRETQ back, and INT 0x81
// through a gate with IST1.
TEST_F(LongModeInjectionTest, RingThreeInterruptsSwitchToRsp0AndIstAndIretqReturns) {
  constexpr uint64_t kRsp0 = 0x9000, kIst1 = 0xA000;
  set_up_ring_three(kRsp0, kIst1);
  write_idtr(0xFFF);
  set_gate64(0x80, 0x2100, kInterruptGate, 0, 3);
  set_gate64(0x81, 0x2120, kInterruptGate, 1, 3);
  load(0x2100, {
                   0x48, 0x8b, 0x5c, 0x24, 0x08,  // 2100: mov rbx, [rsp+8] (saved CS)
                   0x48, 0x89, 0xe2,              // 2105: mov rdx, rsp
                   0xf4,                          // 2108: hlt
                   0x48, 0xcf,                    // 2109: iretq
               });
  load(0x2120, {
                   0x48, 0x89, 0xe2,  // 2120: mov rdx, rsp
                   0xf4,              // 2123: hlt
               });
  load(0x2200, {
                   0xcd, 0x80,  // 2200: int 0x80 (ring 3)
                   0xcd, 0x81,  // 2202: int 0x81
               });
  boot64(then_iretq_to_ring_three({
      0x0f, 0x01, 0x14, 0x25, 0x80, 0x32, 0x00, 0x00,  // 2001: lgdt [0x3280]
      0x66, 0xb8, 0x28, 0x00,                          // 2009: mov ax, 0x28
      0x0f, 0x00, 0xd8,                                // 200d: ltr ax
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2010: lidt [0x3128]
  }));
  run_expecting(VcpuExit::Reason::Halt);
  VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x08) << "the handler runs in ring 0";
  EXPECT_EQ(s.rbx, 0x23u) << "the saved CS is ring 3's";
  EXPECT_EQ(s.rdx, kRsp0 - 40) << "on RSP0 from the TSS: SS, RSP, RFLAGS, CS, RIP";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 8), 0x1bu) << "SS";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 16), 0x8000u) << "RSP";
  EXPECT_EQ(ram.read<uint64_t>(kRsp0 - 40), 0x2202u) << "RIP after INT";

  run_expecting(VcpuExit::Reason::Halt);  // IRETQ to ring 3, then INT 0x81
  s = cpu.state();
  EXPECT_EQ(s.cs, 0x08);
  EXPECT_EQ(s.rdx, kIst1 - 40) << "on IST1";
  EXPECT_EQ(ram.read<uint64_t>(kIst1 - 32), 0x23u) << "CS: it came from ring 3 again";
  EXPECT_EQ(ram.read<uint64_t>(kIst1 - 40), 0x2204u);
}

// Event delivery from ring 3 and IRETQ back keep FS and GS: in 64-bit mode
// their bases come from IA32_FS_BASE/IA32_GS_BASE, which neither touches
// (SDM Vol. 3A 6.14.2; only SWAPGS exchanges GS's), whatever the selectors.
TEST_F(LongModeInjectionTest, RingChangesKeepTheGsAndFsBases) {
  set_up_ring_three(0x9000);
  ram.write<uint64_t>(0x5008, 0xABCD);      // what GS:8 holds (GS base 0x5000)
  ram.write<uint64_t>(0x5110, 0x1234);      // what FS:0x10 holds (FS base 0x5100)
  write_idtr(0xFFF);
  set_gate64(0x80, 0x2100, kInterruptGate, 0, 3);
  load(0x2100, {
                   0x65, 0x48, 0x8b, 0x34, 0x25, 0x08, 0x00, 0x00, 0x00,  // 2100: mov rsi, gs:[8]
                   0x64, 0x48, 0x8b, 0x3c, 0x25, 0x10, 0x00, 0x00, 0x00,  // 2109: mov rdi, fs:[0x10]
                   0xf4,                                                  // 2112: hlt
               });
  load(0x2200, {
                   0xcd, 0x80,  // 2200: int 0x80 (ring 3)
               });
  boot64(then_iretq_to_ring_three({
      0x0f, 0x01, 0x14, 0x25, 0x80, 0x32, 0x00, 0x00,  // 2001: lgdt [0x3280]
      0x66, 0xb8, 0x28, 0x00,                          // 2009: mov ax, 0x28
      0x0f, 0x00, 0xd8,                                // 200d: ltr ax
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2010: lidt [0x3128]
      0xb9, 0x01, 0x01, 0x00, 0xc0,                    // 2018: mov ecx, 0xc0000101 (IA32_GS_BASE)
      0xb8, 0x00, 0x50, 0x00, 0x00,                    // 201d: mov eax, 0x5000
      0x31, 0xd2,                                      // 2022: xor edx, edx
      0x0f, 0x30,                                      // 2024: wrmsr
      0xb9, 0x00, 0x01, 0x00, 0xc0,                    // 2026: mov ecx, 0xc0000100 (IA32_FS_BASE)
      0xb8, 0x00, 0x51, 0x00, 0x00,                    // 202b: mov eax, 0x5100
      0x0f, 0x30,                                      // 2030: wrmsr
  }));
  run_expecting(VcpuExit::Reason::Halt);
  const VcpuState s = cpu.state();
  EXPECT_EQ(s.cs, 0x08) << "the handler runs in ring 0";
  EXPECT_EQ(s.rsi, 0xABCDu) << "GS base kept";
  EXPECT_EQ(s.rdi, 0x1234u) << "FS base kept";
}

// Two contributory faults give #DF (SDM table 6-5), delivered to its gate
// with error code 0.
TEST_F(LongModeInjectionTest, GeneralProtectionWithANotPresentGateIsADoubleFault) {
  write_idtr(0xFFF);
  set_gate64(8, 0x2100);  // #DF; #GP (13) has no gate
  load(0x2100, {
                   0x5b,  // 2100: pop rbx (the error code)
                   0xf4,  // 2101: hlt
               });
  boot64({
      0x0f, 0x01, 0x1c, 0x25, 0x28, 0x31, 0x00, 0x00,  // 2001: lidt [0x3128]
      0x48, 0xc7, 0xc4, 0x00, 0x80, 0x00, 0x00,        // 2009: mov rsp, 0x8000
      0x48, 0xc7, 0xc3, 0xff, 0xff, 0x00, 0x00,        // 2010: mov rbx, 0xffff
      0xb9, 0xff, 0xff, 0xff, 0x4b,                    // 2017: mov ecx, 0x4bffffff
      0x0f, 0x32,                                      // 201c: rdmsr (unknown: #GP(0))
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rbx, 0u) << "#DF pushes 0";
  EXPECT_EQ(cpu.state().rip, 0x2102u);
}

}  // namespace
}  // namespace topolab
