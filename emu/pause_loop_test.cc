// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/pause_loop.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

using Action = PauseLoopDetector::Action;

constexpr PauseLoopExiting kPle{.gap_instructions = 10, .window_instructions = 40};

// PAUSEs every `step` instructions at one site, from `from`, until `to`:
// the last action.
Action pauses(PauseLoopDetector& d, uint64_t from, uint64_t to, uint64_t step, uint64_t site = 0x1000) {
  Action last = Action::Run;
  for (uint64_t n = from; n <= to; n += step) last = d.on_pause(site, n);
  return last;
}

TEST(PauseLoopDetector, OffRunsEveryPause) {
  PauseLoopDetector d;
  EXPECT_EQ(pauses(d, 0, 1000, 4), Action::Run);
}

TEST(PauseLoopDetector, AFullWindowAsksForASnapshotThenACheck) {
  PauseLoopDetector d;
  d.configure(kPle);
  EXPECT_EQ(pauses(d, 0, 36, 4), Action::Run);  // 36 < 40 since the first
  EXPECT_EQ(d.on_pause(0x1000, 40), Action::Snapshot);
  EXPECT_EQ(d.on_pause(0x1000, 44), Action::CheckAndExit);
}

TEST(PauseLoopDetector, AGapOverTheLimitStartsANewLoop) {
  PauseLoopDetector d;
  d.configure(kPle);
  pauses(d, 0, 36, 4);
  EXPECT_EQ(d.on_pause(0x1000, 47), Action::Run) << "11 > gap 10: a new loop begins at 47";
  EXPECT_EQ(pauses(d, 51, 83, 4), Action::Run);
  EXPECT_EQ(d.on_pause(0x1000, 87), Action::Snapshot);
}

TEST(PauseLoopDetector, AnotherSiteOrASideEffectStartsOver) {
  PauseLoopDetector d;
  d.configure(kPle);
  pauses(d, 0, 36, 4);
  EXPECT_EQ(d.on_pause(0x2000, 40), Action::Run) << "another PAUSE site";
  pauses(d, 44, 76, 4, 0x2000);
  d.forget();  // a store
  EXPECT_EQ(d.on_pause(0x2000, 84), Action::Run);
}

TEST(PauseLoopDetector, NotAFixedPointOpensANewWindowAndForgetsTimeReads) {
  PauseLoopDetector d;
  d.configure(kPle);
  d.note_time_read(SpinRegisters::kRdtscOutputs);
  pauses(d, 0, 40, 4);
  d.note_time_read(SpinRegisters::kRdtscOutputs);
  EXPECT_EQ(d.on_pause(0x1000, 44), Action::CheckAndExit);
  EXPECT_TRUE(d.reads_time());
  d.not_a_fixed_point(44);
  EXPECT_FALSE(d.reads_time());
  EXPECT_EQ(pauses(d, 48, 80, 4), Action::Run);
  EXPECT_EQ(d.on_pause(0x1000, 84), Action::Snapshot);
}

TEST(PauseLoopDetector, AParkedLoopIsRecheckedAfterOneIteration) {
  PauseLoopDetector d;
  d.configure(kPle);
  d.mark_run_start();
  pauses(d, 0, 40, 4);
  ASSERT_EQ(d.on_pause(0x1000, 44), Action::CheckAndExit);
  EXPECT_FALSE(d.recheck()) << "the first exit of a spin is a pause-loop exit";
  d.exited(44);
  // The next run begins at the same PAUSE, which runs; one iteration later
  // the check comes, and the run was only a recheck.
  d.mark_run_start();
  EXPECT_EQ(d.on_pause(0x1000, 44), Action::Run);
  EXPECT_EQ(d.on_pause(0x1000, 48), Action::CheckAndExit);
  EXPECT_TRUE(d.recheck());
  d.exited(48);
  // An injected event between runs: the spin is over.
  d.forget();
  d.mark_run_start();
  EXPECT_EQ(d.on_pause(0x1000, 48), Action::Run);
  EXPECT_EQ(d.on_pause(0x1000, 52), Action::Run) << "a new window";
  EXPECT_FALSE(d.recheck());
}

TEST(PauseLoopDetector, AParkedLoopWhoseRegistersChangeIsResnappedAFewTimes) {
  PauseLoopDetector d;
  d.configure(kPle);
  pauses(d, 0, 40, 4);
  ASSERT_EQ(d.on_pause(0x1000, 44), Action::CheckAndExit);
  d.exited(44);
  uint64_t n = 48;
  for (unsigned i = 0; i < PauseLoopDetector::kMaxParkedChanges; ++i, n += 4) {
    ASSERT_EQ(d.on_pause(0x1000, n), Action::CheckAndExit);
    EXPECT_TRUE(d.not_a_fixed_point(n)) << "take a new snapshot, " << i;
  }
  ASSERT_EQ(d.on_pause(0x1000, n), Action::CheckAndExit);
  EXPECT_FALSE(d.not_a_fixed_point(n)) << "then a whole window again";
  EXPECT_EQ(d.on_pause(0x1000, n + 4), Action::Run);
}

TEST(SpinRegisters, TimeOutputsAreLeftOutOfTheCompare) {
  SpinRegisters a, b;
  b.values[SpinRegisters::kRax] = 5;
  b.values[SpinRegisters::kRdx] = 6;
  b.values[SpinRegisters::kRflags] = 0x46;
  EXPECT_FALSE(a.same_as(b, 0));
  EXPECT_TRUE(a.same_as(b, SpinRegisters::kRdtscOutputs));
  b.values[SpinRegisters::kRcx] = 1;  // RDTSCP's TSC_AUX
  EXPECT_FALSE(a.same_as(b, SpinRegisters::kRdtscOutputs));
  EXPECT_TRUE(a.same_as(b, SpinRegisters::kRdtscpOutputs));
  b.values[3] = 1;  // RBX: never a time output
  EXPECT_FALSE(a.same_as(b, SpinRegisters::kRdtscpOutputs));
}

}  // namespace
}  // namespace topolab
