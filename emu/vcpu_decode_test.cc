// SPDX-License-Identifier: GPL-2.0-or-later
// Counting and blocks, as emu/vcpu_decode.cc keeps them: quanta that end
// exactly, budgets, REP strings, self-modifying code, trap sites, counted
// loops, pause loops, idle loops and the trace.
// One behaviour per test, each a tiny guest program with its instructions
// in comments (addresses on the left), in the style of Unicorn's
// tests/unit/test_x86.c; the fixtures are in emu/vcpu_test_support.h.
#include "emu/vcpu_test_support.h"

namespace topolab {
namespace {

using namespace vcpu_test;

// The counting loop several tests run: 4 + 99 * 3 + 1 = 302 instructions.
const Bytes kLoop = {
    0xb9, 0x64, 0x00, 0x00, 0x00,  // 1000: mov ecx, 100
    0x01, 0xc8,                    // 1005: add eax, ecx
    0x49,                          // 1007: dec ecx
    0x75, 0xfb,                    // 1008: jnz 0x1005
    0xf4,                          // 100a: hlt
};

constexpr uint64_t kLoopInstructions = 302;

constexpr uint64_t kLoopBody = 0x1005;

TEST_F(VcpuTest, TrapSitesSurviveFlushTranslations) {
  host.msrs = {{0, 0}};
  boot32({
      0x0f, 0x32,  // 1000: rdmsr
      0xf4,        // 1002: hlt
      0xeb, 0xfb,  // 1003: jmp 0x1000
  });
  run_expecting(VcpuExit::Reason::Halt);
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msr_reads.size(), 2u);
  EXPECT_EQ(cpu.instructions(), 5u);
}

// The trap hook stays on the address; what is there now decides.
TEST_F(VcpuTest, TrapHookIgnoresAnInstructionTheGuestRewrote) {
  host.msrs = {{kMsrApicBase, 0}};
  load(0x1020, {
                   0x0f, 0x32,  // 1020: rdmsr
                   0xc3,        // 1022: ret
               });
  boot32({
      0xbc, 0x00, 0x80, 0x00, 0x00,                          // 1000: mov esp, 0x8000
      0xb9, 0x1b, 0x00, 0x00, 0x00,                          // 1005: mov ecx, 0x1b
      0xe8, 0x11, 0x00, 0x00, 0x00,                          // 100a: call 0x1020
      0x66, 0xc7, 0x05, 0x20, 0x10, 0x00, 0x00, 0x90, 0x90,  // 100f: mov word [0x1020], 0x9090 (nop; nop)
      0xe8, 0x03, 0x00, 0x00, 0x00,                          // 1018: call 0x1020
      0xf4,                                                  // 101d: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.msr_reads.size(), 1u);
}

// --- counting -------------------------------------------------------------

TEST_F(VcpuTest, QuantumEndsExactlyAtABlockBoundary) {
  boot32(kLoop);
  // Blocks of 4, 3, 3 instructions fit in 10; the next 3 would not.
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 10);
  EXPECT_EQ(exit.rip, kLoopBody);
  EXPECT_EQ(cpu.instructions(), 10u);
  run_expecting(VcpuExit::Reason::QuantumEnd, 5);
  EXPECT_EQ(cpu.instructions(), 13u);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), kLoopInstructions);
}

TEST_F(VcpuTest, FirstBlockOfARunAlwaysRuns) {
  boot32(kLoop);
  run_expecting(VcpuExit::Reason::QuantumEnd, 1);
  EXPECT_EQ(cpu.instructions(), 4u);
  run_expecting(VcpuExit::Reason::QuantumEnd, 0);
  EXPECT_EQ(cpu.instructions(), 7u);
}

TEST_F(VcpuTest, CountsAreIdenticalAcrossTwoRuns) {
  const auto exits_of_one_run = [] {
    GuestRam ram(kRamBytes);
    FakeHost host;
    UnicornVcpu cpu(0, ram, host);
    std::copy(kLoop.begin(), kLoop.end(), ram.bytes(kEntry, kLoop.size()).begin());
    cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
    std::vector<std::pair<uint64_t, uint64_t>> exits;  // (instructions, rip)
    for (VcpuExit exit; exit.reason != VcpuExit::Reason::Halt;) {
      exit = cpu.run(7);
      exits.emplace_back(cpu.instructions(), exit.rip);
    }
    return exits;
  };
  const auto first = exits_of_one_run();
  // 4 + 3 in the first quantum, then two loop blocks per quantum; the last
  // quantum also holds the HLT block: 1 + 49 quanta.
  EXPECT_EQ(first.size(), 50u);
  EXPECT_EQ(first.back().first, kLoopInstructions);
  EXPECT_EQ(first, exits_of_one_run());
}

