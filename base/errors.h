// SPDX-License-Identifier: GPL-2.0-or-later
// The errors a user's input can cause. Each message is one line that names
// the problem, ready to print after "topolab: "; the command exits with its
// bad-input status for any InputError and calls anything else internal.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace topolab {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration the user got wrong: a flag, -smp, -cpu, -m, the cost model.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// An image (or module) that cannot boot.
class ImageError : public InputError {
 public:
  using InputError::InputError;
};

// `text` with its control characters escaped (\n, \r, \t, \xNN), so a
// message that quotes what a user or a file gave stays one line.
inline std::string one_line(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (byte < 0x20 || byte == 0x7f) out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    else out += c;
  }
  return out;
}

}  // namespace topolab
