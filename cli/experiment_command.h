// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab experiment NAME`: an experiment of lab/ in one piece, or one
// step of a sweep in pieces (--list-cases, --case, --merge; docs/sweeps.md).
#pragma once

#include <string>

#include "cli/command_line.h"
#include "cli/data_paths.h"
#include "lab/experiments.h"

namespace topolab::cli {

struct ExperimentCli {
  ExperimentOptions options;
  std::string format = "table";
  std::string cost_spec;
  std::string html;
  std::string command;
  // A sweep in pieces (lab/sweep.h): list the runs, run one (-1: all of
  // them), or merge their case files.
  bool list_cases = false;
  long case_index = -1;
  std::string merge_dir;
};

CLI::App* add_experiment_command(CLI::App& app, ExperimentCli& experiment);

// The defaults that depend on the guest, for the options not given on
// `experiment_cmd`'s command line.
void apply_guest_defaults(const CLI::App& experiment_cmd, ExperimentCli& experiment);

// The tables (or JSON) on stdout, progress on stderr, results.json and the
// charts into --output; or one step of a sweep in pieces.
int run_experiment(ExperimentCli& cli, const DataPaths& data);

}  // namespace topolab::cli
