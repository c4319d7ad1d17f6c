// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/cost_rules.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

CostModel model() {
  CostModel c;
  c.icr_send_ns = 300;
  c.ipi_running_ns = 700;
  c.halt_wake_ns = 5000;
  c.poll_wake_ns = 400;
  c.halt_poll_ns = 2000;
  c.mwait_wake_ns = 900;
  return c;
}

TEST(CostRules, SendTimeIsInTheIcrExitUnlessIpisAreVirtualised) {
  CostModel c = model();
  EXPECT_EQ(ipi_send_ns(c, 1000), 1300u);
  c.ipiv = true;
  EXPECT_EQ(ipi_send_ns(c, 1000), 1000u);
}

TEST(CostRules, ArrivalAtARunningTargetIsAPostedInterruptLater) {
  EXPECT_EQ(ipi_arrival_at_running_ns(model(), 1000, false), 1700u);
  EXPECT_EQ(ipi_arrival_at_running_ns(model(), 1000, true), 1000u);  // self: at once
}

TEST(CostRules, WakeEventOfAHaltedTarget) {
  EXPECT_EQ(ipi_wake_event_ns(model(), 1000, false, false), 1000u);  // HLT: kicked from the send
  EXPECT_EQ(ipi_wake_event_ns(model(), 1000, true, false), 1700u);   // MWAIT: in guest mode, posted
  EXPECT_EQ(ipi_wake_event_ns(model(), 1000, true, true), 1000u);
}

TEST(CostRules, HaltPollHitWithinTheWindowAndMissAfterIt) {
  const CostModel c = model();
  const HaltedVcpu hlt{.halted_since_ns = 10'000};
  EXPECT_EQ(resume_from_halt(c, hlt, 11'000),
            (Resumption{.resume_ns = 11'400, .poll = HaltPoll::Hit, .poll_busy_ns = 1'400}));
  EXPECT_EQ(resume_from_halt(c, hlt, 12'000).poll, HaltPoll::Hit);  // the window's last ns
  EXPECT_EQ(resume_from_halt(c, hlt, 12'001), (Resumption{.resume_ns = 17'001, .poll = HaltPoll::Miss, .poll_busy_ns = std::nullopt}));
  CostModel no_poll = c;
  no_poll.halt_poll_ns = 0;
  EXPECT_EQ(resume_from_halt(no_poll, hlt, 11'000), (Resumption{.resume_ns = 16'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));
}

// MSR_KVM_POLL_CONTROL = 0 (the guest polls itself): the host blocks at
// once, neither a hit nor a miss, as with halt_poll_ns = 0.
TEST(CostRules, NoHostPollWhereTheGuestSwitchedItOff) {
  const HaltedVcpu guest_polls{.halted_since_ns = 10'000, .in_mwait = false, .host_polls = false};
  EXPECT_EQ(resume_from_halt(model(), guest_polls, 11'000),
            (Resumption{.resume_ns = 16'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));
}

TEST(CostRules, AnEventAlreadyThereResumesAtOnce) {
  const HaltedVcpu hlt{.halted_since_ns = 10'000};
  EXPECT_EQ(resume_from_halt(model(), hlt, 10'000), (Resumption{.resume_ns = 10'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));
  EXPECT_EQ(resume_from_halt(model(), hlt, 4'000), (Resumption{.resume_ns = 10'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));  // sent before the halt
  const HaltedVcpu mwait{.halted_since_ns = 10'000, .in_mwait = true};
  EXPECT_EQ(resume_from_halt(model(), mwait, 9'000), (Resumption{.resume_ns = 10'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));
}

TEST(CostRules, MwaitWakeOutOfC1OrAtOnceWhenTrapped) {
  CostModel c = model();
  const HaltedVcpu mwait{.halted_since_ns = 10'000, .in_mwait = true};
  EXPECT_EQ(resume_from_halt(c, mwait, 50'000), (Resumption{.resume_ns = 50'900, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));  // no poll either way
  c.mwait_passthrough = false;
  EXPECT_EQ(resume_from_halt(c, mwait, 50'000), (Resumption{.resume_ns = 50'000, .poll = HaltPoll::None, .poll_busy_ns = std::nullopt}));
}

TEST(CostRules, ApicWriteExitByKind) {
  CostModel c = model();
  EXPECT_EQ(apic_write_exit(c, ApicWriteKind::Virtualized), std::nullopt);
  EXPECT_EQ(apic_write_exit(c, ApicWriteKind::Icr), ExitKind::Icr);
  EXPECT_EQ(apic_write_exit(c, ApicWriteKind::Trapped), ExitKind::Apic);
  c.ipiv = true;
  EXPECT_EQ(apic_write_exit(c, ApicWriteKind::Icr), std::nullopt);
}

TEST(CostRules, ExitCostByKind) {
  CostModel c = CostModel::defaults();
  EXPECT_EQ(c.exit_ns(ExitKind::Hlt), c.hlt_exit_ns);
  EXPECT_EQ(c.exit_ns(ExitKind::Icr), c.icr_exit_ns);
  EXPECT_EQ(c.exit_ns(ExitKind::Apic), c.msr_exit_ns);  // a trapped APIC write costs an MSR-like exit
  EXPECT_EQ(c.exit_ns(ExitKind::Monitor), c.monitor_exit_ns);
}

}  // namespace
}  // namespace topolab
