// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/bochs_shutdown.h"

#include <gtest/gtest.h>

#include "base/state_archive.h"

namespace topolab {
namespace {

void send(BochsShutdown& port, std::string_view s) {
  for (char c : s) port.write(0, 1, static_cast<uint8_t>(c));
}

TEST(BochsShutdown, TheWholeStringPowersOffAndABrokenOneStartsAgain) {
  int offs = 0;
  BochsShutdown port([&] { ++offs; });
  send(port, "Shutdow");
  EXPECT_EQ(offs, 0);
  send(port, "x");
  send(port, "n");
  EXPECT_EQ(offs, 0);
  send(port, "ShutSShutdown");  // the second S starts the string again
  EXPECT_EQ(offs, 1);
  port.write(0, 2, 'S');  // bytes only
  send(port, "hutdown");
  EXPECT_EQ(offs, 1);
  send(port, "Shutdown");
  EXPECT_EQ(offs, 2);
  EXPECT_EQ(port.read(0, 1), 0xffffffffu);
}

TEST(BochsShutdownSnapshot, RoundTripsAHalfWrittenString) {
  BochsShutdown port([] {});
  send(port, "Shut");
  const std::string bytes = save_state_bytes(port);
  int offs = 0;
  BochsShutdown restored([&] { ++offs; });
  load_state_bytes(restored, bytes);
  EXPECT_EQ(save_state_bytes(restored), bytes);
  send(restored, "down");
  EXPECT_EQ(offs, 1);
}

}  // namespace
}  // namespace topolab
