// SPDX-License-Identifier: GPL-2.0-or-later
// The debugger's hooks on one vCPU (emu/vcpu_debug.cc): breakpoints, steps
// and watchpoints stop exactly where gdb expects, the run goes on with the
// rest of its budget as if it had never stopped, and the registers read as
// gdb's target description lays them out.
#include "emu/vcpu_test_support.h"

namespace topolab::vcpu_test {
namespace {

using x86::RegisterId;

// 1000: mov eax, 1; 1005: mov ebx, 2; 100a: mov ecx, 3; 100f: hlt
const Bytes kThreeMoves = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xbb, 0x02, 0x00, 0x00, 0x00,
                           0xb9, 0x03, 0x00, 0x00, 0x00, 0xf4};

DebugPoints breakpoints_at(std::set<uint64_t> addresses) {
  DebugPoints points;
  points.breakpoints = std::move(addresses);
  return points;
}
DebugPoints watching(DebugWatch watch) {
  DebugPoints points;
  points.watches = {watch};
  return points;
}

uint64_t read64(Vcpu& cpu, RegisterId id) {
  std::array<uint8_t, 16> bytes{};
  EXPECT_TRUE(cpu.read_register(id, std::span(bytes).first(x86::register_bytes(id))));
  uint64_t value = 0;
  for (unsigned i = 0; i < std::min(8u, x86::register_bytes(id)); ++i) value |= uint64_t{bytes[i]} << (8 * i);
  return value;
}

TEST_F(VcpuTest, BreakpointStopsInFrontOfItsInstructionAndTheRunGoesOn) {
  boot32(kThreeMoves);
  cpu.set_debug_points(breakpoints_at({0x1005}));
  uint64_t ebx_at_stop = 99, eax_at_stop = 0;
  host.on_debug_stop = [&](const DebugStop&) {
    eax_at_stop = read64(cpu, RegisterId::kRax);
    ebx_at_stop = read64(cpu, RegisterId::kRbx);
  };
  const VcpuExit exit = run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);
  EXPECT_EQ(host.debug_stops[0].stop.kind, DebugStop::Kind::kBreakpoint);
  EXPECT_EQ(host.debug_stops[0].instructions, 1u);
  EXPECT_EQ(host.debug_stops[0].linear_rip, 0x1005u);
  EXPECT_EQ(eax_at_stop, 1u);
  EXPECT_EQ(ebx_at_stop, kMultibootInfo);  // as the loader left it
  EXPECT_EQ(exit.rip, 0x1010u);
  EXPECT_EQ(cpu.instructions(), 4u);
  EXPECT_EQ(cpu.state().rcx, 3u);
}

TEST_F(VcpuTest, BreakpointSetAfterItsCodeRanStillStops) {
  // 1000: xor eax, eax; 1002: inc eax; 1003: cmp eax, 3; 1006: jne 1002; 1008: hlt
  boot32({0x31, 0xc0, 0x40, 0x83, 0xf8, 0x03, 0x75, 0xfa, 0xf4});
  host.on_debug_stop = [&](const DebugStop&) { cpu.set_debug_points(DebugPoints{}); };
  // The first turn translates the loop's block; then the breakpoint comes.
  run_expecting(VcpuExit::Reason::QuantumEnd, 3);
  EXPECT_EQ(cpu.instructions(), 4u);
  cpu.set_debug_points(breakpoints_at({0x1003}));
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);
  EXPECT_EQ(host.debug_stops[0].instructions, 5u);  // the second turn's CMP
  EXPECT_EQ(cpu.state().rax, 3u);
}

// What a run retires, where it stops, at every budget from 1 to 40, with a
// breakpoint in the loop and without: a debugger must not move the
// schedule, the first block of a run (which may overrun its budget)
// included.
TEST_F(VcpuTest, BudgetedRunsRetireTheSameWithABreakpoint) {
  // 1000: mov ecx, 5; 1005: inc eax; 1006: inc eax; 1007: dec ecx; 1008: jnz 1005; 100a: hlt
  const Bytes loop = {0xb9, 0x05, 0x00, 0x00, 0x00, 0x40, 0x40, 0x49, 0x75, 0xfb, 0xf4};
  for (uint64_t budget = 1; budget <= 40; ++budget) {
    std::vector<std::pair<uint64_t, uint64_t>> runs[2];
    for (int debugged = 0; debugged < 2; ++debugged) {
      GuestRam local_ram{kRamBytes};
      FakeHost local_host;
      UnicornVcpu local{0, local_ram, local_host};
      local_host.cpu = &local;
      std::copy(loop.begin(), loop.end(), local_ram.bytes(kEntry, loop.size()).begin());
      local.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
      if (debugged) local.set_debug_points(breakpoints_at({0x1006}));
      for (int i = 0; i < 100; ++i) {
        const VcpuExit exit = local.run(budget);
        runs[debugged].emplace_back(local.instructions(), exit.rip);
        if (exit.reason == VcpuExit::Reason::Halt) break;
      }
      if (debugged) {
        EXPECT_EQ(local_host.debug_stops.size(), 5u) << "budget " << budget;
      }
    }
    EXPECT_EQ(runs[0], runs[1]) << "budget " << budget;
  }
}

TEST_F(VcpuTest, StepStopsInFrontOfEachNextInstruction) {
  boot32(kThreeMoves);
  cpu.set_debug_step(true);
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(host.debug_stops[i].stop.kind, DebugStop::Kind::kStep);
    EXPECT_EQ(host.debug_stops[i].instructions, i + 1);
    EXPECT_EQ(host.debug_stops[i].linear_rip, 0x1005u + 5 * i);
  }
}

