// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab cpuid --diff A B`: two machines' CPUID side by side, leaf by
// leaf with every changed bit field named (report/cpuid_fields.h), then
// decoded as Linux decodes it: which CPUs share each cache, and the
// scheduler's LLC groups (cpuid_report.h). Deterministic text.
#pragma once

#include <string>

#include "model/cpuid.h"
#include "model/numa.h"

namespace topolab {

struct DiffSide {
  std::string label;  // "-smp 16,sockets=1,cores=8,threads=2 -cpu Skylake-Server,l3-cache=off"
  const CpuidModel* model;
  const NumaConfig* numa = nullptr;  // the -numa nodes; null: none
};

std::string format_cpuid_diff(const DiffSide& a, const DiffSide& b);

}  // namespace topolab
