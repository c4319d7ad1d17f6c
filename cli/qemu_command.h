// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU 7.2's x86 command line, as kvm-unit-tests' x86/run and a user's
// scripts write it: `topolab qemu ARGS...` and build/qemu-system-x86_64
// take it, so that a suite that starts QEMU through $QEMU runs on topolab.
//
// Pure: the arguments are parsed into a QemuCommand with no file opened and
// no machine built, so unit tests drive every option and refusal. Three
// kinds of input are told apart, because callers see them differently:
// - what topolab runs (-kernel, -smp, -cpu, -m, -device pc-testdev, ...);
// - what changes nothing on topolab's machine and is accepted (-vnc none,
//   -display none, -name, -accel tcg,thread=single, -machine vmport=off);
// - what QEMU has but topolab does not emulate (-enable-kvm, -device edu,
//   -vnc :1): refused by name, with the reason, as ConfigError;
// and anything QEMU itself would not take (-frobnicate, -device nosuch) is
// refused as QEMU refuses it. Both end the command with QEMU's status 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/platform_devices.h"
#include "model/machine_spec.h"
#include "model/qemu_options.h"

namespace topolab {

struct QemuCommand {
  // What the command asks for: a run, or one of the answers QEMU gives
  // without running (-version, -help, -device help, -cpu help, ...).
  enum class Action { Run, Version, Help, ListDevices, ListCpus, ListMachines, ListAccelerators };
  Action action = Action::Run;

  std::string kernel;               // -kernel (required for a run)
  std::vector<std::string> initrd;  // -initrd: "FILE[ ARGS]" each, comma-separated as QEMU's
  std::string append;               // -append
  // -smp and -cpu as given; as `machine`, -machine's smp-cache.* properties
  // only (the rest are the fields below).
  MachineSpec machine;
  std::string machine_type = "pc";  // pc or q35 (their aliases pc-i440fx-7.2, pc-q35-7.2)
  uint64_t ram_mib = kDefaultRamMib;  // -m
  std::string serial = "stdio";     // stdio, file:PATH or none; -nodefaults with no -serial: none
  bool no_reboot = false;           // -no-reboot: a reset or triple fault ends the run
  std::string gdb;                  // -gdb tcp:[HOST]:PORT, or -s (tcp::1234); empty: no stub
  bool gdb_wait = false;            // -S: no instruction before gdb has attached
  std::string monitor;              // -monitor stdio: the monitor on stdin; empty: none
  // -device isa-debug-exit,iobase=0xf4,iosize=4, pc-testdev, pci-testdev;
  // -machine pit=off removes the 8254.
  PlatformDevices devices{PlatformDevice::Pit};

  bool operator==(const QemuCommand&) const = default;
};

// Parses QEMU's arguments (argv without the program name). Options take one
// dash or two, and a value either as the next argument or after "=" when
// spelled with two dashes (QEMU's own rule). Throws ConfigError, whose one
// line names the option.
QemuCommand parse_qemu_command(const std::vector<std::string>& args);


// The command as QEMU's arguments again, one spelling for each field:
// parse_qemu_command(to_qemu_args(c)) == c for every command it returned.
// What parsing dropped (-vnc none, -name, -accel tcg, -global for a device
// topolab has not) is not there; -serial is always given, so -nodefaults
// and -nographic need not be.
std::vector<std::string> to_qemu_args(const QemuCommand& command);

// What QEMU prints for the answers of Action.
std::string qemu_version_text(const std::string& topolab_version, const std::string& engine_version);
std::string qemu_help_text(const std::string& topolab_version, const std::string& engine_version);
std::string qemu_device_list_text();
std::string qemu_machine_list_text();
std::string qemu_accelerator_list_text();

// Splits TOPOLAB_OPTS, the environment variable that carries topolab's own
// options into this mode, at blanks (no quoting: a value with a blank in it
// cannot be given there). "%t" in a value becomes `test_name`, so a suite
// that runs many tests can still write one report per test.
std::vector<std::string> split_topolab_opts(const std::string& text, const std::string& test_name);

}  // namespace topolab
