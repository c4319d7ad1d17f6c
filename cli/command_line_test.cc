// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/command_line.h"

#include <gtest/gtest.h>

#include "base/errors.h"

namespace topolab::cli {
namespace {

// --gdb and QEMU's -gdb (docs/debugging.md): 127.0.0.1 unless a host is named.
TEST(GdbEndpoint, TakesOursAndQemusSpellings) {
  EXPECT_EQ(parse_gdb_endpoint("1234", "--gdb"), (GdbEndpoint{"127.0.0.1", 1234}));
  EXPECT_EQ(parse_gdb_endpoint("0", "--gdb"), (GdbEndpoint{"127.0.0.1", 0}));
  EXPECT_EQ(parse_gdb_endpoint("0.0.0.0:4321", "--gdb"), (GdbEndpoint{"0.0.0.0", 4321}));
  EXPECT_EQ(parse_gdb_endpoint("tcp::1234", "-gdb"), (GdbEndpoint{"127.0.0.1", 1234}));
  EXPECT_EQ(parse_gdb_endpoint("tcp:localhost:99", "-gdb"), (GdbEndpoint{"localhost", 99}));
}

TEST(GdbEndpoint, RefusesAnythingElseInOneLine) {
  for (const char* bad : {"", "70000", "-1", "x", "host:", "tcp:1234", "a:b:1", "tcp::", "1234 "}) {
    try {
      parse_gdb_endpoint(bad, "--gdb");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("expected PORT"), std::string::npos) << e.what();
    }
  }
}

TEST(ParseVirtualTime, TakesSecondsAndTheirPartsAndRefusesTheRest) {
  EXPECT_EQ(parse_virtual_time("1.5s", "--snapshot-at"), 1'500'000'000u);
  EXPECT_EQ(parse_virtual_time("250ms", "--snapshot-at"), 250'000'000u);
  EXPECT_EQ(parse_virtual_time("40us", "--snapshot-at"), 40'000u);
  EXPECT_EQ(parse_virtual_time("40000ns", "--snapshot-at"), 40'000u);
  EXPECT_EQ(parse_virtual_time("2", "--snapshot-at"), 2'000'000'000u);
  EXPECT_EQ(parse_virtual_time("0", "--snapshot-at"), 0u);
  for (const char* bad : {"", "ms", "-1s", "1 s", "1h", "nan", "1e300s", "0x10ms"})
    EXPECT_THROW(parse_virtual_time(bad, "--snapshot-at"), ConfigError) << bad;
  try {
    parse_virtual_time("soon", "--snapshot-at");
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--snapshot-at soon: expected a virtual time such as 250ms, 1.5s or 40000ns");
  }
}

}  // namespace
}  // namespace topolab::cli
