// SPDX-License-Identifier: GPL-2.0-or-later
// Stuck loops of any shape on the engine (vcpu_loop_watch.cc): which runs
// are watched, what they prove, and loops that must not be called stuck.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using vcpu_test::VcpuTest;

constexpr uint64_t kSlice = 1000;

// Runs slices of kSlice instructions until one ends otherwise, at most `runs`.
VcpuExit run_until_not_quantum_end(UnicornVcpu& cpu, unsigned runs) {
  VcpuExit exit;
  for (unsigned i = 0; i < runs; ++i) {
    exit = cpu.run(kSlice);
    if (exit.reason != VcpuExit::Reason::QuantumEnd) break;
  }
  return exit;
}

// `1: nop; jmp 2f; 2: jmp 1b`: two blocks, registers that never move. After
// two quiet runs the third is watched and stops in front of the loop; the
// next run, at its head, proves it again in one turn and says that it did
// nothing else (spin_recheck).
TEST_F(VcpuTest, ALoopOverTwoBlocksIsProvedIdleAfterTwoQuietRuns) {
  boot32({
      0x90,        // 1000: nop
      0xeb, 0x00,  // 1001: jmp 1003
      0xeb, 0xfb,  // 1003: jmp 1000
  });
  run_expecting(VcpuExit::Reason::QuantumEnd, kSlice);
  run_expecting(VcpuExit::Reason::QuantumEnd, kSlice);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop, kSlice);
  EXPECT_TRUE(exit.idle_loop);
  EXPECT_FALSE(exit.loop_state_moves);
  EXPECT_NE(exit.detail.find("a loop of 2 blocks (0x1000, 0x1003; 3 instructions a turn)"), std::string::npos)
      << exit.detail;
  const uint64_t before = cpu.instructions();
  const VcpuExit again = run_expecting(VcpuExit::Reason::PauseLoop, kSlice);
  EXPECT_EQ(again.rip, exit.rip);
  EXPECT_TRUE(again.spin_recheck);
  EXPECT_LE(cpu.instructions() - before, 9u) << "a recheck runs a turn or two, not a slice";
}

// `1: call f; jmp 1b` with `f: ret`: the CALL stores the same return
// address at the same place every turn; the bytes around RSP are compared
// with the registers, and the loop is a fixed point. (In 64-bit mode: the
// stack's base is 0 there; Multiboot's flat SS has no GDT to read it from.)
TEST_F(VcpuTest, ACallAndReturnLoopIsProvedIdle) {
  boot64({
      0xbc, 0x00, 0x80, 0x00, 0x00,  // +0: mov esp, 0x8000
      0xeb, 0x01,                    // +5: jmp +8
      0xc3,                          // +7: ret
      0xe8, 0xfa, 0xff, 0xff, 0xff,  // +8: call +7
      0xeb, 0xf9,                    // +d: jmp +8
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 8);
  ASSERT_EQ(exit.reason, VcpuExit::Reason::PauseLoop) << exit.detail;
  EXPECT_FALSE(exit.loop_state_moves);
  EXPECT_NE(exit.detail.find("stores only what its stack already holds"), std::string::npos) << exit.detail;
  EXPECT_EQ(cpu.state().rsp, 0x8000u);
}

// `push eax; inc eax; pop ebx; jmp`: the stack bytes and the registers move.
TEST_F(VcpuTest, APushOfAMovingRegisterIsNotStuck) {
  boot32({
      0xbc, 0x00, 0x80, 0x00, 0x00,  // 1000: mov esp, 0x8000
      0x50,                          // 1005: push eax
      0x40,                          // 1006: inc eax
      0x5b,                          // 1007: pop ebx
      0xeb, 0xfb,                    // 1008: jmp 1005
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 20);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << exit.detail;
}

// `1: inc eax; jmp 1b`: a moving loop with no way out (loop_state_moves).
TEST_F(VcpuTest, AClosedLoopWhoseRegistersMoveHasNoWayOut) {
  boot32({
      0x40,        // 1000: inc eax
      0xeb, 0xfd,  // 1001: jmp 1000
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 8);
  ASSERT_EQ(exit.reason, VcpuExit::Reason::PauseLoop) << exit.detail;
  EXPECT_TRUE(exit.idle_loop);
  EXPECT_TRUE(exit.loop_state_moves);
  EXPECT_NE(exit.detail.find("has no way out"), std::string::npos) << exit.detail;
}

// A loop that leaves after 4,096 turns (`add eax, 1; jnc` from 0xfffff000,
// over two blocks): its registers move and it has a way out. It is never
// called stuck, and it leaves exactly when it would.
TEST_F(VcpuTest, ALoopThatLeavesAfterManyTurnsIsNeverStuck) {
  boot32({
      0xb8, 0x00, 0xf0, 0xff, 0xff,  // 1000: mov eax, 0xfffff000
      0x83, 0xc0, 0x01,              // 1005: add eax, 1
      0x73, 0x01,                    // 1008: jnc 100b
      0xf4,                          // 100a: hlt
      0xeb, 0xf8,                    // 100b: jmp 1005
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 100);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::Halt) << exit.detail;
  EXPECT_EQ(cpu.instructions(), 1u + 4096u * 3);
}

// A closed loop that loads through a register that moves could fault when
// the address leaves mapped memory: no way out is not proved.
TEST_F(VcpuTest, AClosedLoopThatLoadsThroughAMovingRegisterIsNotStuck) {
  boot32({
      0x8b, 0x18,        // 1000: mov ebx, [eax]
      0x83, 0xc0, 0x04,  // 1002: add eax, 4
      0xeb, 0xf9,        // 1005: jmp 1000
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 20);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << exit.detail;
}

// A loop that reads the TSC and puts every register back (`rdtsc; xor eax,
// eax; xor edx, edx; jmp`) is no fixed point: a turn that reads the time
// may take another path at another time.
TEST_F(VcpuTest, ALoopThatReadsTheTimeIsNoFixedPoint) {
  boot32({
      0x0f, 0x31,  // 1000: rdtsc
      0x31, 0xc0,  // 1002: xor eax, eax
      0x31, 0xd2,  // 1004: xor edx, edx
      0xeb, 0xf8,  // 1006: jmp 1000
  });
  for (uint64_t t = 0; t < 8 * kSlice; ++t) host.tsc_values.push_back(t * 100);
  const VcpuExit exit = run_until_not_quantum_end(cpu, 8);
  // It has no way out: stuck all the same, but never as a fixed point.
  ASSERT_EQ(exit.reason, VcpuExit::Reason::PauseLoop) << exit.detail;
  EXPECT_TRUE(exit.loop_state_moves);
}

// A store in the loop (a counter in memory that another vCPU may read): no
// proof, ever.
TEST_F(VcpuTest, ALoopThatStoresACounterIsNotStuck) {
  boot32({
      0xff, 0x05, 0x00, 0x50, 0x00, 0x00,  // 1000: inc dword [0x5000]
      0xeb, 0xf8,                          // 1006: jmp 1000
  });
  const VcpuExit exit = run_until_not_quantum_end(cpu, 20);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << exit.detail;
  EXPECT_EQ(ram.read<uint32_t>(0x5000), 20u * kSlice / 2);
}

}  // namespace
}  // namespace topolab
