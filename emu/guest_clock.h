// SPDX-License-Identifier: GPL-2.0-or-later
// The time guests read from the machine's clocks: the TSC, and the PM
// timer, PIT and RTC on virtual time.
//
// Each vCPU has its own virtual clock, and the scheduler lets one run up to
// a quantum ahead of another. Read naively, a clock would then go backwards
// between vCPUs: CPU 0 stores its TSC, CPU 1, a quantum behind, reads it and
// then its own smaller TSC. Linux's TSC synchronization check sees exactly
// that ("Measured N cycles TSC warp between CPUs") and stops using the TSC,
// which no real machine and no KVM guest would make it do.
//
// So a read gives the later of the reading vCPU's own time and the latest
// time any vCPU has read (a Lamport clock of reads): whatever one vCPU
// learns from another through memory was read earlier in execution order,
// so it is never later than what its own next read gives. A vCPU behind the
// others reads the same time until its own clock passes it. Deterministic:
// the reads happen in the scheduler's fixed order.
//
// Unsynced, each vCPU reads its own time, as topolab always did: the
// Multiboot testcases, the sched guest and their recorded results stand on
// it (MachineConfig::synced_clocks says which a machine has).
#pragma once

#include <algorithm>
#include <cstdint>

namespace topolab {

class GuestClock {
 public:
  // The machine decides once it has read the image, before any vCPU runs.
  void set_synced(bool synced) { synced_ = synced; }
  // The time a read at the vCPU's own time `own_ns` gives.
  uint64_t read(uint64_t own_ns) {
    if (!synced_) return own_ns;
    latest_ns_ = std::max(latest_ns_, own_ns);
    return latest_ns_;
  }
  uint64_t latest_read_ns() const { return latest_ns_; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(synced_, latest_ns_);
  }

 private:
  bool synced_ = false;
  uint64_t latest_ns_ = 0;
};

}  // namespace topolab
