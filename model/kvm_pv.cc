// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/kvm_pv.h"

#include <algorithm>

namespace topolab {

namespace {

constexpr uint32_t bit(unsigned n) { return 1u << n; }

// Bits: include/uapi/asm/kvm_para.h. Defaults: QEMU 7.2's kvm_default_props
// (docs/system/i386/kvm-pv.rst): kvmclock, kvm-nopiodelay, kvm-asyncpf,
// kvm-steal-time, kvm-pv-eoi and kvmclock-stable-bit; kvm-asyncpf is one
// topolab cannot give (kvm_pv_refusal).
constexpr KvmPvFeatureInfo kFeatures[] = {
    {KvmPvFeature::Clock, "kvmclock", bit(KVM_FEATURE_CLOCKSOURCE) | bit(KVM_FEATURE_CLOCKSOURCE2), 0, true},
    {KvmPvFeature::ClockStableBit, "kvmclock-stable-bit", bit(KVM_FEATURE_CLOCKSOURCE_STABLE_BIT), 0, true},
    {KvmPvFeature::NoPioDelay, "kvm-nopiodelay", bit(KVM_FEATURE_NOP_IO_DELAY), 0, true},
    {KvmPvFeature::StealTime, "kvm-steal-time", bit(KVM_FEATURE_STEAL_TIME), 0, true},
    {KvmPvFeature::PvEoi, "kvm-pv-eoi", bit(KVM_FEATURE_PV_EOI), 0, true},
    {KvmPvFeature::PvUnhalt, "kvm-pv-unhalt", bit(KVM_FEATURE_PV_UNHALT), 0, false},
    {KvmPvFeature::PvTlbFlush, "kvm-pv-tlb-flush", bit(KVM_FEATURE_PV_TLB_FLUSH), 0, false},
    {KvmPvFeature::PvIpi, "kvm-pv-ipi", bit(KVM_FEATURE_PV_SEND_IPI), 0, false},
    {KvmPvFeature::PollControl, "kvm-poll-control", bit(KVM_FEATURE_POLL_CONTROL), 0, false},
    {KvmPvFeature::PvSchedYield, "kvm-pv-sched-yield", bit(KVM_FEATURE_PV_SCHED_YIELD), 0, false},
    {KvmPvFeature::HintDedicated, "kvm-hint-dedicated", 0, bit(KVM_HINTS_REALTIME), false},
};
static_assert(std::size(kFeatures) == kKvmPvFeatures);

struct Refused {
  std::string_view name;
  std::string_view why;
};
constexpr Refused kRefused[] = {
    {"kvm-asyncpf",
     "asynchronous page faults need a host that swaps guest memory out; topolab's guest RAM is always there"},
    {"kvm-asyncpf-int",
     "asynchronous page faults need a host that swaps guest memory out; topolab's guest RAM is always there"},
    {"kvm-mmu", "KVM_FEATURE_MMU_OP was removed from KVM in Linux 2.6.37"},
};

}  // namespace

std::span<const KvmPvFeatureInfo> kvm_pv_features() { return kFeatures; }

const KvmPvFeatureInfo& kvm_pv_feature(KvmPvFeature feature) { return kFeatures[static_cast<size_t>(feature)]; }

const KvmPvFeatureInfo* find_kvm_pv_feature(std::string_view name) {
  auto it = std::find_if(std::begin(kFeatures), std::end(kFeatures), [&](const auto& f) { return f.name == name; });
  return it == std::end(kFeatures) ? nullptr : &*it;
}

std::optional<std::string_view> kvm_pv_refusal(std::string_view name) {
  for (const Refused& r : kRefused)
    if (r.name == name) return r.why;
  return std::nullopt;
}

std::string kvm_pv_defaults_off() {
  std::string out;
  for (const KvmPvFeatureInfo& f : kFeatures)
    if (f.qemu_default) out += ",-" + std::string(f.name);
  return out;
}

KvmPvSet KvmPvSet::qemu_defaults() {
  KvmPvSet s;
  for (const KvmPvFeatureInfo& f : kFeatures) s.set(f.feature, f.qemu_default);
  return s;
}

bool KvmPvSet::any() const { return std::find(on_.begin(), on_.end(), true) != on_.end(); }

uint32_t KvmPvSet::cpuid_eax() const {
  uint32_t eax = 0;
  for (const KvmPvFeatureInfo& f : kFeatures)
    if (has(f.feature)) eax |= f.eax_bits;
  return eax;
}

uint32_t KvmPvSet::cpuid_edx() const {
  uint32_t edx = 0;
  for (const KvmPvFeatureInfo& f : kFeatures)
    if (has(f.feature)) edx |= f.edx_bits;
  return edx;
}

}  // namespace topolab
