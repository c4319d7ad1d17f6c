// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab check` (the topology lint) and `topolab cpuid --diff`: their
// options and what they run. Bad input throws InputError (topolab.cc
// prints one line and exits with its bad-input status).
#pragma once

#include <string>
#include <vector>

#include "cli/command_line.h"

namespace topolab::cli {

struct CheckOptions {
  MachineSpec spec;            // a topolab machine (-smp, -cpu, -machine, -m, -numa, -object) ...
  bool spec_given = false;     // ... when any of them was given
  std::string dump;            // ... or a `cpuid -r` dump
  std::string consumer = "all";
  bool json = false;
};

// Adds the `check` subcommand to `app`.
CLI::App* add_check_command(CLI::App& app, CheckOptions& o);

// The consumers' views and the lint's findings, as text or JSON.
struct CheckResult {
  std::string text;
  bool findings = false;
};
CheckResult check_topology(const CheckOptions& o);

// Exit status: 0 no findings, 1 findings (for CI).
int run_check(const CheckOptions& o);

// `--diff "-smp A -cpu X [-machine M]" "-smp B -cpu Y [-machine N]"`.
std::string cpuid_diff_text(const std::vector<std::string>& sides);
// Writes the diff to stdout.
int run_cpuid_diff(const std::vector<std::string>& sides);

}  // namespace topolab::cli
