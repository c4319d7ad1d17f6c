// SPDX-License-Identifier: GPL-2.0-or-later
// A run with gdb's stub listening (`topolab run --gdb`, -s, -S; QEMU's -s,
// -S and -gdb): the machine runs on a thread of its own and the stub serves
// clients on this one (emu/machine_debug.h says how the two meet). Reverse
// execution builds the machine again and replays it to the point asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cli/command_line.h"
#include "emu/machine.h"
#include "emu/machine_debug.h"

namespace topolab::cli {

struct GdbRunOptions {
  GdbEndpoint endpoint;
  bool wait_for_client = false;  // -S: nothing runs before a client has control
  // The process's exit status for a result (gdb's W reply carries it).
  std::function<int(const RunResult&)> exit_status;
  uint64_t checkpoint_every = MachineDebugger::kCheckpointEvery;  // emu/machine_checkpoints.h
};

// Builds the machine, the same one every time: its serial output must go
// through a ReplayedOutput, so that a replay prints nothing twice.
using MachineMaker = std::function<std::unique_ptr<Machine>()>;

// The guest's output across replays: a byte is printed once, the first
// time the run gets that far.
class ReplayedOutput {
 public:
  explicit ReplayedOutput(std::function<void(uint8_t)> out) : out_(std::move(out)) {}
  void restart() { position_ = 0; }  // a new machine starts from its first byte
  // A machine restored from a checkpoint goes on from the byte it had reached.
  void seek(uint64_t position) { position_ = position; }
  uint64_t position() const { return position_; }
  void put(uint8_t byte) {
    if (position_++ < printed_) return;
    out_(byte);
    ++printed_;
  }

 private:
  std::function<void(uint8_t)> out_;
  uint64_t printed_ = 0, position_ = 0;
};

struct DebuggedRun {
  std::unique_ptr<Machine> machine;  // the one that ran to the end
  RunResult result;
};

// Runs a machine to its end with QEMU's monitor on stdin (--monitor stdio):
// each line stops the machine at its next slice boundary, is answered on
// stdout (debug/monitor.h's commands; `quit` ends the run), and the machine
// goes on. At the end of stdin the run goes on to its end.
DebuggedRun run_with_stdio_monitor(const MachineMaker& make_machine,
                                   const std::function<int(const RunResult&)>& exit_status);

// Runs a machine to its end with the stub listening; clients may attach,
// detach and attach again. Throws ConfigError when the stub cannot listen.
DebuggedRun run_with_gdb(const MachineMaker& make_machine, ReplayedOutput& output, const GdbRunOptions& options);

}  // namespace topolab::cli
