// SPDX-License-Identifier: GPL-2.0-or-later
// Appending formatted text to an fmt::memory_buffer, checked at compile
// time like fmt::format (a lambda forwarding the format string is not).
#pragma once

#include <utility>

#include <fmt/format.h>

namespace topolab {

template <typename... Args>
void appendf(fmt::memory_buffer& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(fmt::appender(out), format, std::forward<Args>(args)...);
}

}  // namespace topolab
