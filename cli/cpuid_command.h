// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab cpuid`: the CPUID leaves of a machine with no guest running, as
// a table, `cpuid -r`, an hwloc directory or Linux's sysfs lists; or two
// machines side by side (--diff, check_command.h).
#pragma once

#include <string>
#include <vector>

#include "cli/command_line.h"

namespace topolab::cli {

struct CpuidOptions {
  MachineSpec spec;
  std::string format = "table";
  std::string output;
  std::string html;
  std::string command;
  std::vector<std::string> diff;  // two "-smp ... -cpu ..." machines
};

CLI::App* add_cpuid_command(CLI::App& app, CpuidOptions& cpuid);
int run_cpuid(const CpuidOptions& o);

}  // namespace topolab::cli