// --- the engine's budget (emu/unicorn/0001-instruction-budget.patch) -----

// A loop with a REP string instruction, I/O and a branch either way:
// 3 + 20 * 14 + 10 * 2 (the odd turns' INCs) + 1 = 304 instructions.
const Bytes kBudgetWorkout = {
    0xbc, 0x00, 0x80, 0x00, 0x00,  // 1000: mov esp, 0x8000
    0xb9, 0x14, 0x00, 0x00, 0x00,  // 1005: mov ecx, 20
    0xbb, 0x00, 0x50, 0x00, 0x00,  // 100a: mov ebx, 0x5000
    0x51,                          // 100f: push ecx
    0xbe, 0x00, 0x60, 0x00, 0x00,  // 1010: mov esi, 0x6000
    0x89, 0xdf,                    // 1015: mov edi, ebx
    0xb9, 0x07, 0x00, 0x00, 0x00,  // 1017: mov ecx, 7
    0xf3, 0xa4,                    // 101c: rep movsb
    0x59,                          // 101e: pop ecx
    0x89, 0xc8,                    // 101f: mov eax, ecx
    0xe6, 0x80,                    // 1021: out 0x80, al
    0xe4, 0x61,                    // 1023: in al, 0x61
    0x01, 0xc3,                    // 1025: add ebx, eax
    0xf6, 0xc1, 0x01,              // 1027: test cl, 1
    0x74, 0x02,                    // 102a: jz 0x102e
    0x43,                          // 102c: inc ebx
    0x43,                          // 102d: inc ebx
    0x49,                          // 102e: dec ecx
    0x75, 0xde,                    // 102f: jnz 0x100f
    0xf4,                          // 1031: hlt
};

constexpr uint64_t kBudgetWorkoutInstructions = 304;

struct BudgetedRun {
  uint64_t instructions = 0;
  VcpuState state{};
  std::vector<PortAccess> writes, reads;
  std::vector<uint8_t> copied;  // what the REP MOVSBs wrote
  size_t runs = 0;
};

// `code` from kEntry to its HLT in runs of `budget` instructions each.
BudgetedRun run_in_budgets(const Bytes& code, uint64_t budget) {
  GuestRam ram(kRamBytes);
  FakeHost host;
  UnicornVcpu cpu(0, ram, host);
  for (size_t i = 0; i < 16; ++i) ram.bytes(0x6000 + i, 1)[0] = static_cast<uint8_t>(0xA0 + i);
  std::copy(code.begin(), code.end(), ram.bytes(kEntry, code.size()).begin());
  cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  BudgetedRun r;
  host.cpu = &cpu;
  // Bounded: a budget that made no progress would loop here.
  for (VcpuExit exit; exit.reason != VcpuExit::Reason::Halt && r.runs < 10'000; ++r.runs) {
    exit = cpu.run(budget);
    EXPECT_TRUE(exit.reason == VcpuExit::Reason::QuantumEnd || exit.reason == VcpuExit::Reason::Halt)
        << to_string(exit.reason);
  }
  r.instructions = cpu.instructions();
  r.state = cpu.state();
  r.writes = host.port_writes;
  r.reads = host.port_reads;
  const std::span<uint8_t> copied = ram.bytes(0x5000, 0x200);
  r.copied.assign(copied.begin(), copied.end());
  return r;
}

void expect_same_run(const BudgetedRun& a, const BudgetedRun& b, uint64_t budget) {
  EXPECT_EQ(a.instructions, b.instructions) << "budget " << budget;
  EXPECT_EQ(a.writes, b.writes) << "budget " << budget;
  EXPECT_EQ(a.reads, b.reads) << "budget " << budget;
  EXPECT_EQ(a.copied, b.copied) << "budget " << budget;
  const auto regs = [](const VcpuState& s) {
    return std::array<uint64_t, 11>{s.rax, s.rbx, s.rcx, s.rdx, s.rsi, s.rdi, s.rbp, s.rsp, s.rip, s.rflags, s.cr0};
  };
  EXPECT_EQ(regs(a.state), regs(b.state)) << "budget " << budget;
}

// Exactness: whatever the budget, the retired count, the final state, the
// bytes copied and the instruction count the host sees at every IN and OUT
// equal those of one run with a budget that never ends it.
TEST_F(VcpuTest, BudgetedRunsRetireWhatOneRunDoes) {
  const BudgetedRun reference = run_in_budgets(kBudgetWorkout, kBudget);
  ASSERT_EQ(reference.runs, 1u);
  EXPECT_EQ(reference.instructions, kBudgetWorkoutInstructions);
  ASSERT_EQ(reference.writes.size(), 20u);
  // The first OUT is the 3 + 7th instruction: push .. mov eax come first.
  EXPECT_EQ(reference.writes.front().instructions, 3u + 7u);
  for (uint64_t budget : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 23, 31, 64, 100, 303})
    expect_same_run(run_in_budgets(kBudgetWorkout, budget), reference, budget);
}

