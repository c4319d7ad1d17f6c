// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/timeline.h"

#include <algorithm>

namespace topolab {

namespace {

std::optional<CpuAt> first(const std::set<CpuAt>& set) {
  if (set.empty()) return std::nullopt;
  return *set.begin();
}

std::optional<CpuAt> earlier(std::optional<CpuAt> a, std::optional<CpuAt> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

Timeline::Timeline(unsigned cpus) : slots_(cpus), arrivals_(cpus) {}

// --- IPIs on their way ----------------------------------------------------------

void Timeline::schedule_arrival(uint64_t at_ns, unsigned target, const IpiInFlight& ipi) {
  arrivals_[target].emplace(Key{at_ns, next_sequence_++}, ipi);
}

std::optional<uint64_t> Timeline::next_arrival(unsigned target) const {
  const auto& mine = arrivals_[target];
  if (mine.empty()) return std::nullopt;
  return mine.begin()->first.first;
}

std::vector<IpiInFlight> Timeline::take_arrivals(unsigned target, uint64_t until_ns) {
  auto& mine = arrivals_[target];
  std::vector<IpiInFlight> due;
  auto end = mine.begin();
  for (; end != mine.end() && end->first.first <= until_ns; ++end) due.push_back(end->second);
  mine.erase(mine.begin(), end);
  return due;
}

// --- APIC timers of halted vCPUs ----------------------------------------------------

void Timeline::set_timer(unsigned cpu, std::optional<uint64_t> at_ns, bool wakes) {
  Slot& slot = slots_[cpu];
  if (slot.timer) timers_[slot.timer_wakes].erase({*slot.timer, cpu});
  slot.timer = at_ns;
  slot.timer_wakes = at_ns && wakes;
  if (at_ns) timers_[slot.timer_wakes].insert({*at_ns, cpu});
}

std::optional<CpuAt> Timeline::next_waking_timer() const { return first(timers_[true]); }

std::vector<unsigned> Timeline::take_due_timers(uint64_t until_ns) {
  std::vector<CpuAt> due;
  for (auto& set : timers_) {
    auto end = set.begin();
    for (; end != set.end() && end->time <= until_ns; ++end) due.push_back(*end);
    set.erase(set.begin(), end);
  }
  std::sort(due.begin(), due.end());
  std::vector<unsigned> cpus;
  for (const CpuAt& expiry : due) {
    slots_[expiry.cpu].timer.reset();
    slots_[expiry.cpu].timer_wakes = false;
    cpus.push_back(expiry.cpu);
  }
  return cpus;
}

// --- Clocks of running vCPUs ----------------------------------------------------------

void Timeline::set_clock(unsigned cpu, std::optional<uint64_t> now_ns, Clock kind) {
  Slot& slot = slots_[cpu];
  if (slot.clock) clocks(slot.kind).erase({*slot.clock, cpu});
  slot.clock = now_ns;
  slot.kind = now_ns ? kind : Clock::MayStore;
  if (now_ns) clocks(slot.kind).insert({*now_ns, cpu});
}

std::optional<CpuAt> Timeline::earliest_clock() const {
  std::optional<CpuAt> best;
  for (const auto& set : clocks_) best = earlier(best, first(set));
  return best;
}

std::optional<uint64_t> Timeline::earliest_storing_clock(bool asker_reads_time) const {
  std::optional<CpuAt> best = first(clocks(Clock::MayStore));
  if (!asker_reads_time) best = earlier(best, first(clocks(Clock::TimedSpin)));
  if (!best) return std::nullopt;
  return best->time;
}

void Timeline::wake_parked_spinners() {
  for (Clock parked : {Clock::QuiescentSpin, Clock::TimedSpin}) {
    for (const CpuAt& c : clocks(parked)) {
      slots_[c.cpu].kind = Clock::MayStore;
      clocks(Clock::MayStore).insert(c);
    }
    clocks(parked).clear();
  }
}

}  // namespace topolab
