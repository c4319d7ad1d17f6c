// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/stats.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace topolab {
namespace {

TEST(Stats, CountsSendsOncePerIcrWriteAndReceivesPerTarget) {
  Stats stats(4);
  // CPU 0 broadcasts a fixed IPI (vector 0xfd) to all but itself.
  stats.record_send(0, ApicDeliveryMode::Fixed, ApicShorthand::AllExcludingSelf, 0xfd);
  for (unsigned t = 1; t < 4; ++t) stats.record_ipi(0, t, ApicDeliveryMode::Fixed, 0xfd, /*target_halted=*/t == 2);
  EXPECT_EQ(stats.vcpu(0).total_sent(), 1u);
  EXPECT_EQ(stats.vcpu(0).ipis_sent_by_shorthand[static_cast<size_t>(ApicShorthand::AllExcludingSelf)], 1u);
  EXPECT_EQ(stats.vcpu(0).sent_by_vector.at(0xfd), 1u);
  EXPECT_EQ(stats.vcpu(2).received_while_halted, 1u);
  EXPECT_EQ(stats.vcpu(3).received_while_running, 1u);
  EXPECT_EQ(stats.vcpu(3).received_by_vector.at(0xfd), 1u);
  EXPECT_EQ(stats.ipi_matrix().size(), 3u);
  EXPECT_EQ(stats.ipi_matrix().at({0, 2}), 1u);
}

TEST(Stats, VectorlessModesKeepNoVector) {
  Stats stats(2);
  stats.record_send(0, ApicDeliveryMode::Init, ApicShorthand::None, 0);
  stats.record_ipi(0, 1, ApicDeliveryMode::Init, 0, true);
  stats.record_send(0, ApicDeliveryMode::StartUp, ApicShorthand::None, 0x08);
  stats.record_ipi(0, 1, ApicDeliveryMode::StartUp, 0x08, true);
  EXPECT_TRUE(stats.vcpu(0).sent_by_vector.empty());
  EXPECT_TRUE(stats.vcpu(1).received_by_vector.empty());
  EXPECT_EQ(stats.vcpu(1).ipis_received[static_cast<size_t>(ApicDeliveryMode::StartUp)], 1u);
  EXPECT_EQ(stats.ipi_matrix().at({0, 1}), 2u);
}

TEST(Stats, WakesAndUndeliverableAreCountedPerVcpu) {
  Stats stats(2);
  stats.record_wake(1, WakeCause::Sipi);
  stats.record_wake(1, WakeCause::Interrupt);
  stats.record_wake(1, WakeCause::Interrupt);
  stats.record_undeliverable(0);
  EXPECT_EQ(stats.vcpu(1).wakes[static_cast<size_t>(WakeCause::Interrupt)], 2u);
  EXPECT_EQ(stats.vcpu(0).ipis_to_nobody, 1u);
  EXPECT_THROW(stats.vcpu(2), std::out_of_range);
}

TEST(Stats, NamesAreStable) {
  // Report schemas depend on these spellings.
  EXPECT_EQ(to_string(ApicDeliveryMode::LowestPriority), "lowest-priority");
  EXPECT_EQ(to_string(ApicDeliveryMode::StartUp), "startup");
  EXPECT_EQ(to_string(ApicDeliveryMode::Nmi), "nmi");  // past the reserved mode's slot
  EXPECT_EQ(to_string(ApicDeliveryMode::ExtInt), "extint");
  EXPECT_EQ(to_string(ApicShorthand::AllExcludingSelf), "all-but-self");
  EXPECT_EQ(to_string(WakeCause::MwaitStore), "mwait-store");
}

TEST(Stats, AWindowIsTheDifferenceOfTwoSnapshots) {
  Stats stats(2);
  stats.record_send(0, ApicDeliveryMode::Fixed, ApicShorthand::None, 0xfd);
  stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfd, true);
  stats.vcpu(1).exits[static_cast<size_t>(ExitKind::Hlt)] = 3;
  stats.vcpu(1).mwait_hints[0] = 2;
  const Stats begin = stats;
  stats.record_send(0, ApicDeliveryMode::Fixed, ApicShorthand::None, 0xfb);
  stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfb, false);
  stats.vcpu(1).exits[static_cast<size_t>(ExitKind::Hlt)] = 5;
  stats.vcpu(1).mwait_hints[0] = 2;
  stats.vcpu(1).run_ns = 40;
  const Stats window = stats.minus(begin);
  EXPECT_EQ(window.vcpu(1).received_by_vector.count(0xfd), 0u) << "no change, no entry";
  EXPECT_EQ(window.vcpu(1).received_by_vector.at(0xfb), 1u);
  EXPECT_EQ(window.vcpu(1).received_while_running, 1u);
  EXPECT_EQ(window.vcpu(1).received_while_halted, 0u);
  EXPECT_EQ(window.vcpu(1).exits[static_cast<size_t>(ExitKind::Hlt)], 2u);
  EXPECT_TRUE(window.vcpu(1).mwait_hints.empty());
  EXPECT_EQ(window.vcpu(1).host_busy_ns(), 40u);
  EXPECT_EQ(window.ipi_matrix().at({0, 1}), 1u);
}

