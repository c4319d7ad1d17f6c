// One deterministic queue of timed events on virtual time, after Dolphin's
// CoreTiming: events run in (time, sequence) order, so events due at the same
// time run first-in first-out, whatever the host does. Cross-vCPU effects
// (IPIs, INIT/SIPI, timer expiries, MWAIT wakeups) go through here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

namespace topolab {

class EventQueue {
 public:
  using EventId = uint64_t;
  // `now` is the time the queue is run at; `lateness` = now - the time the
  // event was scheduled for (events scheduled into the past run late).
  using Callback = std::function<void(uint64_t now, uint64_t lateness)>;

  EventId schedule(uint64_t when, Callback callback);
  // Returns false if the event already ran or was cancelled.
  bool cancel(EventId id);

  std::optional<uint64_t> next_time() const;
  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }

  // Runs every event due at or before `now`, in order, including events
  // that callbacks schedule for times <= now. Returns how many ran.
  size_t run_until(uint64_t now);

 private:
  using Key = std::pair<uint64_t, EventId>;  // (time, sequence)
  std::map<Key, Callback> events_;
  std::map<EventId, uint64_t> time_of_;  // for cancel
  EventId next_id_ = 0;
};

}  // namespace topolab
