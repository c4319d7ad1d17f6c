// SPDX-License-Identifier: GPL-2.0-or-later
// One helper of the serialize() functions (base/state_archive.h) that
// headers use without including cereal.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace topolab {

// A loaded per-vCPU table must keep the size the configuration gave it: a
// snapshot of another shape is refused (restore_snapshot), never indexed.
template <class Archive, class Container>
void serialize_sized(Archive& ar, Container& table, const char* what) {
  const size_t expected = table.size();
  ar(table);
  if (table.size() != expected) throw std::length_error(std::string("a snapshot's ") + what + " has another size");
}

}  // namespace topolab
