// SPDX-License-Identifier: GPL-2.0-or-later
// The loop watch's proofs and its schedule on made-up blocks: no engine.
#include "emu/loop_watch.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

using Verdict = LoopWatch::Verdict;

// A pure block of `count` instructions at `start` that jumps to `target`
// (and, if `falls_through`, may go on to `start + 0x8`, outside the loops
// below).
WatchedBlock jumping(uint64_t start, uint64_t target, bool falls_through = false, uint32_t count = 2) {
  WatchedBlock b;
  b.start = start;
  b.instructions = count;
  b.pure = true;
  b.cannot_fault = true;
  b.successors_known = true;
  b.successors[b.successor_count++] = target;
  if (falls_through) b.successors[b.successor_count++] = start + 0x8;
  return b;
}

LoopState registers(uint64_t rax) {
  LoopState s;
  s.registers.values[SpinRegisters::kRax] = rax;
  return s;
}

// Feeds `blocks` in turn, `turns` times, with RAX from `rax_of_turn`; the
// first answer that is not Watching.
template <typename Rax>
LoopWatch::Answer run_turns(LoopWatch& watch, const std::vector<WatchedBlock>& blocks, unsigned turns,
                            Rax rax_of_turn, uint64_t* instructions_out = nullptr) {
  uint64_t instructions = 100;
  for (unsigned turn = 0; turn < turns; ++turn) {
    for (const WatchedBlock& b : blocks) {
      const LoopWatch::Answer a = watch.on_block(b, instructions, [&] { return registers(rax_of_turn(turn)); });
      if (a.verdict != Verdict::Watching) {
        if (instructions_out) *instructions_out = instructions;
        return a;
      }
      instructions += b.instructions;
    }
  }
  return {};
}

// `1: nop; jmp 2f; 2: jmp 1b`: two blocks, nothing moves: a fixed point on
// the second entry into the first block that repeats, naming both.
TEST(LoopWatch, ALoopOverTwoBlocksWhoseRegistersStayIsAFixedPoint) {
  LoopWatch watch;
  watch.start();
  const LoopWatch::Answer a =
      run_turns(watch, {jumping(0x1000, 0x1010, false, 2), jumping(0x1010, 0x1000, false, 1)}, 5, [](unsigned) { return 7; });
  EXPECT_EQ(a.verdict, Verdict::FixedPoint);
  EXPECT_EQ(a.head, 0x1000u);
  EXPECT_EQ(a.blocks, (std::vector<uint64_t>{0x1000, 0x1010}));
  EXPECT_EQ(a.turn_instructions, 3u);
  EXPECT_TRUE(watch.pure_since_start());
}

// `1: inc eax; jmp 1b` over two blocks: the registers move every turn, but
// no block has a way out: no way out, never a fixed point.
TEST(LoopWatch, AClosedLoopWhoseRegistersMoveHasNoWayOut) {
  LoopWatch watch;
  watch.start();
  const LoopWatch::Answer a =
      run_turns(watch, {jumping(0x1000, 0x1010), jumping(0x1010, 0x1000)}, 5, [](unsigned t) { return t; });
  EXPECT_EQ(a.verdict, Verdict::NoWayOut);
  EXPECT_EQ(a.head, 0x1000u);
}

// A loop that leaves after 2^32 turns (`1: add eax, 1; jnc 2f; ...; 2: jmp
// 1b`): its registers move and a branch leaves: never stuck, and the watch
// gives up within its budget of blocks.
TEST(LoopWatch, ALoopThatEndsAfterManyTurnsIsNeverStuck) {
  LoopWatch watch;
  watch.start();
  const LoopWatch::Answer a = run_turns(watch, {jumping(0x1000, 0x1010, true), jumping(0x1010, 0x1000)},
                                        LoopWatch::kMaxBlocks, [](unsigned t) { return t; });
  EXPECT_EQ(a.verdict, Verdict::GiveUp);
  EXPECT_FALSE(watch.active());
}

// The same loop with registers that stay the same: the branch out is never
// taken, and a fixed point says so.
TEST(LoopWatch, ABranchThatNeverChangesIsAFixedPoint) {
  LoopWatch watch;
  watch.start();
  const LoopWatch::Answer a =
      run_turns(watch, {jumping(0x1000, 0x1010, true), jumping(0x1010, 0x1000)}, 5, [](unsigned) { return 5; });
  EXPECT_EQ(a.verdict, Verdict::FixedPoint);
}

