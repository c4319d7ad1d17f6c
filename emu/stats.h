// SPDX-License-Identifier: GPL-2.0-or-later
// Stats: the product's voice. Everything a run counts about IPIs, halts and
// wakeups, per vCPU, and the source -> destination IPI matrix. Pure data;
// the machine records, the reports read (report/run_report.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/event_kinds.h"
#include "devices/local_apic.h"  // ApicDeliveryMode, ApicShorthand

namespace topolab {

struct VcpuStats {
  uint64_t instructions = 0;
  uint64_t hlt_entries = 0;
  uint64_t halted_ns = 0;  // not executing: in HLT or MWAIT, or waiting to resume
  // By the APIC's own delivery mode; the reserved mode's count stays 0 (the
  // run stops at such an ICR write) and reports leave it out.
  std::array<uint64_t, kApicDeliveryModes> ipis_sent{};
  std::array<uint64_t, kApicDeliveryModes> ipis_received{};
  std::array<uint64_t, kApicShorthands> ipis_sent_by_shorthand{};
  std::map<uint8_t, uint64_t> sent_by_vector;      // fixed and lowest-priority only
  std::map<uint8_t, uint64_t> received_by_vector;
  // Interrupts the vCPU took through its IDT, by vector: IPIs and device
  // interrupts alike, counted when their handler is entered, which is what a
  // guest's own counters count (Linux's RES line is 0xFD here). Two IPIs of
  // one vector that meet in IRR are two receptions but one interrupt taken.
  std::map<uint8_t, uint64_t> interrupts_taken;
  // Exceptions delivered through the IDT, by vector (14: page faults).
  std::map<uint8_t, uint64_t> exceptions_taken;
  uint64_t received_while_halted = 0;
  uint64_t received_while_running = 0;
  uint64_t ipis_to_nobody = 0;  // messages that matched no APIC
  std::array<uint64_t, kWakeCauses> wakes{};

  // Serializing system instructions reached (MachineCpu::system_instruction).
  std::array<uint64_t, kSystemInstructions> system_instructions{};

  // Idle instructions.
  uint64_t pauses = 0;
  uint64_t monitor_arms = 0;
  uint64_t mwait_entries = 0;
  std::map<uint32_t, uint64_t> mwait_hints;  // MWAIT EAX -> times
  // VMCALL/VMMCALL by hypercall number (devices/kvm_hypercall.h), each
  // one exit whatever it does: one KVM_HC_SEND_IPI may carry many IPIs.
  std::map<uint64_t, uint64_t> hypercalls;
  // Accepted WRMSRs of KVM's paravirtual MSRs (devices/kvm_pv_msrs.h), by
  // MSR: how a guest takes up kvmclock, steal time, PV EOI, poll control.
  std::map<uint32_t, uint64_t> kvm_msr_writes;
  // Spin skipping (emu/pause_loop.h): pause-loop exits, and the virtual
  // time the vCPU spent in skipped spins instead of running them.
  uint64_t ple_exits = 0;
  uint64_t skipped_ns = 0;

  // Loads and stores at physical addresses with no RAM and no device (open
  // bus: all ones read, stores dropped).
  uint64_t open_bus_reads = 0;
  uint64_t open_bus_writes = 0;

  // The cost model's view (virtual ns). The host CPU is busy while the
  // vCPU runs guest code (run_ns), handles exits (exit_ns), halt-polls
  // (host_poll_ns), waits in a passed-through MWAIT (host_mwait_ns) and
  // spins (skipped_ns too: a real host would have run those iterations).
  uint64_t run_ns = 0;
  std::array<uint64_t, kExitKinds> exits{};
  uint64_t exit_ns = 0;
  uint64_t halt_poll_hits = 0;    // woken while the host still polled
  uint64_t halt_poll_misses = 0;  // the host gave up polling and blocked
  uint64_t host_poll_ns = 0;
  uint64_t host_mwait_ns = 0;
  // KVM's own halt statistics (its debugfs names, report "kvm"), booked
  // at each wakeup from HLT: the host time polling that caught the
  // wakeup, polling in vain, and blocked; and the blocked wakeups.
  uint64_t halt_poll_success_ns = 0;
  uint64_t halt_poll_fail_ns = 0;
  uint64_t halt_wait_ns = 0;
  uint64_t halt_wakeups = 0;

