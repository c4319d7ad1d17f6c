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
