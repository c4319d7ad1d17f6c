// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers the report tests share to look into the text a report produced.
#pragma once

#include <cstddef>
#include <string>

namespace topolab::test_text {

// How often `what` occurs in `text` (overlapping occurrences count).
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace topolab::test_text
