// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/guest_protocol.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(SchedResult, ParsesTheLastResultLine) {
  const std::string serial =
      "boot\nsched-result: workload=old\nsome line\nsched-result: workload=pipe idle=halt loops=10 ns_per_op=590\n";
  auto fields = parse_sched_result(serial);
  ASSERT_TRUE(fields);
  EXPECT_EQ(fields->at("workload"), "pipe");
  EXPECT_EQ(fields->at("ns_per_op"), "590");
  EXPECT_EQ(fields->at("loops"), "10");
}

TEST(SchedResult, RejectsGarbage) {
  EXPECT_FALSE(parse_sched_result("no result here\n"));
  EXPECT_FALSE(parse_sched_result("sched-result: novalue\n"));
  EXPECT_FALSE(parse_sched_result("xsched-result: a=1\n")) << "only at the start of a line";
}

TEST(SerialLines, SplitsAtNewlinesAndDropsTheConsolesCarriageReturns) {
  EXPECT_EQ(serial_lines("a\r\nb\n\nc"), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_TRUE(serial_lines("").empty());
}

// /init's lines around one benchmark (tools/linux_init.sh), as a 2-vCPU
// guest prints them.
constexpr const char* kLinuxRun =
    "topolab-interrupts-before messaging:1:10\r\n"
    "           CPU0       CPU1\r\n"
    "RES:         10         20   Rescheduling interrupts\r\n"
    "CAL:          1          2   Function call interrupts\r\n"
    "topolab-interrupts-end\r\n"
    "topolab-bench-begin messaging:1:10\r\n"
    "# Running 'sched/messaging' benchmark:\r\n"
    "     Total time: 0.012 [sec]\r\n"
    "topolab-bench-end messaging:1:10 status=0\r\n"
    "topolab-interrupts-after messaging:1:10\r\n"
    "           CPU0       CPU1\r\n"
    "RES:         15         40   Rescheduling interrupts\r\n"
    "CAL:          4          2   Function call interrupts\r\n"
    "topolab-interrupts-end\r\n";

TEST(PerfBench, ReadsTheLastBenchmarksLoopsAndTotalTime) {
  const auto bench = parse_perf_bench(kLinuxRun);
  EXPECT_EQ(bench.at("bench"), "messaging:1:10");
  EXPECT_EQ(bench.at("loops"), "10");
  EXPECT_EQ(bench.at("total_sec"), "0.012");
  EXPECT_FALSE(bench.count("usecs_per_op"));
  EXPECT_EQ(parse_perf_bench("topolab-bench-begin pipe:5\n 7.5 usecs/op\n 133 ops/sec\ntopolab-bench-end pipe:5 status=0\n")
                .at("usecs_per_op"),
            "7.5");
}

// topolab-ctxsw's line and the cpuidle line /init prints before it.
TEST(PerfBench, ReadsTheContextSwitchBenchmarksFields) {
  const auto bench = parse_perf_bench(
      "topolab-bench-begin ctxsw:500\r\n"
      "topolab-cpuidle driver=haltpoll governor=menu states=POLL,haltpoll\r\n"
      "topolab-ctxsw loops=500 switches=1000 elapsed_ns=2500000 ns_per_switch=2500\r\n"
      "topolab-bench-end ctxsw:500 status=0\r\n");
  EXPECT_EQ(bench.at("loops"), "500");
  EXPECT_EQ(bench.at("switches"), "1000");
  EXPECT_EQ(bench.at("ns_per_switch"), "2500");
  EXPECT_EQ(bench.at("ns_per_op"), "2500");
  EXPECT_EQ(bench.at("driver"), "haltpoll");
  EXPECT_EQ(bench.at("governor"), "menu");
  EXPECT_EQ(bench.at("states"), "POLL,haltpoll");
}

TEST(LinuxInterrupts, EachCpusRiseOverTheBenchmark) {
  const LinuxInterruptDeltas d = linux_interrupt_deltas(kLinuxRun);
  EXPECT_EQ(d.res, (std::vector<uint64_t>{5, 20}));
  EXPECT_EQ(d.cal, (std::vector<uint64_t>{3, 0}));
  EXPECT_TRUE(linux_interrupt_deltas("RES: 1 2\n").res.empty()) << "lines outside a block count for nothing";
}

// What a guest may print where /init's counts go: garbage is an error with
// its reason, never a wrapped number nor a crash.
TEST(LinuxInterrupts, ACountPast64BitsOrOneThatFellIsAnError) {
  auto deltas = [](const std::string& before, const std::string& after) {
    return linux_interrupt_deltas("topolab-interrupts-before x\nRES: " + before + "\ntopolab-interrupts-end\n" +
                                  "topolab-interrupts-after x\nRES: " + after + "\ntopolab-interrupts-end\n");
  };
  EXPECT_EQ(deltas("18446744073709551614 3", "18446744073709551615 3").res, (std::vector<uint64_t>{1, 0}));
  try {
    deltas("1", "18446744073709551616");
    FAIL() << "2^64 read";
  } catch (const GuestProtocolError& e) {
    EXPECT_STREQ(e.what(), "the guest's /proc/interrupts: a RES count of 20 digits exceeds 64 bits");
  }
  try {
    deltas("7 9", "8 4");
    FAIL() << "a count that fell read";
  } catch (const GuestProtocolError& e) {
    EXPECT_STREQ(e.what(), "the guest's /proc/interrupts: CPU1's RES count went down over the benchmark, from 9 to 4");
  }
  // A byte past 0x7F is no digit (isdigit of a negative char was undefined).
  EXPECT_EQ(deltas("5 \xb9", "6 \xb9").res, (std::vector<uint64_t>{1}));
}

TEST(LineFrom, TheFirstLineWithTheMarkerFromTheMarkerOn) {
  EXPECT_EQ(line_from("boot\n[ 1.0] Kernel panic - not syncing: VFS\r\nmore\n", "Kernel panic - not syncing"),
            "Kernel panic - not syncing: VFS");
  EXPECT_EQ(line_from("fine\n", "topolab-init: error"), "");
}

}  // namespace
}  // namespace topolab
