// SPDX-License-Identifier: GPL-2.0-or-later
// `topolab run IMAGE`: boot an image on a machine of -smp/-cpu/-machine,
// the guest's serial port on stdout, the report on stderr, and one line that
// says how the run ended. The QEMU front (qemu_front.h) runs its machines
// through here too, with QEMU's exit statuses.
#pragma once

#include <string>
#include <vector>

#include "cli/command_line.h"
#include "emu/machine_config.h"
#include "emu/machine_debug.h"

namespace topolab::cli {

struct RunOptions {
  MachineConfig machine;
  MachineSpec spec;       // -smp, -cpu, -machine as typed: parsed into `machine` by configure()
  std::string cost_spec;  // --cost as typed: parsed into `machine.cost` by configure()
  std::string serial = "stdio";
  std::string exit_status = "plain";
  std::string report = "table";
  std::string report_file;
  std::string svg_dir;
  bool info_lapic = false;
  bool trace = false;
  std::string html;     // --html FILE
  std::string command;  // what the page names
  // The QEMU command line (cli/qemu_command.h): QEMU's exit statuses, and
  // nothing on stderr for a run that ended as the guest asked.
  bool qemu = false;
  bool no_reboot = false;  // -no-reboot
  // gdb's stub (cli/gdb_run.h): where it listens (PORT, HOST:PORT, tcp::PORT,
  // tcp:HOST:PORT; empty: no stub), and -S (no instruction before a client
  // has control).
  std::string gdb;
  bool gdb_wait = false;
  std::string monitor;  // --monitor stdio: QEMU's monitor on stdin (cli/gdb_run.h)
  // Snapshots (cli/snapshot_run.h): --snapshot-at VTIME FILE (empty: none)
  // and --resume FILE.
  std::vector<std::string> snapshot_at;
  std::string resume;
  // Instructions between the debugger's in-memory checkpoints (reverse
  // execution, emu/machine_checkpoints.h); 0: none.
  uint64_t checkpoint_every = MachineDebugger::kCheckpointEvery;

  // The machine's topology, CPU, -machine options and cost model from what
  // was typed. Throws ConfigError.
  void configure();
};

// Adds `run` with its options.
CLI::App* add_run_command(CLI::App& app, RunOptions& run);
// The options of a run that are topolab's own, beyond what it boots: for
// `topolab run` and, through TOPOLAB_OPTS, for the QEMU command line.
void add_run_tuning_options(CLI::App* cmd, RunOptions& run);

// Runs the configured machine; the exit status for its outcome.
int run_machine(const RunOptions& o);

}  // namespace topolab::cli