// A turn that reads the time is never a fixed point (its path may depend on
// what it read, whatever it leaves in the registers); without a way out it
// still has none.
TEST(LoopWatch, ALoopThatReadsTheTimeIsNoFixedPoint) {
  LoopWatch watch;
  watch.start();
  WatchedBlock reads = jumping(0x1000, 0x1010, true);
  reads.reads_time = true;
  EXPECT_EQ(run_turns(watch, {reads, jumping(0x1010, 0x1000)}, LoopWatch::kMaxBlocks, [](unsigned) { return 5; })
                .verdict,
            Verdict::GiveUp);
  watch.start();
  WatchedBlock closed = jumping(0x1000, 0x1010);
  closed.reads_time = true;
  EXPECT_EQ(run_turns(watch, {closed, jumping(0x1010, 0x1000)}, 5, [](unsigned) { return 5; }).verdict,
            Verdict::NoWayOut);
}

// A block with a side effect (a store: a counter in memory that someone
// reads) forgets everything: the loop is never proved, and the run is not
// pure.
TEST(LoopWatch, AStoreInTheLoopForgetsIt) {
  LoopWatch watch;
  watch.start();
  WatchedBlock store = jumping(0x1010, 0x1000);
  store.pure = false;
  EXPECT_EQ(run_turns(watch, {jumping(0x1000, 0x1010), store}, LoopWatch::kMaxBlocks, [](unsigned) { return 5; })
                .verdict,
            Verdict::GiveUp);
  EXPECT_FALSE(watch.pure_since_start());
}

