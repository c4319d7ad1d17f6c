// SPDX-License-Identifier: GPL-2.0-or-later
#include "debug/monitor.h"

#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace topolab::debug {
namespace {

// Answers each query with its name and argument; RAM is 0x2000 bytes
// where byte i holds i & 0xff.
class FakeQueries : public MonitorQueries {
 public:
  std::string info_cpus() override { return "cpus\n"; }
  std::string info_lapic(std::optional<unsigned> vcpu) override {
    return vcpu ? fmt::format("lapic {}\n", *vcpu) : "lapic all\n";
  }
  std::string info_ioapic() override { return "ioapic\n"; }
  std::string info_topology() override { return "topology\n"; }
  std::string info_ipis() override { return "ipis\n"; }
  std::string info_time() override { return "time\n"; }
  std::string snapshot_save(std::string_view name) override { return fmt::format("save {}\n", name); }
  std::string snapshot_load(std::string_view name) override { return fmt::format("load {}\n", name); }
  std::string snapshot_list() override { return "list\n"; }
  size_t read_physical(uint64_t address, std::span<uint8_t> out) override {
    reads.push_back(address);
    size_t n = 0;
    for (; n < out.size() && address + n < ram_end; ++n) out[n] = static_cast<uint8_t>(address + n);
    return n;
  }
  uint64_t ram_end = 0x2000;
  std::vector<uint64_t> reads;
};

class MonitorTest : public ::testing::Test {
 protected:
  std::string run(std::string_view line) { return run_monitor_command(queries, line); }
  FakeQueries queries;
};

TEST_F(MonitorTest, InfoCommands) {
  EXPECT_EQ(run("info cpus"), "cpus\n");
  EXPECT_EQ(run("  info   lapic  "), "lapic all\n");
  EXPECT_EQ(run("info lapic 3"), "lapic 3\n");
  EXPECT_EQ(run("info lapic 0x10"), "lapic 16\n");
  EXPECT_EQ(run("info ioapic"), "ioapic\n");
  EXPECT_EQ(run("info topology"), "topology\n");
  EXPECT_EQ(run("info ipis"), "ipis\n");
  EXPECT_EQ(run("info time\n"), "time\n");
}

TEST_F(MonitorTest, SnapshotCommands) {
  EXPECT_EQ(run("snapshot save boot"), "save boot\n");
  EXPECT_EQ(run("snapshot load boot"), "load boot\n");
  EXPECT_EQ(run("snapshot list"), "list\n");
}

TEST_F(MonitorTest, BadInputIsOneLine) {
  for (const char* line : {"frobnicate", "info", "info bogus", "info lapic x", "info lapic 1 2", "info cpus 1",
                           "snapshot", "snapshot save", "snapshot load a b", "snapshot delete a", "xp", "xp /4x",
                           "xp /4q 0x1000", "xp /4x nowhere", "xp /x 1 2", "help me", "info lapic 99999999999"}) {
    const std::string out = run(line);
    EXPECT_FALSE(out.empty()) << line;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << line << ": " << out;
  }
  EXPECT_EQ(run("frobnicate"), "unknown command: 'frobnicate' (try 'help')\n");
  EXPECT_EQ(run("xp /4q 0x1000"), "invalid char in format: 'q'\n");
  EXPECT_EQ(run("bad\x01"), "unknown command: 'bad\\x01' (try 'help')\n");
  EXPECT_TRUE(queries.reads.empty());
}

TEST_F(MonitorTest, EmptyLineSaysNothingHelpListsEveryCommand) {
  EXPECT_EQ(run(""), "");
  EXPECT_EQ(run("   "), "");
  const std::string help = run("help");
  for (const char* c : {"info cpus", "info lapic", "info ioapic", "info topology", "info ipis", "info time",
                        "snapshot save", "snapshot load", "snapshot list", "xp /FMT ADDR"}) {
    EXPECT_NE(help.find(c), std::string::npos) << c;
  }
}

// The layouts below are QEMU's memory_dump (monitor/hmp-cmds-target.c):
// "%016" PRIx64 ":" then " 0x%0*x" units, 16 bytes a line (8 for bytes).
TEST_F(MonitorTest, XpWordsInHexByDefault) {
  EXPECT_EQ(run("xp 0x1000"), "0000000000001000: 0x03020100\n");
  EXPECT_EQ(run("xp /5x 0x1000"),
            "0000000000001000: 0x03020100 0x07060504 0x0b0a0908 0x0f0e0d0c\n"
            "0000000000001010: 0x13121110\n");
}

TEST_F(MonitorTest, XpSizes) {
  EXPECT_EQ(run("xp /10xb 0x1000"),
            "0000000000001000: 0x00 0x01 0x02 0x03 0x04 0x05 0x06 0x07\n"
            "0000000000001008: 0x08 0x09\n");
  EXPECT_EQ(run("xp /3xh 16"), "0000000000000010: 0x1110 0x1312 0x1514\n");
  EXPECT_EQ(run("xp /2gx 0x1000"), "0000000000001000: 0x0706050403020100 0x0f0e0d0c0b0a0908\n");
  EXPECT_EQ(run("xp /1xL 0x1000"), "0000000000001000: 0x0706050403020100\n");
  EXPECT_EQ(run("xp/2xb 0x1000"), "0000000000001000: 0x00 0x01\n");  // glued, as QEMU takes it
}

TEST_F(MonitorTest, XpDecimalUnsignedOctalAndChar) {
  // Widths: decimal digits of the unit's range (3, 5, 10, 20), octal digits (3, 6, 11, 22).
  EXPECT_EQ(run("xp /3ub 0xfe"), "00000000000000fe: 254 255   0\n");
  EXPECT_EQ(run("xp /1dw 0xfc"), "00000000000000fc: 4294901244\n");  // 0xfffefdfc, zero-extended as QEMU does
  EXPECT_EQ(run("xp /2dh 0"), "0000000000000000:   256   770\n");
  EXPECT_EQ(run("xp /2ob 0"), "0000000000000000:   0  01\n");
  EXPECT_EQ(run("xp /1ow 0"), "0000000000000000:  0300400400\n");
  // An 8-byte unit prints signed (QEMU's PRId64 of the 64-bit value).
  EXPECT_EQ(run("xp /1dg 0xf8"), "00000000000000f8:     -283686952306184\n");
  EXPECT_EQ(run("xp /4cb 0x41"), "0000000000000041: 'A' 'B' 'C' 'D'\n");
  EXPECT_EQ(run("xp /3c 0x0a"), "000000000000000a: '\\n' '\\x0b' '\\x0c' '\\r' '\\x0e' '\\x0f' '\\x10' '\\x11' '\\x12' '\\x13' "
                                "'\\x14' '\\x15'\n");  // size w: 3 units of 4 bytes, each byte a char
  EXPECT_EQ(run("xp /2cb 0x5b"), "000000000000005b: '[' '\\\\'\n");
  EXPECT_EQ(run("xp /1cb 0x27"), "0000000000000027: '\\''\n");
}

TEST_F(MonitorTest, XpStopsWhereMemoryEnds) {
  EXPECT_EQ(run("xp /6x 0x1ff0"),
            "0000000000001ff0: 0xf3f2f1f0 0xf7f6f5f4 0xfbfaf9f8 0xfffefdfc\n"
            "0000000000002000: Cannot access memory\n");
  EXPECT_EQ(run("xp /0x 0x1000"), "");
}

TEST_F(MonitorTest, XpRefusesHugeDumps) {
  EXPECT_EQ(run("xp /99999999999999999999999xg 0"), fmt::format("xp: at most {} bytes at once\n", kMaxDumpBytes));
  EXPECT_EQ(run("xp /16385xw 0"), fmt::format("xp: at most {} bytes at once\n", kMaxDumpBytes));
  EXPECT_TRUE(queries.reads.empty());
  EXPECT_FALSE(run("xp /16384xw 0").empty());
}

}  // namespace
}  // namespace topolab::debug
