// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/kvm_pv_msrs.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

constexpr uint32_t kAllFeatures = 1u << KVM_FEATURE_CLOCKSOURCE | 1u << KVM_FEATURE_CLOCKSOURCE2 |
                                  1u << KVM_FEATURE_STEAL_TIME | 1u << KVM_FEATURE_PV_EOI |
                                  1u << KVM_FEATURE_POLL_CONTROL;
constexpr uint32_t kMsrs[] = {kMsrKvmWallClock, kMsrKvmSystemTime, kMsrKvmWallClockNew, kMsrKvmSystemTimeNew,
                              kMsrKvmStealTime, kMsrKvmPvEoiEn,    kMsrKvmPollControl};

TEST(KvmPvMsrs, NoneWithoutAKvmHost) {
  KvmPvMsrs msrs(KvmPvHost{.present = false, .enforce = false, .features = kAllFeatures});
  for (uint32_t msr : kMsrs) {
    EXPECT_FALSE(msrs.handles(msr)) << std::hex << msr;
    EXPECT_FALSE(msrs.read(msr));
    EXPECT_FALSE(msrs.write(msr, 0));
  }
}

// As KVM without KVM_CAP_ENFORCE_PV_FEATURE_CPUID (QEMU's default): a KVM
// host answers every MSR whatever CPUID says; with it each needs its bit.
TEST(KvmPvMsrs, EnforceCpuidGatesEachMsrOnItsFeature) {
  KvmPvMsrs open(KvmPvHost{.present = true, .enforce = false, .features = 0});
  KvmPvMsrs enforced(KvmPvHost{.present = true, .enforce = true, .features = 0});
  KvmPvMsrs all(KvmPvHost{.present = true, .enforce = true, .features = kAllFeatures});
  for (uint32_t msr : kMsrs) {
    EXPECT_TRUE(open.read(msr)) << std::hex << msr;
    EXPECT_FALSE(enforced.read(msr)) << std::hex << msr;
    EXPECT_FALSE(enforced.write(msr, 0)) << std::hex << msr;
    EXPECT_TRUE(all.read(msr)) << std::hex << msr;
  }
  KvmPvMsrs only_new(KvmPvHost{.present = true, .enforce = true, .features = 1u << KVM_FEATURE_CLOCKSOURCE2});
  EXPECT_TRUE(only_new.write(kMsrKvmSystemTimeNew, 0x1001));
  EXPECT_FALSE(only_new.write(kMsrKvmSystemTime, 0x1001)) << "the old MSRs need KVM_FEATURE_CLOCKSOURCE";
  // No asynchronous page faults, enforced or not.
  EXPECT_TRUE(open.handles(kMsrKvmAsyncPfEn));
  EXPECT_FALSE(open.write(kMsrKvmAsyncPfEn, 0));
  EXPECT_FALSE(open.read(kMsrKvmAsyncPfEn));
}

