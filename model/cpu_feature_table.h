// SPDX-License-Identifier: GPL-2.0-or-later
// The feature table's one answer the models need besides the public
// feature_flags() and find_feature_flag() (model/cpu_model.h).
#pragma once

#include <cstdint>

#include "model/cpu_model.h"

namespace topolab {

// The bits of `word` that `engine` (or the machine) carries out, with the
// AMD aliases of leaf 1's bits in CPUID.80000001H:EDX (QEMU's
// CPUID_EXT2_AMD_ALIASES) carried out as their leaf 1 twins.
uint32_t backed_feature_mask(FeatureWord word, EngineCpuModel engine);

}  // namespace topolab
