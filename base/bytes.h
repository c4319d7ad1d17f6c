// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian loads from a byte image and alignment: what every loader
// and table writer needs, spelled once. The caller checks the bounds (a
// loader's first job is to say which field of a file runs past its end).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace topolab {

// The T at `offset` of `bytes`, as the little-endian x86 stores it.
template <typename T>
T load_le(std::span<const uint8_t> bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// `v` rounded up to a multiple of `alignment` (any positive number, not
// only a power of two).
constexpr uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

}  // namespace topolab
