#include "emu/event_queue.h"

namespace topolab {

EventQueue::EventId EventQueue::schedule(uint64_t when, Callback callback) {
  EventId id = next_id_++;
  events_.emplace(Key{when, id}, std::move(callback));
  time_of_.emplace(id, when);
  return id;
}

bool EventQueue::cancel(EventId id) {
  auto it = time_of_.find(id);
  if (it == time_of_.end()) return false;
  events_.erase(Key{it->second, id});
  time_of_.erase(it);
  return true;
}

std::optional<uint64_t> EventQueue::next_time() const {
  if (events_.empty()) return std::nullopt;
  return events_.begin()->first.first;
}

size_t EventQueue::run_until(uint64_t now) {
  size_t ran = 0;
  while (!events_.empty() && events_.begin()->first.first <= now) {
    auto node = events_.extract(events_.begin());
    time_of_.erase(node.key().second);
    node.mapped()(now, now - node.key().first);
    ++ran;
  }
  return ran;
}

}  // namespace topolab
