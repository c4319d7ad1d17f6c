// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/activity_log.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(ActivityLog, KeepsSpansInOrderAndMergesContinuations) {
  ActivityLog log(2);
  log.record(0, 0, 100, VcpuActivity::Running);
  log.record(0, 100, 250, VcpuActivity::Running);  // continues: merged
  log.record(0, 250, 400, VcpuActivity::Halted);
  log.record(1, 0, 50, VcpuActivity::WaitForSipi);
  EXPECT_EQ(log.spans(0), (std::vector<ActivitySpan>{{0, 250, VcpuActivity::Running}, {250, 400, VcpuActivity::Halted}}));
  EXPECT_EQ(log.spans(1), (std::vector<ActivitySpan>{{0, 50, VcpuActivity::WaitForSipi}}));
  EXPECT_EQ(log.end_ns(), 400u);
}

TEST(ActivityLog, DropsEmptySpansAndClampsOverlaps) {
  ActivityLog log(1);
  log.record(0, 10, 10, VcpuActivity::Running);
  EXPECT_TRUE(log.spans(0).empty());
  log.record(0, 0, 100, VcpuActivity::Running);
  log.record(0, 60, 150, VcpuActivity::Mwait);  // begins before the last end
  EXPECT_EQ(log.spans(0)[1], (ActivitySpan{100, 150, VcpuActivity::Mwait}));
  log.record(0, 120, 140, VcpuActivity::Halted);  // wholly before the last end
  EXPECT_EQ(log.spans(0).size(), 2u);
}

TEST(ActivityLog, StaysBoundedOnLongRuns) {
  ActivityLog log(1);
  for (uint64_t i = 0; i < 3 * ActivityLog::kMaxSpansPerVcpu; ++i)
    log.record(0, i * 10, i * 10 + 10, i % 2 ? VcpuActivity::Halted : VcpuActivity::Running);
  EXPECT_EQ(log.spans(0).size(), ActivityLog::kMaxSpansPerVcpu);
  EXPECT_EQ(log.spans(0).back().end_ns, 3 * ActivityLog::kMaxSpansPerVcpu * 10);
  EXPECT_EQ(log.spans(0).back().activity, VcpuActivity::Halted);
}

TEST(ActivityLog, NamesEveryActivity) {
  EXPECT_EQ(to_string(VcpuActivity::Spinning), "spinning");
  EXPECT_EQ(to_string(VcpuActivity::WaitForSipi), "wait-for-sipi");
}

}  // namespace
}  // namespace topolab
