// SPDX-License-Identifier: GPL-2.0-or-later
// The machine's one timeline: what happens next, and when, on virtual time.
// The loop asks it three things, each a lookup rather than a walk over the
// vCPUs:
// - IPIs on their way: an IPI (or a device's interrupt message) reaches a
//   running vCPU at its arrival time. Arrivals are ordered as Dolphin's
//   CoreTiming orders its events, by (time, sequence): same-time arrivals
//   come out first-in first-out, and one scheduled for a time already passed
//   comes out at the next take, never lost and never in the past.
// - APIC timers of halted vCPUs: at most one pending expiry per vCPU;
//   setting it again replaces (cancels) the one before, so a guest that
//   reprograms its timer, or a vCPU that wakes, leaves nothing stale behind.
// - clocks of running vCPUs: the earliest one runs next.
// - the board's timed lines (the PIT's IRQ 0): when one next changes.
//
// Dolphin has one "now" and so one heap. topolab has one clock per vCPU: an
// IPI is due when its target's clock passes its time, not when the earliest
// clock does, and a vCPU that halts takes every IPI already on its way at
// once. So each kind is held in the order its question needs: arrivals by
// (time, sequence) per target, timers and clocks by (time, vCPU index),
// ties to the lower index as the scheduler breaks them. Every key is kept by
// the machine at fixed points of its loop (Machine::rekey); the timeline
// itself knows nothing of vCPU states.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "base/state_sized.h"
#include "devices/local_apic.h"

namespace topolab {

// An IPI on its way: who sent it, what, and when it left. An interrupt
// message from a platform device (the I/O APIC) travels the same way, with
// `from_device` set and `sender` the vCPU whose access caused it; it is not
// counted as an IPI. So does a change of the 8259's INTR (`pic_intr`, from
// no sender, `message` unused): the vCPU it reaches looks at INTR then.
struct IpiInFlight {
  // `sender` of a message no vCPU's access caused (a timed device line).
  static constexpr unsigned kNoSender = ~0u;
  unsigned sender = 0;
  ApicMessage message;
  uint64_t sent_ns = 0;
  bool from_device = false;
  bool pic_intr = false;
  // KVM_HC_KICK_CPU to the vCPU `message` names: no interrupt, no IPI.
  bool kvm_kick = false;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(sender, message, sent_ns, from_device, pic_intr, kvm_kick);
  }
};

// A time and the vCPU it concerns.
struct CpuAt {
  uint64_t time = 0;
  unsigned cpu = 0;
  auto operator<=>(const CpuAt&) const = default;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(time, cpu);
  }
};

class Timeline {
 public:
  // What a running vCPU's clock says about the stores it may make, which
  // the spin horizon asks (emu/pause_loop.h, Machine::spin_horizon).
  enum class Clock : uint8_t {
    MayStore,       // it runs guest code that may store
    QuiescentSpin,  // parked in a spin nothing has changed since: it stores nothing before another vCPU does
    TimedSpin,      // parked the same way in a loop that reads the TSC: it leaves at a time it reads
  };

  explicit Timeline(unsigned cpus);

  // --- IPIs on their way ------------------------------------------------------
  void schedule_arrival(uint64_t at_ns, unsigned target, const IpiInFlight& ipi);
  std::optional<uint64_t> next_arrival(unsigned target) const;
  // Every arrival for `target` due at or before `until_ns`, in (time,
  // sequence) order, taken off the timeline.
  std::vector<IpiInFlight> take_arrivals(unsigned target, uint64_t until_ns);

  // --- APIC timers of halted vCPUs ------------------------------------------------
  // The one pending expiry of `cpu` (nullopt: none). `wakes`: its interrupt
  // would end the halt; a timer that cannot (masked, or the vCPU halted with
  // interrupts off) is kept apart, because only its expiries need settling.
  void set_timer(unsigned cpu, std::optional<uint64_t> at_ns, bool wakes);
  std::optional<uint64_t> timer(unsigned cpu) const { return slots_[cpu].timer; }
  bool timer_wakes(unsigned cpu) const { return slots_[cpu].timer_wakes; }
  // The earliest expiry that would wake its vCPU, ties to the lower index.
  std::optional<CpuAt> next_waking_timer() const;
  // The vCPUs with an expiry at or before `until_ns`, waking or not, in
  // (time, index) order; their expiries are taken off the timeline.
  std::vector<unsigned> take_due_timers(uint64_t until_ns);

  // --- Clocks of running vCPUs ----------------------------------------------------
  // nullopt: `cpu` is not running (halted, waiting for SIPI, or in its slice).
  void set_clock(unsigned cpu, std::optional<uint64_t> now_ns, Clock kind = Clock::MayStore);
  std::optional<uint64_t> clock(unsigned cpu) const { return slots_[cpu].clock; }
  Clock clock_kind(unsigned cpu) const { return slots_[cpu].kind; }
  // The earliest running clock, ties to the lower index.
  std::optional<CpuAt> earliest_clock() const;
  // The earliest clock of a running vCPU that may store before another does:
  // not a quiescent spinner, and, when the asker's own loop reads the TSC
  // (`asker_reads_time`), not one parked on the TSC either.
  std::optional<uint64_t> earliest_storing_clock(bool asker_reads_time) const;
  // A slice that may have stored ran: no parked spinner is quiescent any
  // more until it has checked its loop again.
  void wake_parked_spinners();

  // --- The board's timed lines ------------------------------------------------------
  // When one next changes (PcBoard::next_timer_event), kept by the machine.
  void set_device_event(std::optional<uint64_t> at_ns) { device_event_ = at_ns; }
  std::optional<uint64_t> device_event() const { return device_event_; }

  template <class Archive>
  void serialize(Archive& ar) {
    serialize_sized(ar, slots_, "timeline");
    serialize_sized(ar, arrivals_, "timeline");
    ar(next_sequence_, timers_, clocks_, device_event_);
  }

 private:
  struct Slot {
    std::optional<uint64_t> clock;
    Clock kind = Clock::MayStore;
    std::optional<uint64_t> timer;
    bool timer_wakes = false;
    template <class Archive>
    void serialize(Archive& ar) {
      ar(clock, kind, timer, timer_wakes);
    }
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (time, sequence)

  std::set<CpuAt>& clocks(Clock kind) { return clocks_[static_cast<size_t>(kind)]; }
  const std::set<CpuAt>& clocks(Clock kind) const { return clocks_[static_cast<size_t>(kind)]; }

  std::vector<Slot> slots_;
  std::vector<std::map<Key, IpiInFlight>> arrivals_;  // per target
  uint64_t next_sequence_ = 0;
  std::array<std::set<CpuAt>, 2> timers_;  // [wakes]
  std::array<std::set<CpuAt>, 3> clocks_;  // by Clock
  std::optional<uint64_t> device_event_;
};

}  // namespace topolab
