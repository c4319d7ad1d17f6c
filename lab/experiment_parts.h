// SPDX-License-Identifier: GPL-2.0-or-later
// What the experiments share (lab/experiments.cc) and what each one
// brings (lab/experiment_*.cc: its machines, tables and charts). A new
// experiment is one more file like experiment_halt_poll.cc and one row in
// experiments(). Internal to the experiments.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lab/experiments.h"

namespace topolab::experiment_parts {

inline constexpr double kCaseTimeLimitSeconds = 60;  // virtual; every case needs far less

// Workload sizes scaled for tests (percent), at least 1.
unsigned scaled(unsigned loops, unsigned percent);
// The sched guest's wakelist= for the IPI its wake lists send.
std::string wakelist_for(WakeList wake_list);
// A machine of the sched kernel with the experiment's options.
MachineConfig base_config(const ExperimentOptions& o, const char* smp, std::string cpu, std::string append);
// The Linux guest's command line (README.md, "Linux"): the serial console,
// a reboot at once on a panic, no IO-APIC timer check (the PIT raises no
// IRQ 0 here), and only warnings and worse on the console.
inline constexpr const char* kLinuxCommandLine = "console=ttyS0 panic=-1 quiet";
// A machine of the Linux guest (options.linux_dir) whose /init runs `bench`
// (tools/linux_init.sh: messaging:G:L or pipe:L).
MachineConfig linux_config(const ExperimentOptions& o, const char* smp, std::string cpu, const std::string& bench);

// Table cells: "+12%", "1.2K", the spread of a case's runs.
std::string change(double before, double after);
std::string rate(double per_second);
std::string kernel_words(WakeList wake_list);
double ipis_per_vcpu(const CaseMeasurement& r);
std::string spread(const CaseMeasurement& r);
std::string time_spread(const CaseMeasurement& r);
// The rows of one workload, in case order.
std::vector<const CaseMeasurement*> rows_of(const std::vector<CaseMeasurement>& results, std::string_view workload);

Experiment l3_cache_experiment();
Experiment halt_poll_experiment();

}  // namespace topolab::experiment_parts
