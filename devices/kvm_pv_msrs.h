// SPDX-License-Identifier: GPL-2.0-or-later
// The MSRs a KVM host gives one vCPU for its paravirtual features
// (Linux Documentation/virt/kvm/x86/msr.rst), with the checks
// arch/x86/kvm/x86.c kvm_set_msr_common makes, and the structures the host
// writes into guest memory for them: kvmclock's pvclock_vcpu_time_info and
// pvclock_wall_clock, and kvm_steal_time.
//
// Pure: which writes #GP, what reads return, and what a write asks of the
// host; the vCPU (emu/machine_cpu.h) writes the pages on virtual time.
//
// Behaviour as KVM's, with these choices (docs/deviations.md):
// - no asynchronous page faults (MSR_KVM_ASYNC_PF_*: #GP);
// - steal time stays 0 and `preempted` 0: each vCPU has a host CPU of its
//   own in the cost model, so the host never runs another task on it;
// - PV EOI is accepted, and the host never sets its pending bit: KVM sets
//   it only without APIC virtualisation, and topolab's cost model
//   virtualises EOI (an EOI costs no exit either way).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "base/kvm_para.h"

namespace topolab {

// What the vCPU's host offers.
struct KvmPvHost {
  bool present = false;   // a KVM host (-cpu kvm=on): its MSRs exist
  bool enforce = false;   // kvm-pv-enforce-cpuid: each MSR needs its CPUID bit
  uint32_t features = 0;  // CPUID 0x40000001 EAX
  bool offers(unsigned feature_bit) const { return (features >> feature_bit) & 1; }
};

// What a write asks the host to write into guest memory.
enum class KvmPvUpdate : uint8_t { None, WallClock, SystemTime, StealTime };

class KvmPvMsrs {
 public:
  KvmPvMsrs() = default;
  explicit KvmPvMsrs(KvmPvHost host) : host_(host) {}

  // One of KVM's MSRs, which this vCPU's host answers (reads and writes of
  // it come here, and may still #GP).
  bool handles(uint32_t msr) const;
  // nullopt: #GP.
  std::optional<uint64_t> read(uint32_t msr) const;
  std::optional<KvmPvUpdate> write(uint32_t msr, uint64_t value);
  // A vCPU reset (power-on or INIT): every MSR at its reset value.
  void reset();

  // Where kvmclock's time page is, while enabled.
  std::optional<uint64_t> system_time_page() const;
  // Where the steal-time area is, while enabled.
  std::optional<uint64_t> steal_time_area() const;
  // The guest address of the last wall-clock write.
  uint64_t wall_clock_address() const { return wall_clock_; }
  // MSR_KVM_POLL_CONTROL bit 0: the host may halt-poll (KVM's
  // kvm_arch_no_poll); the guest's haltpoll driver clears it.
  bool host_may_poll() const { return poll_control_ & 1; }
  bool stable_clock() const { return host_.offers(KVM_FEATURE_CLOCKSOURCE_STABLE_BIT); }
  const KvmPvHost& host() const { return host_; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(host_.present, host_.enforce, host_.features, wall_clock_, system_time_, steal_time_, pv_eoi_, poll_control_);
  }

 private:
  // Whether `msr` is usable: the host is there and, with enforce, CPUID
  // announces the feature.
  bool usable(uint32_t msr) const;

  KvmPvHost host_;
  uint64_t wall_clock_ = 0;
  uint64_t system_time_ = 0;
  uint64_t steal_time_ = 0;
  uint64_t pv_eoi_ = 0;
  uint64_t poll_control_ = 1;
};

// kvmclock's scale (KVM's kvm_get_time_scale): guest ns =
// ((tsc delta << shift, or >> -shift) * mul) >> 32.
struct PvclockScale {
  uint32_t mul = 0;
  int8_t shift = 0;
  bool operator==(const PvclockScale&) const = default;
};
PvclockScale pvclock_scale(uint64_t tsc_hz);
// What a guest computes from a pvclock page (Linux __pvclock_read_cycles).
uint64_t pvclock_ns(uint64_t system_time_ns, uint64_t tsc_timestamp, PvclockScale scale, uint64_t tsc);

inline constexpr uint8_t PVCLOCK_TSC_STABLE_BIT = 1 << 0;

// struct pvclock_vcpu_time_info (32 bytes).
std::array<uint8_t, 32> pvclock_time_info(uint32_t version, uint64_t tsc_timestamp, uint64_t system_time_ns,
                                          PvclockScale scale, uint8_t flags);
// struct pvclock_wall_clock (12 bytes): the wall-clock time at which
// kvmclock reads 0.
std::array<uint8_t, 12> pvclock_wall_clock(uint32_t version, uint32_t sec, uint32_t nsec);
// The version a host writes after the guest's `old` one: KVM makes it odd
// while it writes and even again after, so a guest never reads a torn copy.
inline uint32_t pvclock_next_version(uint32_t old) { return ((old + 1) | 1) + 1; }
// kvm_steal_time: its version at offset 8 and preempted at 16.
inline constexpr uint64_t kStealTimeVersionOffset = 8;
inline constexpr uint64_t kStealTimePreemptedOffset = 16;

}  // namespace topolab
