// SPDX-License-Identifier: GPL-2.0-or-later
// Runs an experiment's cases: one machine each, `jobs` at a time, its
// vCPUs made by the VcpuFactory the caller gives (unicorn_vcpu_factory() in
// the command; a fake in tests), and what each guest measured read back
// through its protocol (guest_protocol.h) and the machine's window.
#pragma once

#include <cstdio>
#include <vector>

#include "emu/vcpu.h"
#include "lab/experiments.h"

namespace topolab {

// Runs every case (options.jobs at a time; `progress`, when not null, gets
// one line per case) and throws std::runtime_error naming the case if a
// guest failed: the first failure in case order, whichever thread saw it.
std::vector<CaseMeasurement> run_experiment_cases(const ExperimentOptions& options,
                                                  const std::vector<ExperimentCase>& cases,
                                                  const VcpuFactory& make_vcpu, std::FILE* progress);

}  // namespace topolab
