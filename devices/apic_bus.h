// SPDX-License-Identifier: GPL-2.0-or-later
// The APIC bus: which local APICs an interrupt message reaches (SDM 10.6.2,
// 10.12.9). A pure router over the machine's APICs: it never changes one,
// the machine hands each target the message (LocalApic::accept).
//
// - Physical unicast (no shorthand, not the broadcast ID) takes the fast
//   path: the topology maps the destination to the one APIC that can own
//   it, which matches() confirms. An x2APIC sender's destination is the
//   full initial x2APIC ID, unique by topology; an xAPIC sender's is the
//   ID register, so the fast path serves it only while no guest has
//   renumbered an APIC (note_write sees that happen).
// - Shorthands, broadcast, logical and cluster destinations ask every APIC.
// - Lowest priority is arbitrated here, deterministically: the lowest
//   arbitration priority, ties to the lowest APIC ID (no focus processor).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "devices/local_apic.h"

namespace topolab {

class ApicBus {
 public:
  // The index of the APIC whose initial ID is this (Topology::index_of_apic_id).
  using IndexOfApicId = std::function<std::optional<unsigned>(uint32_t initial_apic_id)>;

  // `apics[i]` is vCPU i's APIC; the pointers must outlive the bus.
  ApicBus(std::vector<const LocalApic*> apics, IndexOfApicId index_of_apic_id);

  // Tells the bus what a register write did (an xAPIC ID rewritten, a mode
  // change) so unicast routing stays exact.
  void note_write(const ApicWrite& write);

  // The indices of the APICs `message` is delivered to, ascending; one at
  // most for lowest priority. Empty: the message reaches nobody.
  std::vector<unsigned> destinations(const ApicMessage& message) const;

  // Snapshots (base/state_archive.h). renumbered_ is sticky (note_write
  // never clears it), so the APICs' IDs alone cannot rebuild it.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(renumbered_);
  }

 private:
  std::optional<unsigned> unicast_destination(const ApicMessage& message) const;
  bool is_physical_unicast(const ApicMessage& message) const;

  std::vector<const LocalApic*> apics_;
  IndexOfApicId index_of_apic_id_;
  // Some APIC answers to an ID other than its initial one (a rewritten xAPIC
  // ID register, or an xAPIC ID register too narrow for its initial ID).
  bool renumbered_ = false;
};

}  // namespace topolab