TEST(KvmPvMsrs, ResetValuesAndReservedBitsAsKvm) {
  KvmPvMsrs msrs(KvmPvHost{.present = true, .enforce = false, .features = kAllFeatures});
  EXPECT_EQ(msrs.read(kMsrKvmPollControl), 1u) << "the host may poll until the guest says otherwise";
  EXPECT_TRUE(msrs.host_may_poll());
  EXPECT_EQ(msrs.write(kMsrKvmPollControl, 0), KvmPvUpdate::None);
  EXPECT_FALSE(msrs.host_may_poll());
  EXPECT_FALSE(msrs.write(kMsrKvmPollControl, 2)) << "bits 63:1 are reserved";
  EXPECT_EQ(msrs.read(kMsrKvmPollControl), 0u) << "a refused write changes nothing";

  EXPECT_FALSE(msrs.write(kMsrKvmPvEoiEn, 0x1003)) << "the flag word must be 4-byte aligned";
  EXPECT_EQ(msrs.write(kMsrKvmPvEoiEn, 0x1005), KvmPvUpdate::None);
  EXPECT_EQ(msrs.read(kMsrKvmPvEoiEn), 0x1005u);

  for (unsigned b = 1; b <= 5; ++b) EXPECT_FALSE(msrs.write(kMsrKvmStealTime, 0x2000 | 1u << b | 1)) << b;
  EXPECT_EQ(msrs.write(kMsrKvmStealTime, 0x2040 | 1), KvmPvUpdate::StealTime);
  EXPECT_EQ(msrs.steal_time_area(), 0x2040u);
  EXPECT_EQ(msrs.write(kMsrKvmStealTime, 0x2040), KvmPvUpdate::None);
  EXPECT_FALSE(msrs.steal_time_area());

  EXPECT_EQ(msrs.write(kMsrKvmSystemTimeNew, 0x3000), KvmPvUpdate::None) << "bit 0 clear: kvmclock off";
  EXPECT_FALSE(msrs.system_time_page());
  EXPECT_EQ(msrs.write(kMsrKvmSystemTimeNew, 0x3021), KvmPvUpdate::SystemTime);
  EXPECT_EQ(msrs.system_time_page(), 0x3020u);
  EXPECT_EQ(msrs.read(kMsrKvmSystemTime), 0x3021u) << "the old and new MSRs are one register";
  EXPECT_EQ(msrs.write(kMsrKvmWallClockNew, 0x4000), KvmPvUpdate::WallClock);
  EXPECT_EQ(msrs.wall_clock_address(), 0x4000u);

  msrs.reset();
  EXPECT_TRUE(msrs.host_may_poll());
  EXPECT_FALSE(msrs.system_time_page());
  EXPECT_EQ(msrs.read(kMsrKvmPvEoiEn), 0u);
}

// KVM's kvm_get_time_scale for common TSC rates, and the time a guest
// computes from them.
TEST(Pvclock, ScaleTurnsTicksIntoNanoseconds) {
  EXPECT_EQ(pvclock_scale(2'000'000'000), (PvclockScale{0x80000000u, 0}));
  EXPECT_EQ(pvclock_scale(1'000'000'000), (PvclockScale{0x80000000u, 1}));
  for (uint64_t hz : {1'000'000'000ull, 2'000'000'000ull, 2'400'000'000ull, 3'000'000'000ull, 100'000'000ull}) {
    const PvclockScale s = pvclock_scale(hz);
    const uint64_t one_second = pvclock_ns(0, 1000, s, 1000 + hz);
    EXPECT_NEAR(static_cast<double>(one_second), 1e9, 2) << hz;
    EXPECT_EQ(pvclock_ns(500, 1000, s, 1000), 500u) << "the timestamp itself is the page's time";
  }
}

TEST(Pvclock, StructuresAsTheGuestReadsThem) {
  const std::array<uint8_t, 32> page = pvclock_time_info(2, 0x1122334455667788, 0x99, {0x80000000u, -1}, 1);
  EXPECT_EQ(page[0], 2);
  EXPECT_EQ(page[8], 0x88);
  EXPECT_EQ(page[15], 0x11);
  EXPECT_EQ(page[16], 0x99);
  EXPECT_EQ(page[27], 0x80);
  EXPECT_EQ(page[28], 0xFF) << "shift is signed";
  EXPECT_EQ(page[29], PVCLOCK_TSC_STABLE_BIT);
  const std::array<uint8_t, 12> wall = pvclock_wall_clock(4, 0x01020304, 5);
  EXPECT_EQ(wall[0], 4);
  EXPECT_EQ(wall[4], 0x04);
  EXPECT_EQ(wall[7], 0x01);
  EXPECT_EQ(wall[8], 5);
  // Odd while the host writes, even after: from junk or from a last version.
  EXPECT_EQ(pvclock_next_version(0), 2u);
  EXPECT_EQ(pvclock_next_version(1), 4u);
  EXPECT_EQ(pvclock_next_version(2), 4u);
}

}  // namespace
}  // namespace topolab