// A device read (saw_effect) between two entries of the head: the turn
// does not count, the next one does.
TEST(LoopWatch, ADeviceReadForgetsTheTurn) {
  LoopWatch watch;
  watch.start();
  const WatchedBlock a = jumping(0x1000, 0x1010), b = jumping(0x1010, 0x1000);
  const auto same = [] { return registers(1); };
  EXPECT_EQ(watch.on_block(a, 10, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(b, 12, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(a, 14, same).verdict, Verdict::Watching);  // a repeats: the head
  EXPECT_EQ(watch.on_block(b, 16, same).verdict, Verdict::Watching);
  watch.saw_effect();
  EXPECT_EQ(watch.on_block(a, 18, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(b, 20, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(a, 22, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(b, 24, same).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(a, 26, same).verdict, Verdict::FixedPoint);
  EXPECT_FALSE(watch.pure_since_start());
}

// The engine may show the same block twice with nothing retired between
// (a stop to translate it anew): that is no turn.
TEST(LoopWatch, TheSameBlockAgainWithNothingRetiredIsNoTurn) {
  LoopWatch watch;
  watch.start();
  const WatchedBlock a = jumping(0x1000, 0x1000);
  auto moving = [n = 0]() mutable { return registers(n++); };
  EXPECT_EQ(watch.on_block(a, 10, moving).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(a, 10, moving).verdict, Verdict::Watching);
  EXPECT_EQ(watch.on_block(a, 12, moving).verdict, Verdict::Watching);
}

// No way out needs every successor inside and nothing that can fault: a
// load through a register (its address moves) or an indirect jump breaks it.
TEST(LoopWatch, NoWayOutNeedsKnownSuccessorsInsideAndNoFaultingLoad) {
  const WatchedBlock a = jumping(0x1000, 0x1010), b = jumping(0x1010, 0x1000);
  EXPECT_TRUE(LoopWatch::closed({a, b}));
  EXPECT_FALSE(LoopWatch::closed({a, jumping(0x1010, 0x2000)}));
  WatchedBlock load = b;
  load.cannot_fault = false;
  EXPECT_FALSE(LoopWatch::closed({a, load}));
  WatchedBlock indirect = b;
  indirect.successors_known = false;
  EXPECT_FALSE(LoopWatch::closed({a, indirect}));
}

// `1: call f; jmp 1b` with `f: ret`: the CALL stores its return address,
// the same one at the same place every turn. The stack window compares
// equal, so it is a fixed point; one whose window changed (a push of a
// register that moves, popped elsewhere) or that moves the stack pointer
// by other means is not.
TEST(LoopWatch, ACallAndItsReturnThatLeaveTheStackAsItWasAreAFixedPoint) {
  WatchedBlock call = jumping(0x1000, 0x1020), ret = jumping(0x1020, 0x1005), back = jumping(0x1005, 0x1000);
  call.pure = ret.pure = false;
  call.stack_only = ret.stack_only = true;
  call.stack_pushes = 1;
  ret.stack_pops = 1;
  call.cannot_fault = ret.cannot_fault = false;  // they touch memory at the stack pointer
  ret.successors_known = false;                  // RET goes where the stack says
  const auto state = [](std::optional<uint8_t> stack_byte) {
    LoopState s = registers(1);
    if (stack_byte) s.stack.emplace().fill(*stack_byte);
    return s;
  };
  const auto turns = [&](const std::vector<WatchedBlock>& blocks, auto stack_of_turn) {
    LoopWatch watch;
    watch.start();
    uint64_t instructions = 0;
    for (unsigned turn = 0; turn < 8; ++turn)
      for (const WatchedBlock& b : blocks) {
        const LoopWatch::Answer a = watch.on_block(b, instructions, [&] { return state(stack_of_turn(turn)); });
        if (a.verdict != Verdict::Watching) return a;
        instructions += b.instructions;
      }
    return LoopWatch::Answer{};
  };
  const LoopWatch::Answer same = turns({call, ret, back}, [](unsigned) { return std::optional<uint8_t>(0x42); });
  EXPECT_EQ(same.verdict, Verdict::FixedPoint);
  EXPECT_TRUE(same.stack_transfers);
  EXPECT_EQ(turns({call, ret, back}, [](unsigned t) { return std::optional<uint8_t>(t); }).verdict,
            Verdict::Watching);
  EXPECT_EQ(turns({call, ret, back}, [](unsigned) { return std::optional<uint8_t>(); }).verdict, Verdict::Watching)
      << "a stack it cannot read proves nothing";
  WatchedBlock moves_sp = back;
  moves_sp.writes_stack_pointer = true;
  EXPECT_EQ(turns({call, ret, moves_sp}, [](unsigned) { return std::optional<uint8_t>(0x42); }).verdict,
            Verdict::Watching);
}

// The schedule: two quiet runs, then a watch; a watch that proves nothing
// doubles the wait (up to kMaxGap); a fixed point is checked again at once
// by a run that begins at its head; any other exit starts over.
TEST(LoopWatchSchedule, WatchesAfterQuietRunsBacksOffAndRechecksAProvedHead) {
  LoopWatchSchedule s;
  EXPECT_FALSE(s.watch_run(0x1000));
  s.run_ended(true, false, std::nullopt);
  EXPECT_FALSE(s.watch_run(0x1000));
  s.run_ended(true, false, std::nullopt);
  EXPECT_TRUE(s.watch_run(0x1000));
  s.run_ended(true, true, std::nullopt);  // watched, no proof: wait 4 now
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(s.watch_run(0x1000));
    s.run_ended(true, false, std::nullopt);
  }
  s.run_ended(true, false, std::nullopt);
  EXPECT_TRUE(s.watch_run(0x1000));
  LoopWatch::Answer proof;
  proof.verdict = Verdict::FixedPoint;
  proof.head = 0x2000;
  s.run_ended(false, true, proof);
  EXPECT_TRUE(s.watch_run(0x2000));
  EXPECT_FALSE(s.watch_run(0x1000));
  for (int i = 0; i < 20; ++i) s.run_ended(true, true, std::nullopt);
  for (unsigned i = 0; i + 1 < LoopWatchSchedule::kMaxGap; ++i) s.run_ended(true, false, std::nullopt);
  EXPECT_FALSE(s.watch_run(0x1000));
  s.run_ended(true, false, std::nullopt);
  EXPECT_TRUE(s.watch_run(0x1000)) << "the wait stops growing at kMaxGap";
  s.run_ended(false, false, std::nullopt);  // a HLT
  s.run_ended(true, false, std::nullopt);
  s.run_ended(true, false, std::nullopt);
  EXPECT_TRUE(s.watch_run(0x1000));
}

}  // namespace
}  // namespace topolab
