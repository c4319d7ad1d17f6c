// A deterministic queue of timed events on virtual time, after Dolphin's
// CoreTiming: events come out in (time, sequence) order, so events due at
// the same time come out first-in first-out, whatever the host does, and an
// event queued for a time already passed comes out at the next take.
//
// The machine keeps its cross-vCPU effects in such queues: the IPIs sent in
// a slice until it ends (by send time), and each vCPU's IPIs still on their
// way to it (by arrival time). Timers and MWAIT wakes are not events: each
// APIC's timer is its own state (LocalApic::next_timer_event), and a store
// to a monitored line is found by comparing the line at the writer's slice
// end (docs/machine.md says why).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace topolab {

template <typename Event>
class EventQueue {
 public:
  void push(uint64_t when, Event event) { events_.emplace(Key{when, next_sequence_++}, std::move(event)); }

  std::optional<uint64_t> next_time() const {
    if (events_.empty()) return std::nullopt;
    return events_.begin()->first.first;
  }
  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }

  // Every event due at or before `now`, in order, taken out of the queue.
  std::vector<Event> take_due(uint64_t now) {
    std::vector<Event> due;
    while (!events_.empty() && events_.begin()->first.first <= now) {
      due.push_back(std::move(events_.begin()->second));
      events_.erase(events_.begin());
    }
    return due;
  }
  std::vector<Event> take_all() { return take_due(UINT64_MAX); }

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (time, sequence)
  std::map<Key, Event> events_;
  uint64_t next_sequence_ = 0;
};

}  // namespace topolab
