// SPDX-License-Identifier: GPL-2.0-or-later
// What topolab's subcommands share: their exit statuses, the machine
// options (-smp, -cpu, -machine through one MachineSpec), and the CPU model
// list. Each subcommand is a file of its own (run_command, cpuid_command,
// check_command, experiment_command, demo_command, qemu_front); topolab.cc
// wires them to the command line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/machine_spec.h"

// Declared only: each subcommand's file adds its options to a CLI::App,
// and only the .cc files compile CLI11.
namespace CLI {
class App;
}

namespace topolab::cli {

// Exit statuses that are topolab's own; a guest's isa-debug-exit value below
// kExitTimeLimit is the status otherwise (README, "Exit status").
inline constexpr int kExitTimeLimit = 124;
inline constexpr int kExitBadInput = 125;
inline constexpr int kExitGuestFailed = 126;
inline constexpr int kExitInternalError = 70;  // sysexits' EX_SOFTWARE: a topolab bug

// The smallest guest RAM the command accepts for -m (the largest is what
// -cpu's phys-bits reaches, memory_map::ram_size_problem, and at most
// memory_map::kMaxRamMib, the engine's reach).
inline constexpr uint64_t kMinRamMib = 2;

// --smp, --cpu and --machine (QEMU's -smp, -cpu, -machine) into `spec`.
void add_machine_options(CLI::App* app, MachineSpec& spec);

// parse_machine_spec(), and what -cpu asked for and does not get printed
// as warnings on stderr, as QEMU's TCG warns of it.
ParsedMachine parse_machine_and_warn(const MachineSpec& spec);

// --spin-skip on|off (emu/pause_loop.h; off runs every instruction).
void add_spin_skip_option(CLI::App* app, bool& spin_skip);

// `topolab models` and QEMU's -cpu help: the CPU models and -cpu properties.
int print_models();

// Where the stub listens.
struct GdbEndpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 1234;
  friend bool operator==(const GdbEndpoint&, const GdbEndpoint&) = default;
};

// PORT, HOST:PORT, or QEMU's tcp::PORT and tcp:HOST:PORT. Throws
// ConfigError naming `spelled` (the option as typed) for anything else.
GdbEndpoint parse_gdb_endpoint(std::string_view text, std::string_view spelled);

// A point of virtual time: a number with s, ms, us or ns (seconds without
// one, as --time-limit), e.g. 250ms, 1.5s, 40000ns. Nanoseconds; throws
// ConfigError naming `spelled` for anything else.
uint64_t parse_virtual_time(std::string_view text, std::string_view spelled);


}  // namespace topolab::cli