  uint64_t total_sent() const;
  uint64_t total_received() const;
  uint64_t total_exits() const;
  uint64_t host_busy_ns() const { return run_ns + exit_ns + host_poll_ns + host_mwait_ns + skipped_ns; }
  // Every counter minus the same counter of `earlier` (a measuring window).
  VcpuStats minus(const VcpuStats& earlier) const;
  // Every member: a snapshot that left one out would resume with it zero.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(instructions, hlt_entries, halted_ns, ipis_sent, ipis_received, ipis_sent_by_shorthand, sent_by_vector,
       received_by_vector, interrupts_taken, exceptions_taken, received_while_halted, received_while_running,
       ipis_to_nobody, wakes);
    ar(pauses, monitor_arms, mwait_entries, mwait_hints, ple_exits, skipped_ns, open_bus_reads, open_bus_writes);
    ar(system_instructions, hypercalls, kvm_msr_writes);
    ar(run_ns, exits, exit_ns, halt_poll_hits, halt_poll_misses, host_poll_ns, host_mwait_ns);
    ar(halt_poll_success_ns, halt_poll_fail_ns, halt_wait_ns, halt_wakeups);
  }
};

// Every plain counter of VcpuStats with the name reports give it, in the
// order the JSON report lists them: a new counter is one row here (and its
// member), and the window arithmetic and the report follow.
struct ScalarCounter {
  std::string_view name;
  uint64_t VcpuStats::*member;
};
std::span<const ScalarCounter> scalar_counters();

// The names reports give the IPI counters' keys, e.g. "lowest-priority",
// "all-but-self".
std::string_view to_string(ApicDeliveryMode mode);
std::string_view to_string(ApicShorthand shorthand);

class Stats {
 public:
  explicit Stats(unsigned vcpus) : vcpus_(vcpus) {}
  Stats() = default;  // no vCPUs: what a snapshot's optional window loads into

  VcpuStats& vcpu(unsigned index) { return vcpus_.at(index); }
  const VcpuStats& vcpu(unsigned index) const { return vcpus_.at(index); }
  unsigned vcpu_count() const { return static_cast<unsigned>(vcpus_.size()); }

  // One IPI from `source` accepted by `target` (each target of a broadcast
  // counts once). `target_halted`: it found the target in HLT or MWAIT.
  void record_ipi(unsigned source, unsigned target, ApicDeliveryMode mode, uint8_t vector, bool target_halted);
  // One ICR write (or SELF_IPI) by `source`, however many CPUs it reaches.
  void record_send(unsigned source, ApicDeliveryMode mode, ApicShorthand shorthand, uint8_t vector);
  void record_undeliverable(unsigned source) { ++vcpu(source).ipis_to_nobody; }
  void record_wake(unsigned index, WakeCause cause) { ++vcpu(index).wakes[static_cast<size_t>(cause)]; }

  // Every counter minus `earlier`'s, which must be a copy of this Stats
  // taken before (a measuring window's begin).
  Stats minus(const Stats& earlier) const;
  // Every counter summed over the vCPUs.
  VcpuStats total() const;

  // The source -> destination matrix, sparse: 4,096 vCPUs would need 128 MiB dense.
  const std::map<std::pair<unsigned, unsigned>, uint64_t>& ipi_matrix() const { return matrix_; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(vcpus_, matrix_);  // a window's Stats loads into an empty one: Machine checks the machine's
  }

 private:
  std::vector<VcpuStats> vcpus_;
  std::map<std::pair<unsigned, unsigned>, uint64_t> matrix_;
};

}  // namespace topolab
