// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/gdb_run.h"

#include <unistd.h>

#include <iostream>
#include <exception>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "base/errors.h"
#include "cli/machine_monitor.h"
#include "debug/gdb_server.h"
#include "debug/monitor.h"
#include "emu/machine_debug.h"

namespace topolab::cli {

namespace {

// How long the stub's thread sleeps between looks for a client while the
// run goes on without one.
constexpr unsigned kClientPollMs = 50;

// `output`: the replayed output of a run that can go back (nullptr: none).
MachineDebugger::Options debugger_options(ReplayedOutput* output, std::function<int(const RunResult&)> exit_status,
                                          uint64_t checkpoint_every = 0) {
  MachineDebugger::Options options{.monitor =
                                       [](Machine& m, SnapshotShelf& snapshots, std::string_view line) {
                                         MachineMonitor monitor(m, snapshots);
                                         return debug::run_monitor_command(monitor, line);
                                       },
                                   .can_rewind = output != nullptr,
                                   .exit_status = std::move(exit_status),
                                   .checkpoint_every = checkpoint_every,
                                   .output_position = {},
                                   .seek_output = {}};
  if (output) {
    options.output_position = [output] { return output->position(); };
    options.seek_output = [output](uint64_t position) { output->seek(position); };
  }
  return options;
}

// The machine's thread: runs `machine` to its end. A reverse request
// (RewindRequest) starts it over: `make_machine` builds it again and the
// debugger stops the replay where it was asked to. A failure is kept for
// the caller, and the debugger told the run is over.
std::thread start_machine_thread(std::unique_ptr<Machine>& machine, MachineDebugger& debugger,
                                 const MachineMaker& make_machine, ReplayedOutput* output,
                                 std::exception_ptr& failure) {
  return std::thread([&machine, &debugger, &make_machine, output, &failure] {
    try {
      for (;;) {
        try {
          machine->run();
          return;
        } catch (const RewindRequest& rewind) {
          machine.reset();
          if (output) output->restart();
          machine = make_machine();
          debugger.rebind(*machine, rewind.target);
        }
      }
    } catch (...) {
      failure = std::current_exception();
      debugger.abandon(failure);
    }
  });
}

// After the machine's thread has ended.
DebuggedRun finish_run(std::thread& runner, std::unique_ptr<Machine>& machine, const MachineDebugger& debugger,
                       const std::exception_ptr& failure) {
  runner.join();
  if (failure) std::rethrow_exception(failure);
  machine->attach_debugger(nullptr);
  return {std::move(machine), *debugger.result()};
}

}  // namespace

DebuggedRun run_with_gdb(const MachineMaker& make_machine, ReplayedOutput& output, const GdbRunOptions& options) {
  debug::GdbServer server(options.endpoint.host, options.endpoint.port,
                          [](std::string_view line) { fmt::print(stderr, "topolab: gdb: {}\n", line); });
  // Tests ask for port 0 and read the one the system picked from here.
  fmt::print(stderr, "topolab: gdb: listening on {}:{}\n", options.endpoint.host, server.port());
  std::unique_ptr<Machine> machine = make_machine();
  MachineDebugger debugger(*machine, debugger_options(&output, options.exit_status, options.checkpoint_every));
  machine->attach_debugger(&debugger);

  if (options.wait_for_client) {
    fmt::print(stderr, "topolab: gdb: waiting for a client before the first instruction (-S)\n");
    server.wait_for_client();
    debugger.ask_stop();  // taken at the very first slice boundary
  }
  std::exception_ptr failure;
  std::thread runner = start_machine_thread(machine, debugger, make_machine, &output, failure);
  for (;;) {
    if (!server.has_client()) {
      while (!server.poll_for_client())
        if (debugger.wait_finished(kClientPollMs)) break;
      if (!server.has_client()) break;  // the run ended with no client
      debugger.ask_stop();
    }
    const std::optional<debug::StopEvent> stop = debugger.wait_stopped();
    if (!stop) break;  // the run ended before it could stop
    const debug::ServeEnd end = server.serve(debugger, *stop);
    if (end == debug::ServeEnd::kExited || end == debug::ServeEnd::kKilled) break;
  }
  return finish_run(runner, machine, debugger, failure);
}

DebuggedRun run_with_stdio_monitor(const MachineMaker& make_machine,
                                   const std::function<int(const RunResult&)>& exit_status) {
  std::unique_ptr<Machine> machine = make_machine();
  MachineDebugger debugger(*machine, debugger_options(nullptr, exit_status));
  machine->attach_debugger(&debugger);
  std::exception_ptr failure;
  std::thread runner = start_machine_thread(machine, debugger, make_machine, nullptr, failure);
  const bool prompt = isatty(STDIN_FILENO);
  std::string line;
  for (;;) {
    if (prompt) fmt::print("(topolab) "), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "quit" || line == "q") {
      debugger.kill();
      break;
    }
    debugger.ask_stop();
    if (!debugger.wait_stopped()) break;  // the run ended first
    fmt::print("{}", debugger.monitor(line));
    std::fflush(stdout);
    debugger.go_on();
  }
  return finish_run(runner, machine, debugger, failure);
}

}  // namespace topolab::cli
