// SPDX-License-Identifier: GPL-2.0-or-later
// The report of a run: a table for a person and JSON for a program. The JSON
// schema is versioned (kRunReportSchema) and documented in docs/report.md.
#pragma once

#include <optional>
#include <string>

#include "emu/machine_config.h"
#include "emu/run_result.h"
#include "emu/stats.h"

namespace topolab {

inline constexpr const char* kRunReportSchema = "topolab.run/1";

struct RunReportInput {
  const MachineConfig& config;  // its topology is the machine's
  const Stats& stats;
  const RunResult& result;
  const std::optional<MeasureWindow>& window;  // the guest's measuring window
};

// Host CPU use the cost model predicts for `stats` over `elapsed_ns`, in
// percent of one host CPU (16 busy vCPUs: 1600).
double host_cpu_percent(const Stats& stats, uint64_t elapsed_ns);

// One line per vCPU (the first 64; a total line after), then the busiest
// IPI routes.
std::string format_run_table(const RunReportInput& in);
std::string format_run_json(const RunReportInput& in);

}  // namespace topolab
