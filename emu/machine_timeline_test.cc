// SPDX-License-Identifier: GPL-2.0-or-later
// The machine's timeline (emu/timeline.h) as the loop keeps it: picks and
// timer wakes on a thousand vCPUs without a walk over them, and MWAIT store
// wakes found by line. The machine here checks the timeline against a walk
// over every vCPU at each pick on machines of up to 64 vCPUs
// (Machine::timeline_mismatch; emu/CMakeLists.txt builds it with NDEBUG off).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "emu/machine_test_support.h"

namespace topolab {
namespace {

using namespace machine_test;

// Past 255 vCPUs every APIC is in x2APIC mode: registers are MSRs.
void write_x2apic(FakeVcpu& v, uint32_t reg, uint64_t value) {
  ASSERT_TRUE(v.host().write_msr(LocalApic::MSR_X2APIC_FIRST + (reg >> 4), value)) << "register " << reg;
}
// One-shot APIC timer at `count` ns (divide by 1, 1 GHz), vector 0x30.
void arm_one_shot(FakeVcpu& v, uint32_t count) {
  write_x2apic(v, REG_SVR, SVR_APIC_ENABLED | 0xff);
  write_x2apic(v, REG_TIMER_DIVIDE_CONFIG, 0xb);
  write_x2apic(v, REG_LVT_TIMER, 0x30);
  write_x2apic(v, REG_TIMER_INITIAL_COUNT, count);
}

// A timer storm: 1,023 APs arm one-shot timers on 97 distinct expiries and
// halt, then cpu 0 halts too. Time jumps from expiry to expiry; each AP
// wakes at its own expiry and the woken run in time order, ties to the
// lower index. The machine finds all that on its timeline: the walks over
// every vCPU per pick it had before asked the fakes for a clock or an
// interrupt window 1.7 million times in this run; the timeline asks about
// 43 times per vCPU in all (44 thousand).
TEST(MachineScale, ATimerStormOnAThousandHaltedVcpusWakesThemInOrderWithoutWalkingThem) {
  constexpr unsigned kCpus = 1024;
  std::vector<uint64_t> expiry(kCpus);
  std::vector<std::pair<uint64_t, unsigned>> woke;  // (TSC, cpu), in the order they ran
  std::vector<std::vector<Action>> scripts(kCpus);
  scripts[0] = {[](FakeVcpu& v, uint64_t) {
                  write_x2apic(v, REG_SVR, SVR_APIC_ENABLED | 0xff);
                  write_x2apic(v, REG_ICR_LOW, kIcrInitAllButSelf);
                  write_x2apic(v, REG_ICR_LOW, kIcrSipiAllButSelf | 0x10);
                  return stop();
                },
                [](FakeVcpu& v, uint64_t) {
                  arm_one_shot(v, 3'000'000);
                  v.retire(1);
                  return exit_for(VcpuExit::Reason::Halt);
                },
                guest_exit(1)};
  for (unsigned i = 1; i < kCpus; ++i)
    scripts[i] = {[&expiry, i](FakeVcpu& v, uint64_t) {
                    const uint32_t count = 1'000'000 + (i * 37 % 97) * 1'000;
                    expiry[i] = v.host().read_tsc() + count;
                    arm_one_shot(v, count);
                    v.retire(1);
                    return exit_for(VcpuExit::Reason::Halt);
                  },
                  [&woke, i](FakeVcpu& v, uint64_t) {
                    woke.push_back({v.host().read_tsc(), i});
                    v.retire(1);
                    return exit_for(VcpuExit::Reason::Halt);
                  }};
  Rig rig(std::to_string(kCpus), scripts, "", true,
          [](MachineConfig& c) { c.cpu = parse_cpu("Skylake-Server,+x2apic"); });
  const RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;

  ASSERT_EQ(woke.size(), kCpus - 1);
  EXPECT_TRUE(std::is_sorted(woke.begin(), woke.end())) << "by time, ties to the lower index";
  EXPECT_NE(std::adjacent_find(woke.begin(), woke.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            woke.end())
      << "the storm has same-time expiries";
  for (const auto& [tsc, cpu] : woke) {
    EXPECT_EQ(tsc, expiry[cpu]) << "cpu " << cpu << " woke at its own expiry";
    EXPECT_EQ(rig.cpu(cpu).injected, (std::vector<uint8_t>{0x30})) << "cpu " << cpu;
    EXPECT_EQ(rig.wakes(cpu, WakeCause::Timer), 1u) << "cpu " << cpu;
  }

  uint64_t queries = 0;
  for (unsigned i = 0; i < kCpus; ++i) queries += rig.cpu(i).queries;
  EXPECT_LT(queries, 100u * kCpus) << "the machine walked the vCPUs";
}

// MONITOR on `line`, then (the next action) MWAIT with hint C1.
Action monitor(uint64_t line) {
  return [=](FakeVcpu&, uint64_t) {
    VcpuExit exit = exit_for(VcpuExit::Reason::Monitor);
    exit.address = line;
    return exit;
  };
}
Action mwait() {
  return [](FakeVcpu&, uint64_t) { return exit_for(VcpuExit::Reason::Mwait); };
}
Action store(uint64_t address, uint32_t value) {
  return [=](FakeVcpu& v, uint64_t) {
    v.ram->write<uint32_t>(address, value);
    v.retire(1);
    return stop();
  };
}
Action note_wake(std::vector<std::pair<unsigned, uint64_t>>* woke) {
  return [=](FakeVcpu& v, uint64_t) {
    woke->push_back({v.index(), v.host().read_tsc()});
    v.retire(1);
    return stop();
  };
}

// Two vCPUs parked in MWAIT on two lines, a third on the first line too: a
// store to a line wakes the vCPUs parked on it, at the end of the writer's
// slice, and no other.
TEST(MachineTimeline, AStoreWakesOnlyTheVcpusParkedInMwaitOnItsLine) {
  constexpr uint64_t kLineA = 0x200000, kLineB = 0x200040;
  std::vector<std::pair<unsigned, uint64_t>> woke;  // (cpu, TSC) as they ran after waking
  Rig rig("4",
          {{start_aps(), run_for(1000), store(kLineA + 8, 1), run_for(1000), store(kLineB, 1), run_for(1000),
            guest_exit(1)},
           {monitor(kLineA), mwait(), note_wake(&woke)},
           {monitor(kLineB), mwait(), note_wake(&woke)},
           {monitor(kLineA), mwait(), note_wake(&woke)}},
          "", true, [](MachineConfig& c) { c.cpu = parse_cpu("Skylake-Server,+monitor"); });
  const RunResult r = rig.machine->run();
  ASSERT_EQ(r.outcome, RunResult::Outcome::GuestExit) << r.diagnosis;
  // cpu 0's store to line A retired at 1,001 ns, to line B at 2,002 ns.
  EXPECT_EQ(woke, (std::vector<std::pair<unsigned, uint64_t>>{{1, 1001}, {3, 1001}, {2, 2002}}));
  for (unsigned cpu = 1; cpu < 4; ++cpu) EXPECT_EQ(rig.wakes(cpu, WakeCause::MwaitStore), 1u) << "cpu " << cpu;
}

}  // namespace
}  // namespace topolab