TEST(Stats, TheTotalSumsEveryCounterOverTheVcpus) {
  Stats stats(3);
  stats.record_send(0, ApicDeliveryMode::Fixed, ApicShorthand::None, 0xfd);
  stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfd, true);
  stats.record_send(2, ApicDeliveryMode::Nmi, ApicShorthand::Self, 0);
  stats.record_ipi(2, 2, ApicDeliveryMode::Nmi, 0, false);
  stats.record_wake(1, WakeCause::Interrupt);
  stats.vcpu(1).exits[static_cast<size_t>(ExitKind::Hlt)] = 3;
  stats.vcpu(2).exits[static_cast<size_t>(ExitKind::Hlt)] = 4;
  const VcpuStats total = stats.total();
  EXPECT_EQ(total.total_sent(), 2u);
  EXPECT_EQ(total.ipis_received[static_cast<size_t>(ApicDeliveryMode::Nmi)], 1u);
  EXPECT_EQ(total.ipis_sent_by_shorthand[static_cast<size_t>(ApicShorthand::Self)], 1u);
  EXPECT_EQ(total.sent_by_vector, (std::map<uint8_t, uint64_t>{{0xfd, 1}}));
  EXPECT_EQ(total.received_by_vector, (std::map<uint8_t, uint64_t>{{0xfd, 1}}));
  EXPECT_EQ(total.wakes[static_cast<size_t>(WakeCause::Interrupt)], 1u);
  EXPECT_EQ(total.exits[static_cast<size_t>(ExitKind::Hlt)], 7u);
  EXPECT_EQ(total.received_while_halted + total.received_while_running, 2u);

  Stats plain(2);
  uint64_t n = 1;
  for (const ScalarCounter& c : scalar_counters()) {
    plain.vcpu(0).*c.member = n;
    plain.vcpu(1).*c.member = 10 * n++;
  }
  n = 1;
  for (const ScalarCounter& c : scalar_counters()) EXPECT_EQ(plain.total().*c.member, 11 * n++) << c.name;
}

TEST(Stats, EveryPlainCounterIsInTheWindowArithmetic) {
  VcpuStats later, earlier;
  uint64_t n = 1;
  for (const ScalarCounter& c : scalar_counters()) {
    later.*c.member = 100 * n;
    earlier.*c.member = n++;
  }
  const VcpuStats window = later.minus(earlier);
  n = 1;
  for (const ScalarCounter& c : scalar_counters()) {
    EXPECT_EQ(window.*c.member, 99 * n) << c.name;
    ++n;
  }
  // Names are unique: the JSON report keys by them.
  std::set<std::string_view> names;
  for (const ScalarCounter& c : scalar_counters()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  EXPECT_EQ(names.size(), 23u);
}

}  // namespace
}  // namespace topolab
