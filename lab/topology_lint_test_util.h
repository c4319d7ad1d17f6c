// SPDX-License-Identifier: GPL-2.0-or-later
// What the lint's unit tests ask of every finding, whatever its family.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "lab/topology_lint.h"

namespace topolab {

// Each finding names its leaves, what the consumers infer, the symptom and
// where it was seen.
inline void expect_complete(const std::vector<Finding>& findings) {
  for (const auto& f : findings) {
    EXPECT_FALSE(f.leaves.empty()) << f.id;
    EXPECT_FALSE(f.inferences.empty()) << f.id;
    EXPECT_FALSE(f.symptom.empty()) << f.id;
    EXPECT_FALSE(f.seen_in.empty()) << f.id;
  }
}

}  // namespace topolab
