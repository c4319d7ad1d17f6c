// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/kvm_hypercall.h"

#include <gtest/gtest.h>

namespace topolab {
namespace {

// A KVM host as QEMU sets it up: no enforcement of the PV CPUID bits.
const KvmPvHost kKvm{.present = true, .enforce = false, .features = 0};

// Four vCPUs with APIC IDs 0, 1, 2 and 3.
bool four_cpus(uint32_t id) { return id < 4; }

TEST(KvmHypercall, SendIpiSendsToEachApicIdOfTheBitmap) {
  // Vector 0x40, fixed, to APIC IDs 1 and 3 (bits 0 and 2 from min 1).
  const KvmHypercallResult r =
      kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 0b101, .a1 = 0, .a2 = 1, .a3 = 0x4040, .long_mode = true}, kKvm, four_cpus);
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
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a1 = 1, .a3 = 0x4041, .long_mode = true}, kKvm, exists).ipis.at(0).destination,
            64u);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a1 = 2, .a3 = 0x4041, .long_mode = false}, kKvm, exists).ipis.at(0).destination,
            33u);
}

// kvm-unit-tests' apic test_pv_ipi: min = 0xFFFFFFFF is above every APIC
// ID, and min + 64 wraps to 63, where the empty high word sends nothing.
TEST(KvmHypercall, SendIpiToNobodyReturnsZero) {
  const KvmHypercallResult r = kvm_hypercall(
      {.nr = KVM_HC_SEND_IPI, .a0 = 0xFFFFFFFF, .a1 = 0, .a2 = 0xFFFFFFFF, .a3 = 0, .long_mode = true}, kKvm, four_cpus);
  EXPECT_EQ(r.ret, 0);
  EXPECT_TRUE(r.ipis.empty());
}

TEST(KvmHypercall, UnknownNumbersAndUserModeFailAsKvm) {
  EXPECT_EQ(kvm_hypercall({.nr = 0xFFFFFFFFFFFFFFFF, .long_mode = true}, kKvm, four_cpus).ret, -KVM_ENOSYS);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 1, .long_mode = true, .cpl = 3}, kKvm, four_cpus).ret, -KVM_EPERM);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SCHED_YIELD, .long_mode = true}, kKvm, four_cpus).ret, 0);
  // 32-bit code: the upper halves are dropped before the number is read.
  EXPECT_EQ(kvm_hypercall({.nr = (uint64_t{1} << 32) | KVM_HC_SCHED_YIELD, .long_mode = false}, kKvm, four_cpus).ret, 0);
}

// KVM_HC_KICK_CPU names the vCPU to unhalt by APIC ID in a1 (a0: flags).
TEST(KvmHypercall, KickCpuNamesTheApicIdToUnhalt) {
  const KvmHypercallResult r = kvm_hypercall({.nr = KVM_HC_KICK_CPU, .a0 = 0, .a1 = 3, .long_mode = true}, kKvm, four_cpus);
  EXPECT_EQ(r.ret, 0);
  EXPECT_EQ(r.kick, 3u);
  EXPECT_TRUE(r.ipis.empty());
  EXPECT_FALSE(kvm_hypercall({.nr = KVM_HC_SCHED_YIELD, .a0 = 3, .long_mode = true}, kKvm, four_cpus).kick);
}

// KVM_CAP_ENFORCE_PV_FEATURE_CPUID (kvm-pv-enforce-cpuid=on): each
// hypercall needs its feature, else -KVM_ENOSYS and no effect.
TEST(KvmHypercall, EnforcedCpuidRefusesWhatItDoesNotAnnounce) {
  const KvmPvHost bare{.present = true, .enforce = true, .features = 0};
  const KvmHypercallResult ipi =
      kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 1, .a3 = 0x40, .long_mode = true}, bare, four_cpus);
  EXPECT_EQ(ipi.ret, -KVM_ENOSYS);
  EXPECT_TRUE(ipi.ipis.empty());
  const KvmHypercallResult kick = kvm_hypercall({.nr = KVM_HC_KICK_CPU, .a1 = 1, .long_mode = true}, bare, four_cpus);
  EXPECT_EQ(kick.ret, -KVM_ENOSYS);
  EXPECT_FALSE(kick.kick);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SCHED_YIELD, .long_mode = true}, bare, four_cpus).ret, -KVM_ENOSYS);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_VAPIC_POLL_IRQ, .long_mode = true}, bare, four_cpus).ret, 0);
  const KvmPvHost all{.present = true,
                      .enforce = true,
                      .features = 1u << KVM_FEATURE_PV_SEND_IPI | 1u << KVM_FEATURE_PV_UNHALT |
                                  1u << KVM_FEATURE_PV_SCHED_YIELD};
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SEND_IPI, .a0 = 1, .a3 = 0x40, .long_mode = true}, all, four_cpus).ret, 1);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_KICK_CPU, .a1 = 1, .long_mode = true}, all, four_cpus).kick, 1u);
  EXPECT_EQ(kvm_hypercall({.nr = KVM_HC_SCHED_YIELD, .long_mode = true}, all, four_cpus).ret, 0);
}

TEST(KvmHypercall, NamesAsKvmSpellsThem) {
  EXPECT_EQ(kvm_hypercall_name(KVM_HC_SEND_IPI), "send_ipi");
  EXPECT_EQ(kvm_hypercall_name(KVM_HC_KICK_CPU), "kick_cpu");
  EXPECT_EQ(kvm_hypercall_name(KVM_HC_SCHED_YIELD), "sched_yield");
  EXPECT_EQ(kvm_hypercall_name(99), "nr_99");
}

}  // namespace
}  // namespace topolab
