// SPDX-License-Identifier: GPL-2.0-or-later
// The cost model's rules, as pure functions of its parameters
// (model/cost_model.h, docs/cost_model.md): when an IPI leaves and
// arrives, when a halted vCPU resumes and whether the host was still
// halt-polling, and which exit an APIC write costs. The machine applies
// them; they change only virtual time and the exit counts.
#pragma once

#include <cstdint>
#include <optional>

#include "base/event_kinds.h"
#include "model/cost_model.h"

namespace topolab {

// When the IPI of an ICR write at `written_ns` leaves: at the write with IPI
// virtualisation, else icr_send_ns into the write's exit, where KVM sends it.
uint64_t ipi_send_ns(const CostModel& cost, uint64_t written_ns);

// When a running target sees an IPI sent at `sent_ns`: a posted interrupt,
// ipi_running_ns later; a self IPI at once.
uint64_t ipi_arrival_at_running_ns(const CostModel& cost, uint64_t sent_ns, bool self);

// The wake event an IPI gives a halted target. KVM kicks a vCPU blocked in
// HLT from the sender's exit, so the wakeup starts at the send
// (halt_wake_ns covers the rest). A vCPU in MWAIT is in guest mode (passed
// through, or spinning on trapped MWAITs) and takes a posted interrupt, as
// a running one does.
uint64_t ipi_wake_event_ns(const CostModel& cost, uint64_t sent_ns, bool target_in_mwait, bool self);

// A halted vCPU: since when, and whether MWAIT (not HLT) parked it.
struct HaltedVcpu {
  uint64_t halted_since_ns = 0;
  bool in_mwait = false;
  // The host may halt-poll this vCPU: the guest has not switched it off
  // (MSR_KVM_POLL_CONTROL, KVM's kvm_arch_no_poll).
  bool host_polls = true;
};

enum class HaltPoll : uint8_t { None, Hit, Miss };

struct Resumption {
  uint64_t resume_ns = 0;  // when the vCPU runs again
  HaltPoll poll = HaltPoll::None;
  // With a poll hit: how long the host was busy polling from the halt (it
  // polled, then the vCPU entered).
  std::optional<uint64_t> poll_busy_ns;
  bool operator==(const Resumption&) const = default;
};

// When a halted vCPU resumes for an event at `event_ns`:
// - at once if the event was there when it halted (KVM checks before it
//   blocks or polls; the CPU does not enter MWAIT's C1);
// - after a passed-through MWAIT, once out of C1 (mwait_wake_ns); after a
//   trapped one at once: the guest was spinning through MWAIT exits;
// - after a HLT, poll_wake_ns after the event if the host was still
//   halt-polling (a hit), else halt_wake_ns (a miss when polling was on);
//   a vCPU whose guest switched host polling off is never polled.
Resumption resume_from_halt(const CostModel& cost, const HaltedVcpu& halted, uint64_t event_ns);

// The exit an APIC register write costs, if any: a virtualised write none,
// an ICR write one unless IPIs are virtualised, any other an APIC exit.
std::optional<ExitKind> apic_write_exit(const CostModel& cost, ApicWriteKind kind);

}  // namespace topolab