// A REP string instruction is one instruction however many turns it runs,
// and a run may end between its turns: at every budget the total is the
// same, and so are the bytes it copied.
TEST_F(VcpuTest, RepStringCountsOnceAcrossBudgets) {
  const Bytes code = {
      0xbe, 0x00, 0x60, 0x00, 0x00,  // 1000: mov esi, 0x6000
      0xbf, 0x00, 0x50, 0x00, 0x00,  // 1005: mov edi, 0x5000
      0xb9, 0x0c, 0x00, 0x00, 0x00,  // 100a: mov ecx, 12
      0xf3, 0xa4,                    // 100f: rep movsb
      0xf4,                          // 1011: hlt
  };
  const BudgetedRun reference = run_in_budgets(code, kBudget);
  EXPECT_EQ(reference.instructions, 5u);
  EXPECT_EQ(reference.state.rcx, 0u);
  for (uint64_t budget = 0; budget <= 6; ++budget) expect_same_run(run_in_budgets(code, budget), reference, budget);
}

// The first block of a run runs even when it overruns the budget; what it
// overran is still owed, so its REP's next turn does not start: the run
// stops at the REP, which is not retired yet.
TEST_F(VcpuTest, AnOverrunBlockEndingInARepStopsAtTheRep) {
  boot32({
      0xbe, 0x00, 0x60, 0x00, 0x00,  // 1000: mov esi, 0x6000
      0xbf, 0x00, 0x50, 0x00, 0x00,  // 1005: mov edi, 0x5000
      0xb9, 0x05, 0x00, 0x00, 0x00,  // 100a: mov ecx, 5
      0xf3, 0xa4,                    // 100f: rep movsb
      0xf4,                          // 1011: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 1);
  EXPECT_EQ(exit.rip, 0x100fu);
  EXPECT_EQ(cpu.instructions(), 3u);
  EXPECT_EQ(cpu.state().rcx, 4u);  // one turn ran
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 5u);
}

// A REP of more than 2^26 turns (patch 0005): each turn while 2^26 or more
// are still to come is charged as an instruction, so the budget stops it
// between turns (RIP at the REP, ECX counted down), and the last 2^26 turns
// are free, as every turn of a shorter REP is. RAM large enough for the
// 2^26 + 100 bytes it reads.
class BigRamVcpuTest : public VcpuTest {
 protected:
  BigRamVcpuTest() : VcpuTest({{0, 80 << 20}}) {}
};

TEST_F(BigRamVcpuTest, RepPastTheFreeTurnsIsChargedAndStopsAtTheBudget) {
  boot32({
      0xbe, 0x00, 0x60, 0x00, 0x00,  // 1000: mov esi, 0x6000
      0xb9, 0x64, 0x00, 0x00, 0x04,  // 1005: mov ecx, 0x4000064 (2^26 + 100)
      0xf3, 0xac,                    // 100a: rep lodsb
      0xf4,                          // 100c: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 50);
  EXPECT_EQ(exit.rip, 0x100au);
  EXPECT_EQ(cpu.instructions(), 50u);
  EXPECT_EQ(cpu.state().rcx, 0x4000000u + 52) << "48 turns: one in the first block, 47 charged after it";
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 104u) << "the two MOVs, the REP, its 100 charged turns and the HLT";
  EXPECT_EQ(cpu.state().rcx, 0u);
  EXPECT_EQ(cpu.state().rsi, 0x6000u + 0x4000064);
}

// A store into the block that is running: the engine abandons the block at
// the store and runs it again from there (docs/unicorn.md), and that count
// is the same at every budget.
TEST_F(VcpuTest, SelfModifyingStoreCountsTheSameAtEveryBudget) {
  const Bytes code = {
      0xb9, 0x0a, 0x00, 0x00, 0x00,              // 1000: mov ecx, 10
      0xc6, 0x05, 0x0c, 0x10, 0x00, 0x00, 0x49,  // 1005: mov byte [0x100c], 0x49 (dec ecx, as it is)
      0x49,                                      // 100c: dec ecx
      0x75, 0xf6,                                // 100d: jnz 0x1005
      0xf4,                                      // 100f: hlt
  };
  const BudgetedRun reference = run_in_budgets(code, kBudget);
  EXPECT_EQ(reference.state.rcx, 0u);
  for (uint64_t budget : {1, 2, 3, 4, 5, 7, 11}) expect_same_run(run_in_budgets(code, budget), reference, budget);
}

// Stores to a page that holds no translated code take the engine's fast
// path (emu/unicorn/0002-store-fast-path.patch), even on an executable
// page; once code is translated there, a store into it is caught again.
// Paging off: every page is executable.
TEST_F(VcpuTest, StoresToAPageThatGetsCodeAreCaughtAgain) {
  boot32({
      0xc7, 0x05, 0x00, 0x60, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00,  // 1000: mov dword [0x6000], ... (mov eax, 1
      0xc7, 0x05, 0x04, 0x60, 0x00, 0x00, 0x00, 0xc3, 0x00, 0x00,  // 100a: mov dword [0x6004], ...  ret)
      0xbc, 0x00, 0x80, 0x00, 0x00,                                // 1014: mov esp, 0x8000
      0xbb, 0x00, 0x60, 0x00, 0x00,                                // 1019: mov ebx, 0x6000
      0xff, 0xd3,                                                  // 101e: call ebx
      0x89, 0xc6,                                                  // 1020: mov esi, eax
      0xc6, 0x05, 0x01, 0x60, 0x00, 0x00, 0x02,                    // 1022: mov byte [0x6001], 2 (mov eax, 2)
      0xff, 0xd3,                                                  // 1029: call ebx
      0xf4,                                                        // 102b: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  EXPECT_EQ(cpu.state().rax, 2u) << "the store into translated code was missed";
}

// The same through an alias: virtual 0x7000 maps physical 0x6000 too. The
// stores through 0x7000 took the fast path while the page held no code;
// translating 0x6000 must put that entry back on the slow path as well
// (tlb_protect_code in the patch), or the rewrite through the alias is
// missed and the stale `mov eax, 1` runs again.
TEST_F(VcpuTest, StoresThroughAnAliasOfACodePageAreCaught) {
  adjust_tables = [this] { ram.write<uint64_t>(kPt + 8 * 7, 0x6000 | 0x3); };
  boot64({
      0xc7, 0x04, 0x25, 0x00, 0x70, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00,  // 2001: mov dword [0x7000], ... (mov eax, 1
      0xc7, 0x04, 0x25, 0x04, 0x70, 0x00, 0x00, 0x00, 0xc3, 0x00, 0x00,  // 200c: mov dword [0x7004], ...  ret)
      0xbc, 0x00, 0x80, 0x00, 0x00,                                      // 2017: mov esp, 0x8000
      0xbb, 0x00, 0x60, 0x00, 0x00,                                      // 201c: mov ebx, 0x6000
      0xff, 0xd3,                                                        // 2021: call rbx
      0x89, 0xc6,                                                        // 2023: mov esi, eax
      0xc6, 0x04, 0x25, 0x01, 0x70, 0x00, 0x00, 0x02,                    // 2025: mov byte [0x7001], 2 (mov eax, 2)
      0xff, 0xd3,                                                        // 202d: call rbx
      0xf4,                                                              // 202f: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rsi, 1u);
  EXPECT_EQ(cpu.state().rax, 2u) << "the store through the alias was missed";
}

// `jmp .` is proved idle, not run: the run stops in front of its second
// turn with a pause-loop exit marked idle_loop, whatever the budget left.
TEST_F(VcpuTest, JumpToItselfStopsAsAnIdleLoop) {
  boot32({
      0x90,        // 1000: nop
      0xeb, 0xfe,  // 1001: jmp 0x1001
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_TRUE(exit.idle_loop);
  EXPECT_EQ(exit.rip, 0x1001u);
  EXPECT_EQ(cpu.instructions(), 2u);  // the NOP and one turn
  // The next run turns once more (a run always retires something) and stops.
  EXPECT_TRUE(run_expecting(VcpuExit::Reason::PauseLoop).idle_loop);
  EXPECT_EQ(cpu.instructions(), 3u);
}

// A loop that only reads memory, whose turn changes no register, is idle
// until someone else writes what it reads: the run stops in front of its
// second turn. Once the flag is set (another vCPU's store, between runs),
// the loop reads it and leaves.
TEST_F(VcpuTest, LoopThatOnlyReadsMemoryStopsAsAnIdleLoop) {
  boot32({
      0x90,                                      // 1000: nop
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1001: cmp dword [0x5000], 0
      0x74, 0xf7,                                // 1008: je 0x1001
      0xf4,                                      // 100a: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_TRUE(exit.idle_loop);
  EXPECT_EQ(exit.rip, 0x1001u);
  // The first block is the NOP and a first turn (it starts at 0x1000); the
  // loop's own block at 0x1001 turns once more and is proved idle.
  EXPECT_EQ(cpu.instructions(), 3u + 2u);
  EXPECT_NE(exit.detail.find("a loop that only reads memory (2 instructions at 0x1001)"), std::string::npos)
      << exit.detail;
  ram.write<uint32_t>(0x5000, 1);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 5u + 2u + 1u);
}

// The same loop with a register that moves (a count of its turns) is no
// idle loop: it runs every turn, exactly, and after two turns its block is
// translated again without the hook.
TEST_F(VcpuTest, LoopWhoseRegistersMoveIsNoIdleLoop) {
  boot32({
      0x41,                                      // 1000: inc ecx
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1001: cmp dword [0x5000], 0
      0x74, 0xf6,                                // 1008: je 0x1000
      0xf4,                                      // 100a: hlt
  });
  const VcpuExit exit = run_expecting(VcpuExit::Reason::QuantumEnd, 3000);
  EXPECT_EQ(cpu.instructions(), 3000u);
  EXPECT_EQ(cpu.state().rcx, 1000u);
  EXPECT_EQ(exit.rip, 0x1000u);
}

// A load from a device may change with time: a loop on it is never idle.
TEST_F(VcpuTest, LoopOnADeviceRegisterIsNoIdleLoop) {
  struct ZeroDevice final : MmioHandler {
    uint64_t read(uint64_t, unsigned) override { return ++reads, 0; }
    void write(uint64_t, unsigned, uint64_t) override {}
    unsigned reads = 0;
  } device;
  cpu.map_mmio(kApicBase, 4096, device);
  boot32({
      0x83, 0x3d, 0x00, 0x00, 0xe0, 0xfe, 0x00,  // 1000: cmp dword [0xfee00000], 0
      0x74, 0xf7,                                // 1007: je 0x1000
      0xf4,                                      // 1009: hlt
  });
  run_expecting(VcpuExit::Reason::QuantumEnd, 200);
  EXPECT_EQ(cpu.instructions(), 200u);
  EXPECT_EQ(device.reads, 100u);
}

TEST_F(VcpuTest, InstructionsAreExactInsideMidBlockCallbacks) {
  boot32({
      0x90,        // 1000: nop
      0x90,        // 1001: nop
      0x90,        // 1002: nop
      0xe6, 0x80,  // 1003: out 0x80, al
      0x90,        // 1005: nop
      0xe4, 0x61,  // 1006: in al, 0x61
      0x0f, 0xa2,  // 1008: cpuid
      0xf4,        // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(host.port_writes.size(), 1u);
  EXPECT_EQ(host.port_writes[0].instructions, 3u);
  ASSERT_EQ(host.port_reads.size(), 1u);
  EXPECT_EQ(host.port_reads[0].instructions, 5u);
  ASSERT_EQ(host.cpuid_queries.size(), 1u);
  EXPECT_EQ(host.cpuid_queries[0].instructions, 6u);
  EXPECT_EQ(cpu.instructions(), 8u);
}

TEST_F(VcpuTest, RepStringInstructionCountsOnce) {
  boot32({
      0xbf, 0x00, 0x40, 0x00, 0x00,  // 1000: mov edi, 0x4000
      0xb9, 0x05, 0x00, 0x00, 0x00,  // 1005: mov ecx, 5
      0xb0, 0xab,                    // 100a: mov al, 0xab
      0xf3, 0xaa,                    // 100c: rep stosb
      0xf4,                          // 100e: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.instructions(), 5u);
  EXPECT_EQ(ram.read<uint32_t>(0x4000), 0xabab'ababu);
  EXPECT_EQ(ram.read<uint8_t>(0x4004), 0xab);
}

TEST_F(VcpuTest, RepOutsCallsTheHostOncePerIterationAsOneInstruction) {
  ram.write<uint32_t>(0x4000, 0x0033'2211);
  boot32({
      0xbe, 0x00, 0x40, 0x00, 0x00,  // 1000: mov esi, 0x4000
      0xb9, 0x03, 0x00, 0x00, 0x00,  // 1005: mov ecx, 3
      0x66, 0xba, 0x80, 0x00,        // 100a: mov dx, 0x80
      0xf3, 0x6e,                    // 100e: rep outsb
      0xf4,                          // 1010: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(host.port_writes, (std::vector<PortAccess>{
                                  {0x80, 1, 0x11, 3},
                                  {0x80, 1, 0x22, 3},
                                  {0x80, 1, 0x33, 3},
                              }));
  EXPECT_EQ(cpu.instructions(), 5u);
}

// --- trace and flush ------------------------------------------------------

TEST_F(VcpuTest, TraceDisassemblesInThirtyTwoBitMode) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32({
      0xb8, 0x05, 0x00, 0x00, 0x00,  // 1000: mov eax, 5
      0x48,                          // 1005: dec eax
      0xf4,                          // 1006: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000001000: b8 05 00 00 00  mov eax, 5\n"
            "cpu0 0000000000001005: 48  dec eax\n"
            "cpu0 0000000000001006: f4  hlt\n");
}

TEST_F(VcpuTest, TraceDisassemblesInSixtyFourBitMode) {
  boot64({
      0x48, 0xff, 0xc8,  // 2001: dec rax
      0xf4,              // 2004: hlt
  });
  MemoryStream trace;
  cpu.set_trace(trace.file());
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000002001: 48 ff c8  dec rax\n"
            "cpu0 0000000000002004: f4  hlt\n");
}

// The block with the RDMSR is new, so the block hook stops the run to hook
// the RDMSR and lets Unicorn translate the block again.
TEST_F(VcpuTest, TracePrintsATrappedInstructionOnce) {
  host.msrs = {{0, 0}};
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32({
      0x31, 0xc9,  // 1000: xor ecx, ecx
      0xeb, 0x00,  // 1002: jmp 0x1004
      0x0f, 0x32,  // 1004: rdmsr
      0xf4,        // 1006: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(),
            "cpu0 0000000000001000: 31 c9  xor ecx, ecx\n"
            "cpu0 0000000000001002: eb 00  jmp 0x1004\n"
            "cpu0 0000000000001004: 0f 32  rdmsr\n"
            "cpu0 0000000000001006: f4  hlt\n");
  EXPECT_EQ(cpu.instructions(), 4u);
}

TEST_F(VcpuTest, TraceKeepsQuantumEndsExact) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  boot32(kLoop);
  while (cpu.run(7).reason == VcpuExit::Reason::QuantumEnd) {
  }
  const std::string text = trace.text();
  EXPECT_EQ(static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')), kLoopInstructions);
  EXPECT_EQ(cpu.instructions(), kLoopInstructions);
}

TEST_F(VcpuTest, TraceOffPrintsNothing) {
  MemoryStream trace;
  cpu.set_trace(trace.file());
  cpu.set_trace(nullptr);
  boot32({0xf4});  // 1000: hlt
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(trace.text(), "");
}

// Unicorn does not see host writes to code it has translated (the notes).
TEST_F(VcpuTest, FlushTranslationsPicksUpCodeTheHostRewrote) {
  boot32({
      0xb8, 0x01, 0x00, 0x00, 0x00,  // 1000: mov eax, 1
      0xf4,                          // 1005: hlt
      0xeb, 0xf8,                    // 1006: jmp 0x1000
  });
  run_expecting(VcpuExit::Reason::Halt);
  ram.write<uint32_t>(0x1001, 2);  // 1000: mov eax, 2
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u);
}

// Unicorn finds the code to drop through the guest page tables, and finds
// nothing on a page the guest has unmapped for the moment.
TEST_F(VcpuTest, FlushTranslationsReachesCodeOnAPageTheGuestUnmapped) {
  load(0x5000, {
                   0xb8, 0x01, 0x00, 0x00, 0x00,  // 5000: mov eax, 1
                   0xc3,                          // 5005: ret
               });
  boot64({
      0xbc, 0x00, 0x80, 0x00, 0x00,                                      // 2001: mov esp, 0x8000
      0xbb, 0x00, 0x50, 0x00, 0x00,                                      // 2006: mov ebx, 0x5000
      0xff, 0xd3,                                                        // 200b: call rbx
      0x48, 0xc7, 0x04, 0x25, 0x28, 0x30, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,  // 200d: mov qword [0x13028], 0 (unmap 0x5000)
      0x0f, 0x01, 0x3c, 0x25, 0x00, 0x50, 0x00, 0x00,                    // 2019: invlpg [0x5000]
      0xf4,                                                              // 2021: hlt
      0x48, 0xc7, 0x04, 0x25, 0x28, 0x30, 0x01, 0x00, 0x03, 0x50, 0x00, 0x00,  // 2022: mov qword [0x13028], 0x5003 (map it)
      0x0f, 0x01, 0x3c, 0x25, 0x00, 0x50, 0x00, 0x00,                    // 202e: invlpg [0x5000]
      0xff, 0xd3,                                                        // 2036: call rbx
      0xf4,                                                              // 2038: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  ASSERT_EQ(cpu.state().rax, 1u);
  ram.write<uint32_t>(0x5001, 2);  // 5000: mov eax, 2
  cpu.flush_translations();
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.state().rax, 2u);
  EXPECT_EQ(cpu.state().cr0 & 0x8000'0000, 0x8000'0000u) << "paging is back on";
}

TEST_F(VcpuTest, PausesAreCounted) {
  boot32({
      0xb9, 0x0a, 0x00, 0x00, 0x00,  // 1000: mov ecx, 10
      0xf3, 0x90,                    // 1005: pause
      0x49,                          // 1007: dec ecx
      0x75, 0xfb,                    // 1008: jnz 0x1005
      0xf4,                          // 100a: hlt
  });
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.pauses(), 10u);
  EXPECT_EQ(cpu.instructions(), 1u + 10 * 3 + 1);
}

// Pause-loop exiting (emu/pause_loop.h): a gap of 8 and a window of 64
// instructions, small enough for short snippets.
constexpr PauseLoopExiting kTestPle{.gap_instructions = 8, .window_instructions = 64};

TEST_F(VcpuTest, PauseLoopAtAFixedPointExitsAtThePause) {
  ram.write<uint32_t>(0x5000, 1);  // the lock, held
  boot32({
      0xf3, 0x90,                          // 1000: pause
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1002: cmp dword [0x5000], 0
      0x75, 0xf5,                          // 1009: jne 0x1000
      0xf4,                                // 100b: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_EQ(exit.rip, 0x1000u) << "at the PAUSE, not yet retired";
  EXPECT_FALSE(exit.loop_reads_time);
  // The window (64) plus one more iteration to prove the fixed point.
  EXPECT_GE(cpu.instructions(), 64u);
  EXPECT_LE(cpu.instructions(), 64u + 2 * 3);
  EXPECT_EQ(cpu.instructions(), 3 * cpu.pauses()) << "the PAUSE it stopped at is not counted yet";
  // Released: it leaves the loop, and PLE off runs it to the end as before.
  ram.write<uint32_t>(0x5000, 0);
  run_expecting(VcpuExit::Reason::Halt);
}

TEST_F(VcpuTest, PauseLoopWithoutPleRunsEveryInstruction) {
  ram.write<uint32_t>(0x5000, 1);
  boot32({
      0xf3, 0x90,                                // 1000: pause
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,  // 1002: cmp dword [0x5000], 0
      0x75, 0xf5,                                // 1009: jne 0x1000
      0xf4,                                      // 100b: hlt
  });
  const VcpuExit exit = cpu.run(3000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd);
  EXPECT_EQ(cpu.instructions(), 3000u);
}

// Counting up to a bound is not a CountedLoop (vcpu_blocks.h) either: every
// iteration runs.
TEST_F(VcpuTest, CountedPauseLoopIsNoFixedPoint) {
  boot32({
      0x31, 0xf6,                          // 1000: xor esi, esi
      0xf3, 0x90,                          // 1002: pause
      0x46,                                // 1004: inc esi
      0x81, 0xfe, 0x00, 0x01, 0x00, 0x00,  // 1005: cmp esi, 256
      0x75, 0xf5,                          // 100b: jne 0x1002
      0xf4,                                // 100d: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  run_expecting(VcpuExit::Reason::Halt);
  EXPECT_EQ(cpu.pauses(), 256u) << "ESI changes every iteration: every one runs";
  EXPECT_EQ(cpu.instructions(), 1u + 4 * 256 + 1);
}

TEST_F(VcpuTest, PauseLoopThatStoresIsNoSpin) {
  ram.write<uint32_t>(0x5000, 1);
  boot32({
      0xf3, 0x90,                                            // 1000: pause
      0xc7, 0x05, 0x00, 0x51, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,  // 1002: mov dword [0x5100], 7
      0x83, 0x3d, 0x00, 0x50, 0x00, 0x00, 0x00,              // 100c: cmp dword [0x5000], 0
      0x75, 0xeb,                                            // 1013: jne 0x1000
      0xf4,                                                  // 1015: hlt
  });
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = cpu.run(3000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd) << "a store in the loop: no pause-loop exit";
}

TEST_F(VcpuTest, PauseLoopOnTheTscExitsAndSaysItReadsTime) {
  boot32({
      0xbb, 0xff, 0xff, 0xff, 0x7f,  // 1000: mov ebx, 0x7fffffff (a far deadline)
      0xf3, 0x90,                    // 1005: pause
      0x0f, 0x31,                    // 1007: rdtsc
      0x39, 0xd8,                    // 1009: cmp eax, ebx
      0x72, 0xf8,                    // 100b: jb 0x1005
      0xf4,                          // 100d: hlt
  });
  for (uint64_t t = 0; t < 1000; ++t) host.tsc_values.push_back(t * 100);  // climbing
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = run_expecting(VcpuExit::Reason::PauseLoop);
  EXPECT_EQ(exit.rip, 0x1005u);
  EXPECT_TRUE(exit.loop_reads_time) << "EAX and EDX differ, by the TSC alone";
}

TEST_F(VcpuTest, PauseLoopOnTheTscWithACounterIsNoFixedPoint) {
  boot32({
      0xbb, 0xff, 0xff, 0xff, 0x7f,  // 1000: mov ebx, 0x7fffffff
      0xf3, 0x90,                    // 1005: pause
      0x46,                          // 1007: inc esi (a counter beside the TSC)
      0x0f, 0x31,                    // 1008: rdtsc
      0x39, 0xd8,                    // 100a: cmp eax, ebx
      0x72, 0xf7,                    // 100c: jb 0x1005
      0xf4,                          // 100e: hlt
  });
  for (uint64_t t = 0; t < 1000; ++t) host.tsc_values.push_back(t * 100);
  cpu.set_pause_loop_exiting(kTestPle);
  const VcpuExit exit = cpu.run(2000);
  EXPECT_EQ(exit.reason, VcpuExit::Reason::QuantumEnd);
}

// Counted loops (vcpu_blocks.h CountedLoop) run their turns by arithmetic:
// the counts, the registers and the stops are those of every turn run.
TEST_F(VcpuTest, CountedLoopRunsAllItsTurnsExactly) {
  boot32({
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0x49,                          // 1005: dec ecx
      0x75, 0xfd,                    // 1006: jnz 0x1005
      0xf4,                          // 1008: hlt
  });
  run_expecting(VcpuExit::Reason::Halt, 10'000'000);
  EXPECT_EQ(cpu.instructions(), 1u + 2 * 1'000'000 + 1);
  EXPECT_EQ(cpu.state().rcx, 0u);
}

// The same loop under the trace, which runs every turn, is the reference.
struct CountedLoopRun {
  uint64_t instructions, rcx, rip, pauses;
  bool operator==(const CountedLoopRun&) const = default;
};

CountedLoopRun run_counted_loop(bool traced, uint64_t budget) {
  GuestRam ram{kRamBytes};
  FakeHost host;
  UnicornVcpu cpu{0, ram, host};
  host.cpu = &cpu;
  const Bytes code = {
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0xf3, 0x90,                    // 1005: pause
      0x83, 0xe9, 0x01,              // 1007: sub ecx, 1
      0x73, 0xf9,                    // 100a: jae 0x1005 (ecx + 1 turns)
      0xf4,                          // 100c: hlt
  };
  std::copy(code.begin(), code.end(), ram.bytes(kEntry, code.size()).begin());
  cpu.enter_multiboot(kEntry, kMultibootMagic, kMultibootInfo);
  MemoryStream trace;
  if (traced) cpu.set_trace(trace.file());
  EXPECT_EQ(cpu.run(budget).reason, VcpuExit::Reason::QuantumEnd);
  const VcpuState s = cpu.state();
  return {cpu.instructions(), s.rcx, s.rip, cpu.pauses()};
}

TEST(VcpuCountedLoop, StopsWhereTheBudgetEndsAsEveryTurnWould) {
  for (uint64_t budget : {1u, 2u, 5u, 1000u, 1001u, 1002u, 30'000u}) {
    const CountedLoopRun skipped = run_counted_loop(false, budget), every = run_counted_loop(true, budget);
    EXPECT_EQ(skipped, every) << "budget " << budget << ": " << skipped.instructions << " vs " << every.instructions;
  }
}

TEST_F(VcpuTest, CountedLoopWithSubAndJaeRunsCounterPlusOneTurns) {
  boot32({
      0xb9, 0x40, 0x42, 0x0f, 0x00,  // 1000: mov ecx, 1000000
      0xf3, 0x90,                    // 1005: pause
      0x83, 0xe9, 0x01,              // 1007: sub ecx, 1
      0x73, 0xf9,                    // 100a: jae 0x1005
      0xf4,                          // 100c: hlt
  });
  run_expecting(VcpuExit::Reason::Halt, 10'000'000);
  EXPECT_EQ(cpu.instructions(), 1u + 3 * 1'000'001 + 1);
  EXPECT_EQ(cpu.state().rcx & 0xFFFF'FFFF, 0xFFFF'FFFFu) << "the last SUB borrowed";
  EXPECT_EQ(cpu.pauses(), 1'000'001u);
}

// Issue 14, F3: Unicorn's code hook passes the size 0xF1F1F1F1 ("unknown")
// for an instruction whose translation raised an exception (here ud2); the
// trace decodes the length itself instead of reading 4 GiB of RAM (which
// threw, and ended the run as an internal error).
TEST_F(VcpuTest, TraceOfAnInstructionOfUnknownSizeDecodesItsLength) {
  MemoryStream trace;
  boot32({
      0x90,        // 1000: nop
      0x0f, 0x0b,  // 1001: ud2
  });
  cpu.set_trace(trace.file());
  const VcpuExit exit = run_expecting(VcpuExit::Reason::TripleFault);
  EXPECT_NE(trace.text().find("0000000000001001: 0f 0b  ud2"), std::string::npos) << trace.text();
  EXPECT_NE(exit.detail.find("ud2"), std::string::npos) << exit.detail;
}

}  // namespace
}  // namespace topolab
