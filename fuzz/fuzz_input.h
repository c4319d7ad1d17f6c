// SPDX-License-Identifier: GPL-2.0-or-later
// The input of a harness that runs a program of operations: bytes taken in
// order, zeros once the input runs out (so every prefix of an input is a
// program too, which keeps libFuzzer's mutations meaningful).
#pragma once

#include <cstddef>
#include <cstdint>

namespace topolab::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  size_t remaining() const { return done() ? 0 : size_ - pos_; }
  const uint8_t* rest() const { return data_ + pos_; }
  // Little-endian, as the byte streams of the seed files are written.
  template <typename T>
  T take() {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | T(T(pos_ < size_ ? data_[pos_++] : 0) << (8 * i)));
    return v;
  }
  bool flag() { return take<uint8_t>() & 1; }
  // Steps over `n` bytes (no further than the end).
  void skip(size_t n) { pos_ = n < remaining() ? pos_ + n : size_; }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

}  // namespace topolab::fuzz
