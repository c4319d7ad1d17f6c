// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab check` for a person and for CI: the consumers' views of a
// machine and the lint's findings (lab/topology_lint.h), as text or JSON.
#pragma once

#include <string>
#include <vector>

#include "lab/topology_lint.h"

namespace topolab {

std::string format_check_text(const LintInput& in, const std::vector<Finding>& findings);
// {"source": ..., "cpus": N, "consumers": [...], "findings": [{"id", "title",
// "leaves", "detail", "inferences": [{"consumer", "infers"}], "symptom",
// "seen_in"}]}
std::string format_check_json(const LintInput& in, const std::vector<Finding>& findings);

}  // namespace topolab
