// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/kvm_hypercall.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

// Four vCPUs with APIC IDs 0, 1, 2 and 3.
bool four_cpus(uint32_t id) { return id < 4; }

TEST(KvmHypercall, SendIpiSendsToEachApicIdOfTheBitmap) {
  // Vector 0x40, fixed, to APIC IDs 1 and 3 (bits 0 and 2 from min 1).
  const KvmHypercallResult r =
      kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 0b101, .a1 = 0, .a2 = 1, .a3 = 0x4040, .long_mode = true}, four_cpus);
  EXPECT_EQ(r.ret, 2);
  ASSERT_EQ(r.ipis.size(), 2u);
  EXPECT_EQ(r.ipis[0].destination, 1u);
  EXPECT_EQ(r.ipis[1].destination, 3u);
  EXPECT_EQ(r.ipis[0].vector, 0x40);
  EXPECT_EQ(r.ipis[0].delivery_mode, ApicDeliveryMode::Fixed);
  EXPECT_EQ(r.ipis[0].destination_mode, ApicDestinationMode::Physical);
  EXPECT_TRUE(r.ipis[0].level_assert);
}

TEST(KvmHypercall, SendIpiHighWordStartsAtMinPlusTheWordSize) {
  const auto exists = [](uint32_t id) { return id == 64 || id == 33; };
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a1 = 1, .a3 = 0x4041, .long_mode = true}, exists).ipis.at(0).destination,
            64u);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a1 = 2, .a3 = 0x4041, .long_mode = false}, exists).ipis.at(0).destination,
            33u);
}

// kvm-unit-tests' apic test_pv_ipi: min = 0xFFFFFFFF is above every APIC
// ID, and min + 64 wraps to 63, where the empty high word sends nothing.
TEST(KvmHypercall, SendIpiToNobodyReturnsZero) {
  const KvmHypercallResult r = kvm_hypercall(
      {.nr = KVM_HC_SEND_IPI, .a0 = 0xFFFFFFFF, .a1 = 0, .a2 = 0xFFFFFFFF, .a3 = 0, .long_mode = true}, four_cpus);
  EXPECT_EQ(r.ret, 0);
  EXPECT_TRUE(r.ipis.empty());
}

TEST(KvmHypercall, UnknownNumbersAndUserModeFailAsKvm) {
  EXPECT_EQ(kvm_hypercall({.nr = 0xFFFFFFFFFFFFFFFF, .long_mode = true}, four_cpus).ret, -KVM_ENOSYS);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 1, .long_mode = true, .cpl = 3}, four_cpus).ret, -KVM_EPERM);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SCHED_YIELD, .long_mode = true}, four_cpus).ret, 0);
  // 32-bit code: the upper halves are dropped before the number is read.
  EXPECT_EQ(kvm_hypercall({.nr = (uint64_t{1} << 32) | KVM_HC_SCHED_YIELD, .long_mode = false}, four_cpus).ret, 0);
}

}  // namespace
}  // namespace topolab
