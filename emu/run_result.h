// SPDX-License-Identifier: GPL-2.0-or-later
// How a run ended and what the guest measured: what the reports read of a
// run, apart from the machine that made it (report/run_report.h needs only
// this, not emu/machine.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "emu/stats.h"

namespace topolab {

struct RunResult {
  enum class Outcome {
    GuestExit,        // the guest wrote to isa-debug-exit
    BudgetExhausted,  // the virtual-time limit ran out
    Hung,             // every vCPU halted with nothing that could wake it
    Crashed,          // a fault the guest could not handle
    Shutdown,         // the guest reset the machine or powered it off (as QEMU
                      // with -no-reboot, a reset ends the run); `diagnosis` says how
  };
  Outcome outcome = Outcome::Crashed;
  std::optional<uint32_t> guest_value;  // GuestExit: what the guest wrote
  std::string diagnosis;                // one line, for everything but GuestExit
  bool triple_fault = false;            // Crashed by a triple fault (a shutdown on hardware)
  uint64_t instructions = 0;            // all vCPUs together
  uint64_t virtual_ns = 0;              // the latest vCPU clock
};

// What happened between the guest's two writes to the measuring port
// (devices/measure_port.h), or from its begin write to the end of the run.
struct MeasureWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool ended_by_guest = false;
  Stats stats{0};  // counters accrued in the window
  template <class Archive>
  void serialize(Archive& ar) {
    ar(begin_ns, end_ns, ended_by_guest, stats);
  }
};

// The outcome's name in reports ("guest-exit", ...).
constexpr const char* to_string(RunResult::Outcome outcome) {
  switch (outcome) {
    case RunResult::Outcome::GuestExit: return "guest-exit";
    case RunResult::Outcome::BudgetExhausted: return "budget-exhausted";
    case RunResult::Outcome::Hung: return "hung";
    case RunResult::Outcome::Crashed: return "crashed";
    case RunResult::Outcome::Shutdown: return "shutdown";
  }
  return "?";
}

}  // namespace topolab
