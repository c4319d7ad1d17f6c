// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/debug_exit.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

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

TEST(DebugExitSnapshot, RoundTripsTheValueAndTheRunStaysEnded) {
  DebugExit dev([] {});
  dev.write(0, 4, 38);
  const std::string bytes = save_state_bytes(dev);
  int stops = 0;
  DebugExit restored([&] { ++stops; });
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  EXPECT_EQ(restored.value(), 38u);
  restored.write(0, 4, 1);  // the run is already ending
  EXPECT_EQ(restored.value(), 38u);
  EXPECT_EQ(stops, 0);
}

}  // namespace
}  // namespace topolab
