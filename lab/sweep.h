// SPDX-License-Identifier: GPL-2.0-or-later
// An experiment split into its runs, for a cluster's own scheduler (a Slurm
// job array, GNU parallel): `--list-cases` names every run, `--case K` runs
// one and writes its case file, `--merge DIR` reads them all back and gives
// the tables, JSON and charts of a run in one piece, byte for byte. There is
// no distribution here: what runs where is the scheduler's business.
//
// A case file is JSON (schema "topolab.experiment-case/1"): the options that
// shape the experiment's results, the case's index and what it is, and every
// field of its CaseMeasurement. Integers stay integers; doubles are written
// in nlohmann-json's shortest form that reads back to the same bits.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "lab/experiments.h"

namespace topolab {

// One line per run of experiment_cases(): "K<tab>description".
std::string format_case_list(const std::vector<ExperimentCase>& cases);

// "case-7.json": where `--case 7 --output DIR` writes, in DIR.
std::string case_file_name(size_t index);

// The case file of run `index` of `options`' experiment (cases.size() runs).
std::string format_case_file(const ExperimentOptions& options, size_t cases, size_t index, const CaseMeasurement& m);

struct CaseFile {
  size_t index = 0;
  CaseMeasurement measurement;  // its spec is cases[index]
};

// Reads one case file's text, named `name` in errors, and checks it belongs
// to `options` and `cases` (the experiment_cases() of those options).
// Throws ConfigError, one line naming the file and what does not match.
CaseFile parse_case_file(const ExperimentOptions& options, const std::vector<ExperimentCase>& cases,
                         const std::string& text, const std::string& name);

// Every case-*.json in `dir`, one per run of `cases`, in case order: what
// run_experiment_cases() would have returned. Throws ConfigError for a
// missing, repeated, foreign or unreadable case file.
std::vector<CaseMeasurement> read_case_files(const ExperimentOptions& options,
                                             const std::vector<ExperimentCase>& cases,
                                             const std::filesystem::path& dir);

}  // namespace topolab
