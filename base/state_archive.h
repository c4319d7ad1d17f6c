// SPDX-License-Identifier: GPL-2.0-or-later
// The archives a machine's state is saved to and loaded from (snapshots:
// emu/machine_snapshot.h). Every stateful class of the machine lists its
// state once, in a public member
//
//   template <class Archive> void serialize(Archive& ar) { ar(a_, b_, c_); }
//
// that cereal (a well-kept header-only library, Debian's libcereal-dev)
// calls both to save and to load, so the two directions cannot disagree.
// What belongs in it: every member that can change after construction.
// What does not: references, what the constructor derives from the
// configuration (the same configuration rebuilds it), and caches the class
// rebuilds by itself (say so beside them). The header of a class that
// serializes needs no include of its own: the archive's type support
// (optional, vector, map, ...) is included here, where the templates are
// instantiated.
#pragma once

#include "base/state_sized.h"

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/memory.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace topolab {


using StateWriter = cereal::BinaryOutputArchive;
using StateReader = cereal::BinaryInputArchive;

// The state of `object` as bytes (host byte order: a snapshot is read back
// by the same build on the same kind of host, which its file checks).
template <class T>
std::string save_state_bytes(T& object) {
  std::ostringstream out(std::ios::binary);
  {
    StateWriter writer(out);
    object.serialize(writer);
  }
  return std::move(out).str();
}

// Loads what save_state_bytes gave into `object`. Throws
// cereal::Exception when the bytes end early and std::length_error when
// some are left over: either way they were saved by another layout (a
// member added or dropped), which must not load as if it fitted.
template <class T>
void load_state_bytes(T& object, std::string_view bytes) {
  std::istringstream in(std::string(bytes), std::ios::binary);
  {
    StateReader reader(in);
    object.serialize(reader);
  }
  if (in.peek() != std::char_traits<char>::eof()) throw std::length_error("bytes left over");
}

}  // namespace topolab
