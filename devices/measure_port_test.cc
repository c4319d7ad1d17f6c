// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/measure_port.h"

#include <gtest/gtest.h>

#include <vector>

namespace topolab {
namespace {

TEST(MeasurePort, PassesBeginAndEndAndIgnoresTheRest) {
  std::vector<MeasurePort::Mark> marks;
  MeasurePort port([&](MeasurePort::Mark m) { marks.push_back(m); });
  port.write(0, 4, 1);
  port.write(0, 4, 7);
  port.write(2, 2, 2);  // not the port itself
  port.write(0, 1, 2);
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0], MeasurePort::Mark::Begin);
  EXPECT_EQ(marks[1], MeasurePort::Mark::End);
  EXPECT_EQ(port.read(0, 4), 0xffffffffu);
}

}  // namespace
}  // namespace topolab
