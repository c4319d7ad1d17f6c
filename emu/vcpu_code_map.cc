// SPDX-License-Identifier: GPL-2.0-or-later
#include "emu/vcpu_code_map.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace topolab::vcpu_internal {

unsigned CodeMap::join() {
  for (unsigned slot = 0; slot < slots_.size(); ++slot)
    if (!slots_[slot].live) {
      slots_[slot] = Slot{};
      slots_[slot].live = true;
      return slot;
    }
  slots_.emplace_back().live = true;
  return static_cast<unsigned>(slots_.size() - 1);
}

void CodeMap::leave(unsigned slot) {
  slots_[slot] = Slot{};
  for (auto it = holders_.begin(); it != holders_.end();) {
    std::erase(it->second, slot);
    it = it->second.empty() ? holders_.erase(it) : std::next(it);
  }
}

void CodeMap::code_added(unsigned slot, uint64_t page) {
  std::vector<unsigned>& holders = holders_[page];
  if (std::find(holders.begin(), holders.end(), slot) != holders.end()) return;
  holders.push_back(slot);
  for (unsigned other = 0; other < slots_.size(); ++other) {
    Slot& s = slots_[other];
    if (other == slot || !s.live) continue;
    s.work.protect.push_back(page);
    s.has_work = true;
  }
}

void CodeMap::stored(unsigned slot, uint64_t page) {
  const auto it = holders_.find(page);
  if (it == holders_.end()) return;
  std::vector<unsigned>& holders = it->second;
  bool self = false;
  for (unsigned holder : holders) {
    if (holder == slot) {
      self = true;
      continue;
    }
    Slot& s = slots_[holder];
    s.work.invalidate.push_back(page);
    s.has_work = true;
  }
  if (self) holders.assign(1, slot);
  else holders_.erase(it);
}

CodeMap::Work CodeMap::take_work(unsigned slot) {
  Slot& s = slots_[slot];
  Work work = std::move(s.work);
  s.work = {};
  s.has_work = false;
  for (std::vector<uint64_t>* pages : {&work.protect, &work.invalidate}) {
    std::sort(pages->begin(), pages->end());
    pages->erase(std::unique(pages->begin(), pages->end()), pages->end());
  }
  return work;
}

bool CodeMap::holds(unsigned slot, uint64_t page) const {
  const auto it = holders_.find(page);
  return it != holders_.end() && std::find(it->second.begin(), it->second.end(), slot) != it->second.end();
}

std::shared_ptr<CodeMap> code_map_for(const GuestRam& ram) {
  // Machines may run on several threads (an experiment's --jobs), each with
  // its own RAM: only this lookup is shared between them.
  static std::mutex mutex;
  static std::map<const GuestRam*, std::weak_ptr<CodeMap>> maps;
  const std::lock_guard lock(mutex);
  std::erase_if(maps, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<CodeMap>& slot = maps[&ram];
  std::shared_ptr<CodeMap> map = slot.lock();
  if (!map) slot = map = std::make_shared<CodeMap>();
  return map;
}

}  // namespace topolab::vcpu_internal
