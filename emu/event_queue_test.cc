#include "emu/event_queue.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace topolab {
namespace {

// Dolphin's CoreTiming tests, in this queue's shape.
TEST(EventQueue, BasicOrder) {
  EventQueue<char> q;
  q.push(30, 'c');
  q.push(10, 'a');
  q.push(20, 'b');
  EXPECT_EQ(q.next_time(), 10u);
  EXPECT_EQ(q.take_due(25), (std::vector<char>{'a', 'b'}));
  EXPECT_EQ(q.next_time(), 30u);
  EXPECT_EQ(q.take_due(29), (std::vector<char>{}));
  EXPECT_EQ(q.take_due(30), (std::vector<char>{'c'}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next_time(), std::nullopt);
}

TEST(EventQueue, SameTimeTiesComeOutFirstInFirstOut) {
  EventQueue<char> q;
  for (char c : std::string("wxyz")) q.push(5, c);
  q.push(4, 'v');
  EXPECT_EQ(q.take_all(), (std::vector<char>{'v', 'w', 'x', 'y', 'z'}));
}

TEST(EventQueue, SchedulingIntoThePastComesOutAtTheNextTake) {
  EventQueue<int> q;
  q.push(1000, 1);
  EXPECT_EQ(q.take_due(1000), (std::vector<int>{1}));
  q.push(400, 2);  // already passed
  q.push(1500, 3);
  EXPECT_EQ(q.next_time(), 400u);
  EXPECT_EQ(q.take_due(1000), (std::vector<int>{2}));
  EXPECT_EQ(q.size(), 1u);
}

TEST(EventQueue, ChainedPushesKeepTheirOrder) {
  EventQueue<int> q;
  q.push(7, 1);
  for (int e : q.take_due(7)) q.push(7, e + 1);  // an event that queues the next at once
  q.push(7, 10);
  EXPECT_EQ(q.take_due(7), (std::vector<int>{2, 10}));
}

}  // namespace
}  // namespace topolab
