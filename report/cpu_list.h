// SPDX-License-Identifier: GPL-2.0-or-later
// CPU lists as Linux prints them in sysfs (cpulist format): "0-3,8,10-11".
#pragma once

#include <string>
#include <vector>

namespace topolab {

// `cpus` sorted ascending.
std::string format_cpu_list(const std::vector<unsigned>& cpus);

}  // namespace topolab
