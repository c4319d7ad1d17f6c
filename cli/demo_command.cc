// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/demo_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/experiment_command.h"
#include "cli/run_command.h"
#include "report/cpuid_report.h"

namespace topolab::cli {

namespace {

// The machine of the l3-cache debate: 16 vCPUs as 1 socket x 8 cores x 2
// threads, with the L3 reported.
const MachineSpec kDemoMachine{"16,sockets=1,cores=8,threads=2", "Skylake-Server,l3-cache=on", ""};

}  // namespace

int run_demo(const DataPaths& data) {
  auto image = data.images / "topology_check.elf";
  fmt::print("== topolab cpuid -smp {} -cpu {}\n\n", kDemoMachine.smp, kDemoMachine.cpu);
  std::fflush(stdout);
  std::string table = format_topology_table(parse_machine_spec(kDemoMachine).cpuid_model());
  std::fwrite(table.data(), 1, table.size(), stdout);
  RunOptions run;
  run.spec = kDemoMachine;
  run.configure();
  run.machine.image = image.string();
  run.machine.append = "sockets=1 cores=8 threads=2 l3=on";
  fmt::print("\n== topolab run {} -smp {} -cpu {} -append \"{}\"\n\n", image.string(), kDemoMachine.smp,
             kDemoMachine.cpu, run.machine.append);
  std::fflush(stdout);
  if (int status = run_machine(run); status != 0) return status;
  // What that topology does to a guest's IPI and HLT traffic.
  fmt::print("\n== topolab experiment l3-cache\n\n");
  std::fflush(stdout);
  ExperimentCli experiment;
  experiment.options.name = "l3-cache";
  return run_experiment(experiment, data);
}

}  // namespace topolab::cli
