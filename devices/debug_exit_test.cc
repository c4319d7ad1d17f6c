// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/debug_exit.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(DebugExit, FirstWriteEndsTheRunWithItsValue) {
  int stops = 0;
  DebugExit dev([&] { ++stops; });
  EXPECT_FALSE(dev.value().has_value());
  dev.write(0, 4, 38);
  dev.write(0, 4, 1);  // too late: the run is already ending
  EXPECT_EQ(dev.value(), 38u);
  EXPECT_EQ(stops, 1);
}

TEST(DebugExit, ByteWritesKeepOnlyTheByte) {
  DebugExit dev([] {});
  dev.write(0, 1, 0x1ff);
  EXPECT_EQ(dev.value(), 0xffu);
}

}  // namespace
}  // namespace topolab
