#include "emu/event_queue.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(EventQueue, RunsInTimeOrder) {
  EventQueue q;
  std::string order;
  q.schedule(30, [&](uint64_t, uint64_t) { order += 'c'; });
  q.schedule(10, [&](uint64_t, uint64_t) { order += 'a'; });
  q.schedule(20, [&](uint64_t, uint64_t) { order += 'b'; });
  EXPECT_EQ(q.next_time(), 10u);
  EXPECT_EQ(q.run_until(25), 2u);
  EXPECT_EQ(order, "ab");
  EXPECT_EQ(q.run_until(30), 1u);
  EXPECT_EQ(order, "abc");
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next_time(), std::nullopt);
}

TEST(EventQueue, SameTimeRunsFirstInFirstOut) {
  EventQueue q;
  std::string order;
  for (char c : std::string("wxyz")) q.schedule(5, [&order, c](uint64_t, uint64_t) { order += c; });
  q.run_until(5);
  EXPECT_EQ(order, "wxyz");
}

TEST(EventQueue, CallbacksMayScheduleMoreThatRunInTheSamePass) {
  EventQueue q;
  std::vector<uint64_t> ran_at;
  std::function<void(uint64_t, uint64_t)> tick = [&](uint64_t now, uint64_t) {
    ran_at.push_back(now);
    if (ran_at.size() < 3) q.schedule(now, tick);  // chained, due at once
  };
  q.schedule(7, tick);
  q.schedule(100, [&](uint64_t, uint64_t) { ran_at.push_back(999); });
  EXPECT_EQ(q.run_until(50), 3u);
  EXPECT_EQ(ran_at, (std::vector<uint64_t>{50, 50, 50}));
}

TEST(EventQueue, SchedulingIntoThePastRunsLateAndSaysHowLate) {
  EventQueue q;
  q.run_until(1000);
  uint64_t lateness = 0;
  q.schedule(400, [&](uint64_t, uint64_t late) { lateness = late; });
  q.run_until(1000);
  EXPECT_EQ(lateness, 600u);
}

TEST(EventQueue, CancelledEventsNeverRun) {
  EventQueue q;
  int ran = 0;
  auto a = q.schedule(10, [&](uint64_t, uint64_t) { ran += 1; });
  q.schedule(10, [&](uint64_t, uint64_t) { ran += 10; });
  EXPECT_TRUE(q.cancel(a));
  EXPECT_FALSE(q.cancel(a));
  q.run_until(10);
  EXPECT_EQ(ran, 10);
  EXPECT_FALSE(q.cancel(12345));
}

}  // namespace
}  // namespace topolab
