// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/i8042.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(I8042, CommandFeResetsAndTheStatusNeverBlocks) {
  int resets = 0;
  I8042 kbc([&] { ++resets; });
  PortDevice& command = kbc.command_port();
  EXPECT_EQ(command.read(0, 1) & 0x2, 0u);  // input buffer empty: init.c's wait ends
  EXPECT_EQ(command.read(0, 1), 0x1cu);
  command.write(0, 1, 0xd1);  // write output port: not modelled
  kbc.write(0, 1, 0xff);
  EXPECT_EQ(resets, 0);
  command.write(0, 1, 0xfe);
  EXPECT_EQ(resets, 1);
  EXPECT_EQ(kbc.read(0, 1), 0u);
}

}  // namespace
}  // namespace topolab
