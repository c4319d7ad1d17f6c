// SPDX-License-Identifier: GPL-2.0-or-later
// What a bare `topolab` runs: the 16-vCPU machine of the l3-cache debate as
// CPUID describes it, the topology_check guest reading it on the boot CPU,
// then the l3-cache experiment.
#pragma once

#include "cli/data_paths.h"

namespace topolab::cli {

int run_demo(const DataPaths& data);

}  // namespace topolab::cli
