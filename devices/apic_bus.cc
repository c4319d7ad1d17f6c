// SPDX-License-Identifier: GPL-2.0-or-later
#include "devices/apic_bus.h"

#include <algorithm>
#include <utility>

namespace topolab {

ApicBus::ApicBus(std::vector<const LocalApic*> apics, IndexOfApicId index_of_apic_id)
    : apics_(std::move(apics)), index_of_apic_id_(std::move(index_of_apic_id)) {
  for (const LocalApic* apic : apics_)
    if (apic->id() != apic->initial_id()) renumbered_ = true;
}

void ApicBus::note_write(const ApicWrite& write) {
  // Once renumbered, xAPIC unicasts keep the slow path: a guest that puts
  // every ID back is rare, and asking every APIC is always exact.
  if (write.id_changed) renumbered_ = true;
}

bool ApicBus::is_physical_unicast(const ApicMessage& message) const {
  if (message.shorthand != ApicShorthand::None || message.destination_mode != ApicDestinationMode::Physical)
    return false;
  if (message.x2apic) return message.destination != apic::X2APIC_BROADCAST;
  return message.destination != apic::XAPIC_BROADCAST && !renumbered_;
}

std::optional<unsigned> ApicBus::unicast_destination(const ApicMessage& message) const {
  const std::optional<unsigned> index = index_of_apic_id_(message.destination);
  if (index && *index < apics_.size() && apics_[*index]->matches(message)) return index;
  return std::nullopt;
}

std::vector<unsigned> ApicBus::destinations(const ApicMessage& message) const {
  std::vector<unsigned> targets;
  if (is_physical_unicast(message)) {
    if (auto index = unicast_destination(message)) targets.push_back(*index);
    return targets;
  }
  for (unsigned i = 0; i < apics_.size(); ++i)
    if (apics_[i]->matches(message)) targets.push_back(i);
  if (message.delivery_mode == ApicDeliveryMode::LowestPriority && targets.size() > 1) {
    const unsigned chosen = *std::min_element(targets.begin(), targets.end(), [this](unsigned a, unsigned b) {
      return std::pair(apics_[a]->arbitration_priority(), apics_[a]->id()) <
             std::pair(apics_[b]->arbitration_priority(), apics_[b]->id());
    });
    targets = {chosen};
  }
  return targets;
}

}  // namespace topolab
