// SPDX-License-Identifier: GPL-2.0-or-later
// Test-only: minimal Multiboot images built in memory, for the loader's
// tests and the machine's (which boot nothing, but load an image).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace topolab {
namespace {

constexpr uint32_t kMagic = 0x1badb002;

inline void put32(std::vector<uint8_t>& v, size_t off, uint32_t x) {
  if (v.size() < off + 4) v.resize(off + 4);
  std::memcpy(v.data() + off, &x, 4);
}
inline void put16(std::vector<uint8_t>& v, size_t off, uint16_t x) {
  if (v.size() < off + 2) v.resize(off + 2);
  std::memcpy(v.data() + off, &x, 2);
}

// A minimal ELF32 i386 image: one PT_LOAD of `code` (plus `bss` zero bytes)
// at `paddr`, with a Multiboot header right after the program header.
inline std::vector<uint8_t> make_elf(uint32_t paddr, std::vector<uint8_t> code, uint32_t bss = 0, uint32_t mb_flags = 0) {
  std::vector<uint8_t> f(0x100, 0);
  std::memcpy(f.data(), "\x7f" "ELF", 4);
  f[4] = 1, f[5] = 1, f[6] = 1;
  put16(f, 16, 2);       // ET_EXEC
  put16(f, 18, 3);       // EM_386
  put32(f, 20, 1);
  put32(f, 24, paddr);   // entry: start of the segment
  put32(f, 28, 52);      // phoff
  put16(f, 40, 52);
  put16(f, 42, 32);
  put16(f, 44, 1);
  size_t ph = 52;
  put32(f, ph, 1);  // PT_LOAD
  put32(f, ph + 4, 0x100);
  put32(f, ph + 8, paddr);
  put32(f, ph + 12, paddr);
  put32(f, ph + 16, static_cast<uint32_t>(code.size()));
  put32(f, ph + 20, static_cast<uint32_t>(code.size()) + bss);
  put32(f, ph + 24, 5);  // R+X
  put32(f, 0x80, kMagic);
  put32(f, 0x84, mb_flags);
  put32(f, 0x88, -(kMagic + mb_flags));
  f.resize(0x100 + code.size());
  std::copy(code.begin(), code.end(), f.begin() + 0x100);
  return f;
}

}  // namespace
}  // namespace topolab
