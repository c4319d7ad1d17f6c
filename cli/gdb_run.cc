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

}  // namespace

DebuggedRun run_with_gdb(const MachineMaker& make_machine, ReplayedOutput& output, const GdbRunOptions& options) {
  debug::GdbServer server(options.endpoint.host, options.endpoint.port,
                          [](std::string_view line) { fmt::print(stderr, "topolab: gdb: {}\n", line); });
  // Tests ask for port 0 and read the one the system picked from here.
  fmt::print(stderr, "topolab: gdb: listening on {}:{}\n", options.endpoint.host, server.port());
  std::unique_ptr<Machine> machine = make_machine();
  MachineDebugger debugger(*machine, {.monitor =
                                          [](Machine& m, std::string_view line) {
                                            MachineMonitor monitor(m);
                                            return debug::run_monitor_command(monitor, line);
                                          },
                                      .can_rewind = true,
                                      .exit_status = options.exit_status});
  machine->attach_debugger(&debugger);

  if (options.wait_for_client) {
    fmt::print(stderr, "topolab: gdb: waiting for a client before the first instruction (-S)\n");
    server.wait_for_client();
    debugger.ask_stop();  // taken at the very first slice boundary
  }
  std::exception_ptr failure;
  // The machine's thread: a reverse request starts the machine over, and
  // the debugger stops the replay where it was asked to.
  std::thread runner([&] {
    try {
      for (;;) {
        try {
          machine->run();
          return;
        } catch (const RewindRequest& rewind) {
          machine.reset();
          output.restart();
          machine = make_machine();
          debugger.rebind(*machine, rewind.target);
        }
      }
    } catch (...) {
      failure = std::current_exception();
      debugger.abandon(failure);
    }
  });
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
  runner.join();
  if (failure) std::rethrow_exception(failure);
  machine->attach_debugger(nullptr);
  return {std::move(machine), *debugger.result()};
}

DebuggedRun run_with_stdio_monitor(const MachineMaker& make_machine,
                                   const std::function<int(const RunResult&)>& exit_status) {
  std::unique_ptr<Machine> machine = make_machine();
  MachineDebugger debugger(*machine, {.monitor =
                                          [](Machine& m, std::string_view line) {
                                            MachineMonitor monitor(m);
                                            return debug::run_monitor_command(monitor, line);
                                          },
                                      .can_rewind = false,
                                      .exit_status = exit_status});
  machine->attach_debugger(&debugger);
  std::exception_ptr failure;
  std::thread runner([&] {
    try {
      machine->run();
    } catch (...) {
      failure = std::current_exception();
      debugger.abandon(failure);
    }
  });
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
  runner.join();
  if (failure) std::rethrow_exception(failure);
  machine->attach_debugger(nullptr);
  return {std::move(machine), *debugger.result()};
}

}  // namespace topolab::cli
