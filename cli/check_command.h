// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab check` (the topology lint) and `topolab cpuid --diff`: their
// options and what they run. Bad input throws InputError (topolab.cc
// prints one line and exits with its bad-input status).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace topolab {

struct CheckOptions {
  std::string smp, cpu;       // a topolab machine ...
  std::string dump;           // ... or a `cpuid -r` dump
  std::string consumer = "all";
  bool json = false;
};

// Adds the `check` subcommand to `app`.
CLI::App* add_check_command(CLI::App& app, CheckOptions& o);

// Exit status: 0 no findings, 1 findings (for CI).
int run_check(const CheckOptions& o);

// `--diff "-smp A -cpu X" "-smp B -cpu Y"`: writes the diff to stdout.
int run_cpuid_diff(const std::vector<std::string>& sides);

}  // namespace topolab
