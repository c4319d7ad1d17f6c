// SPDX-License-Identifier: GPL-2.0-or-later
// KVM's paravirtual features as a guest on a KVM host sees them
// (Linux Documentation/virt/kvm/x86/cpuid.rst), with QEMU 7.2's -cpu
// spellings and defaults: which are on, and the words CPUID 0x40000001
// announces them in. Pure data; the host side (the MSRs and hypercalls
// each feature brings) is devices/kvm_pv_msrs.h and devices/kvm_hypercall.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/kvm_para.h"

namespace topolab {

// The features topolab's host gives, in the order `topolab models` lists them.
enum class KvmPvFeature : uint8_t {
  Clock,           // kvmclock: KVM_FEATURE_CLOCKSOURCE and CLOCKSOURCE2
  ClockStableBit,  // kvmclock-stable-bit: KVM_FEATURE_CLOCKSOURCE_STABLE_BIT
  NoPioDelay,      // kvm-nopiodelay: KVM_FEATURE_NOP_IO_DELAY
  StealTime,       // kvm-steal-time: KVM_FEATURE_STEAL_TIME
  PvEoi,           // kvm-pv-eoi: KVM_FEATURE_PV_EOI
  PvUnhalt,        // kvm-pv-unhalt: KVM_FEATURE_PV_UNHALT (KVM_HC_KICK_CPU)
  PvTlbFlush,      // kvm-pv-tlb-flush: KVM_FEATURE_PV_TLB_FLUSH
  PvIpi,           // kvm-pv-ipi: KVM_FEATURE_PV_SEND_IPI (KVM_HC_SEND_IPI)
  PollControl,     // kvm-poll-control: KVM_FEATURE_POLL_CONTROL
  PvSchedYield,    // kvm-pv-sched-yield: KVM_FEATURE_PV_SCHED_YIELD
  HintDedicated,   // kvm-hint-dedicated: KVM_HINTS_REALTIME (EDX, a hint)
};
inline constexpr size_t kKvmPvFeatures = static_cast<size_t>(KvmPvFeature::HintDedicated) + 1;

struct KvmPvFeatureInfo {
  KvmPvFeature feature;
  std::string_view name;  // QEMU's property
  uint32_t eax_bits;      // CPUID 0x40000001 EAX (features)
  uint32_t edx_bits;      // CPUID 0x40000001 EDX (hints)
  bool qemu_default;      // on in QEMU 7.2's kvm_default_props
};
std::span<const KvmPvFeatureInfo> kvm_pv_features();
const KvmPvFeatureInfo& kvm_pv_feature(KvmPvFeature feature);
const KvmPvFeatureInfo* find_kvm_pv_feature(std::string_view name);

// QEMU names a KVM feature topolab's host cannot give: the reason, or
// nullopt for a name QEMU does not have either.
std::optional<std::string_view> kvm_pv_refusal(std::string_view name);

// The -cpu properties that switch off every feature QEMU gives a KVM guest
// by default (",-kvmclock,..."): kvm=on with them is the bare KVM signature.
std::string kvm_pv_defaults_off();

// The features a -cpu argument leaves on.
class KvmPvSet {
 public:
  // QEMU's defaults for a KVM guest.
  static KvmPvSet qemu_defaults();
  bool has(KvmPvFeature f) const { return on_[static_cast<size_t>(f)]; }
  void set(KvmPvFeature f, bool on) { on_[static_cast<size_t>(f)] = on; }
  bool any() const;
  uint32_t cpuid_eax() const;
  uint32_t cpuid_edx() const;
  bool operator==(const KvmPvSet&) const = default;

 private:
  std::array<bool, kKvmPvFeatures> on_{};
};

}  // namespace topolab
