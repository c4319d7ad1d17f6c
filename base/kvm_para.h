// SPDX-License-Identifier: GPL-2.0-or-later
// KVM's paravirtual ABI as a guest sees it (include/uapi/asm/kvm_para.h,
// Documentation/virt/kvm/x86/cpuid.rst, msr.rst and hypercalls.rst): the
// feature bits of CPUID 0x40000001, the MSRs they bring and the hypercall
// numbers. One spelling for the CPUID model (model/kvm_pv.h), the host's
// MSRs (devices/kvm_pv_msrs.h) and its hypercalls (devices/kvm_hypercall.h).
#pragma once

#include <cstdint>

namespace topolab {

// CPUID 0x40000001 EAX bit numbers.
inline constexpr unsigned KVM_FEATURE_CLOCKSOURCE = 0;
inline constexpr unsigned KVM_FEATURE_NOP_IO_DELAY = 1;
inline constexpr unsigned KVM_FEATURE_MMU_OP = 2;
inline constexpr unsigned KVM_FEATURE_CLOCKSOURCE2 = 3;
inline constexpr unsigned KVM_FEATURE_ASYNC_PF = 4;
inline constexpr unsigned KVM_FEATURE_STEAL_TIME = 5;
inline constexpr unsigned KVM_FEATURE_PV_EOI = 6;
inline constexpr unsigned KVM_FEATURE_PV_UNHALT = 7;
inline constexpr unsigned KVM_FEATURE_PV_TLB_FLUSH = 9;
inline constexpr unsigned KVM_FEATURE_PV_SEND_IPI = 11;
inline constexpr unsigned KVM_FEATURE_POLL_CONTROL = 12;
inline constexpr unsigned KVM_FEATURE_PV_SCHED_YIELD = 13;
inline constexpr unsigned KVM_FEATURE_ASYNC_PF_INT = 14;
inline constexpr unsigned KVM_FEATURE_MSI_EXT_DEST_ID = 15;
inline constexpr unsigned KVM_FEATURE_CLOCKSOURCE_STABLE_BIT = 24;
// CPUID 0x40000001 EDX bit numbers (hints).
inline constexpr unsigned KVM_HINTS_REALTIME = 0;

// The MSRs.
inline constexpr uint32_t kMsrKvmWallClock = 0x11;    // with KVM_FEATURE_CLOCKSOURCE
inline constexpr uint32_t kMsrKvmSystemTime = 0x12;   // with KVM_FEATURE_CLOCKSOURCE
inline constexpr uint32_t kMsrKvmWallClockNew = 0x4B564D00;   // with KVM_FEATURE_CLOCKSOURCE2
inline constexpr uint32_t kMsrKvmSystemTimeNew = 0x4B564D01;  // with KVM_FEATURE_CLOCKSOURCE2
inline constexpr uint32_t kMsrKvmAsyncPfEn = 0x4B564D02;
inline constexpr uint32_t kMsrKvmStealTime = 0x4B564D03;
inline constexpr uint32_t kMsrKvmPvEoiEn = 0x4B564D04;
inline constexpr uint32_t kMsrKvmPollControl = 0x4B564D05;
inline constexpr uint64_t KVM_MSR_ENABLED = 1;  // bit 0 of the system time, steal time and PV EOI MSRs

// Hypercall numbers (include/uapi/linux/kvm_para.h).
inline constexpr uint64_t KVM_HC_VAPIC_POLL_IRQ = 1;
inline constexpr uint64_t KVM_HC_KICK_CPU = 5;
inline constexpr uint64_t KVM_HC_SEND_IPI = 10;
inline constexpr uint64_t KVM_HC_SCHED_YIELD = 11;
// Error returns (include/uapi/linux/kvm_para.h).
inline constexpr int64_t KVM_ENOSYS = 1000;
inline constexpr int64_t KVM_EPERM = 1;  // EPERM

}  // namespace topolab