TEST_F(VcpuTest, StepTurnedOffAtAStopLetsTheRunGoOn) {
  boot32(kThreeMoves);
  cpu.set_debug_step(true);
  host.on_debug_stop = [&](const DebugStop&) { cpu.set_debug_step(false); };
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);
  EXPECT_EQ(host.debug_stops[0].linear_rip, 0x1005u);
  EXPECT_EQ(cpu.instructions(), 4u);
}

// Where a replay stops for reverse execution (emu/machine_debug.h).
TEST_F(VcpuTest, StopAtACountStopsInFrontOfThatInstructionOnly) {
  boot32(kThreeMoves);
  cpu.set_debug_stop_at(2);
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);
  EXPECT_EQ(host.debug_stops[0].stop.kind, DebugStop::Kind::kStep);
  EXPECT_EQ(host.debug_stops[0].instructions, 2u);
  EXPECT_EQ(host.debug_stops[0].linear_rip, 0x100au);
  EXPECT_EQ(cpu.instructions(), 4u);
}

TEST_F(VcpuTest, WriteWatchStopsRightAfterTheStore) {
  // 1000: mov dword [0x5000], 7; 100a: mov eax, [0x5000]; 100f: hlt
  boot32({0xc7, 0x05, 0x00, 0x50, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0xa1, 0x00, 0x50, 0x00, 0x00, 0xf4});
  cpu.set_debug_points(watching({.address = 0x5002, .physical = 0x5002, .length = 1, .reads = false, .writes = true}));
  uint32_t value_at_stop = 0;
  host.on_debug_stop = [&](const DebugStop&) { value_at_stop = ram.read<uint32_t>(0x5000); };
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);  // the load is no write
  EXPECT_EQ(host.debug_stops[0].stop.kind, DebugStop::Kind::kWatch);
  EXPECT_TRUE(host.debug_stops[0].stop.write);
  EXPECT_EQ(host.debug_stops[0].stop.address, 0x5002u);
  EXPECT_EQ(host.debug_stops[0].instructions, 1u);
  EXPECT_EQ(host.debug_stops[0].linear_rip, 0x100au);
  EXPECT_EQ(value_at_stop, 7u);
  EXPECT_EQ(cpu.state().rax, 7u);
}

TEST_F(VcpuTest, ReadWatchStopsAfterTheLoadOnly) {
  boot32({0xc7, 0x05, 0x00, 0x50, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0xa1, 0x00, 0x50, 0x00, 0x00, 0xf4});
  cpu.set_debug_points(watching({.address = 0x5000, .physical = 0x5000, .length = 4, .reads = true, .writes = false}));
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.debug_stops.size(), 1u);
  EXPECT_FALSE(host.debug_stops[0].stop.write);
  EXPECT_EQ(host.debug_stops[0].linear_rip, 0x100fu);
  EXPECT_EQ(host.debug_stops[0].instructions, 2u);
}

TEST_F(VcpuTest, BreakpointOnATrapSiteStopsOnceAndTheTrapRunsOnce) {
  // 1000: pause; 1002: hlt (PAUSE is a trap site the vCPU counts)
  boot32({0xf3, 0x90, 0xf4});
  cpu.set_debug_points(breakpoints_at({0x1000}));
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.debug_stops.size(), 1u);
  EXPECT_EQ(cpu.pauses(), 1u);
  EXPECT_EQ(cpu.instructions(), 2u);
}

TEST_F(VcpuTest, RegistersReadAsGdbLaysThemOut) {
  boot64({0x48, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // mov rax, 0x1122334455667788
          0xf4});
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(read64(cpu, RegisterId::kRax), 0x1122334455667788u);
  EXPECT_EQ(read64(cpu, RegisterId::kRip), kSnippet64 + 11);
  EXPECT_EQ(read64(cpu, RegisterId::kCs), 0x08u);
  std::array<uint8_t, 4> mxcsr = {0x80, 0x1f, 0, 0};
  EXPECT_TRUE(cpu.write_register(RegisterId::kMxcsr, mxcsr));
  EXPECT_EQ(read64(cpu, RegisterId::kMxcsr), 0x1f80u);
  std::array<uint8_t, 16> xmm1{};
  xmm1[0] = 0x5a, xmm1[15] = 0xa5;
  EXPECT_TRUE(cpu.write_register(RegisterId::kXmm1, xmm1));
  std::array<uint8_t, 16> back{};
  EXPECT_TRUE(cpu.read_register(RegisterId::kXmm1, back));
  EXPECT_EQ(back, xmm1);
  EXPECT_EQ(read64(cpu, RegisterId::kCr3), kPml4);
  EXPECT_NE(read64(cpu, RegisterId::kEfer) & 0x400, 0u);  // EFER.LMA
  EXPECT_NE(read64(cpu, RegisterId::kCr0) & 0x8000'0000, 0u);
  std::array<uint8_t, 8> rbx = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(cpu.write_register(RegisterId::kRbx, rbx));
  EXPECT_EQ(cpu.state().rbx, 0x0807060504030201u);
  std::array<uint8_t, 8> cr3{};
  EXPECT_FALSE(cpu.write_register(RegisterId::kCr3, cr3));  // mode and paging registers are refused
  EXPECT_EQ(cpu.translate_linear(0x5123), 0x5123u);
  EXPECT_EQ(cpu.translate_linear(kNotPresent), std::nullopt);
}

}  // namespace
}  // namespace topolab::vcpu_test
