// SPDX-License-Identifier: GPL-2.0-or-later
// The one assertion every harness uses: an invariant that does not hold is
// a finding, reported on one line with the input's context, then abort() so
// libFuzzer saves the input as a crash-* file.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#define FUZZ_CHECK(cond, ...)                                                                    \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "invariant failed at %s:%d: %s: %s\n", __FILE__, __LINE__, #cond,     \
                   fmt::format(__VA_ARGS__).c_str());                                            \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
