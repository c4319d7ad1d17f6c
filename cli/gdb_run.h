// SPDX-License-Identifier: GPL-2.0-or-later
// A run with gdb's stub listening (`topolab run --gdb`, -s, -S; QEMU's -s,
// -S and -gdb): the machine runs on a thread of its own and the stub serves
// clients on this one (emu/machine_debug.h says how the two meet).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "emu/machine.h"

namespace topolab::cli {

// Where the stub listens.
struct GdbEndpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 1234;
  friend bool operator==(const GdbEndpoint&, const GdbEndpoint&) = default;
};

// PORT, HOST:PORT, or QEMU's tcp::PORT and tcp:HOST:PORT. Throws
// ConfigError naming `spelled` (the option as typed) for anything else.
GdbEndpoint parse_gdb_endpoint(std::string_view text, std::string_view spelled);

struct GdbRunOptions {
  GdbEndpoint endpoint;
  bool wait_for_client = false;  // -S: nothing runs before a client has control
  // The process's exit status for a result (gdb's W reply carries it).
  std::function<int(const RunResult&)> exit_status;
};

// Runs `machine` to its end with the stub listening; clients may attach,
// detach and attach again. Throws ConfigError when the stub cannot listen.
RunResult run_with_gdb(Machine& machine, const GdbRunOptions& options);

}  // namespace topolab::cli
