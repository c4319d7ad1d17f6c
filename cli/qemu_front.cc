// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/qemu_front.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "base/memory_map.h"
#include "cli/command_line.h"
#include "cli/qemu_command.h"
#include "cli/run_command.h"
#include "emu/unicorn_vcpu.h"

namespace topolab::cli {

namespace {

// -m as the machine takes it, checked before the kernel is looked at: at
// least kMinRamMib, and within what -cpu's phys-bits reaches (QEMU's own
// check, base/memory_map.h).
void check_ram_size(uint64_t mib, unsigned phys_bits) {
  if (mib < kMinRamMib) throw ConfigError(fmt::format("-m {}M: topolab's guest RAM is at least {} MiB", mib, kMinRamMib));
  if (const std::string problem = memory_map::ram_size_problem(mib, phys_bits); !problem.empty())
    throw ConfigError(problem);
}

// The answers QEMU gives without running (-version, -help, -device help,
// ...); nullopt for a run.
std::optional<int> answer_without_running(const QemuCommand& q) {
  switch (q.action) {
    case QemuCommand::Action::Run: return std::nullopt;
    case QemuCommand::Action::Version: fmt::print("{}", qemu_version_text(TOPOLAB_VERSION, engine_version())); return 0;
    case QemuCommand::Action::Help: fmt::print("{}", qemu_help_text(TOPOLAB_VERSION, engine_version())); return 0;
    case QemuCommand::Action::ListDevices: fmt::print("{}", qemu_device_list_text()); return 0;
    case QemuCommand::Action::ListCpus: return print_models();
    case QemuCommand::Action::ListMachines: fmt::print("{}", qemu_machine_list_text()); return 0;
    case QemuCommand::Action::ListAccelerators: fmt::print("{}", qemu_accelerator_list_text()); return 0;
  }
  return std::nullopt;
}

// TOPOLAB_OPTS: topolab's own run options under QEMU's command line, for
// the test named by TESTNAME (else the kernel's name).
void apply_topolab_opts(const QemuCommand& q, RunOptions& run) {
  const char* opts = std::getenv("TOPOLAB_OPTS");
  if (!opts || !*opts) return;
  const char* test = std::getenv("TESTNAME");
  const std::string name = test && *test ? test : std::filesystem::path(q.kernel).stem().string();
  CLI::App tuning{"TOPOLAB_OPTS: topolab's own options under the QEMU command line"};
  add_run_tuning_options(&tuning, run);
  std::vector<std::string> words = split_topolab_opts(opts, name);
  std::reverse(words.begin(), words.end());  // CLI11 takes them reversed
  try {
    tuning.parse(words);
  } catch (const CLI::ParseError& e) {
    throw ConfigError(fmt::format("TOPOLAB_OPTS: {}", e.what()));
  }
}

int run_qemu(const std::vector<std::string>& args) {
  const QemuCommand q = parse_qemu_command(args);
  if (std::optional<int> status = answer_without_running(q)) return *status;
  // Line by line, as QEMU's stdio: a suite's timeout that kills the run
  // must not take the guest's last lines with it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  RunOptions run;
  run.qemu = true;
  run.no_reboot = q.no_reboot;
  run.report = "none";  // QEMU prints nothing of its own; TOPOLAB_OPTS --report asks for it
  // A suite's tests wait on timers for seconds of virtual time; the run is
  // still bounded (--time-limit in TOPOLAB_OPTS changes it).
  run.machine.time_limit_seconds = 60.0;
  // Tests that ping-pong between vCPUs without PAUSE (kvm-unit-tests'
  // 30,000 NMIs of nmi-after-sti) cost a quantum per round trip: 2,000
  // instructions keep them within the suite's timeouts (docs/kvm-unit-tests.md).
  run.machine.quantum = 2'000;
  run.spec = q.machine;
  run.machine.image = q.kernel;
  run.machine.append = q.append;
  run.machine.initrd = q.initrd;
  run.machine.devices = q.devices;
  // QEMU always runs SeaBIOS before the -kernel image: the 8259s, the PIT,
  // the BSP's LINT0 and the IVT as it leaves them (firmware/legacy_bios.h).
  run.machine.legacy_bios = true;
  run.serial = q.serial;
  run.gdb = q.gdb;
  run.gdb_wait = q.gdb_wait;
  run.monitor = q.monitor;
  apply_topolab_opts(q, run);
  // QEMU checks the whole configuration before it loads the kernel, and
  // says so in these words when it cannot: kvm-unit-tests tries each
  // command line with a missing kernel, and a refusal here (-cpu host,
  // -m beyond phys-bits) becomes the test's SKIP with this line as the reason.
  run.configure();
  check_ram_size(run.machine.ram_mib, run.machine.cpu.phys_bits);
  if (std::FILE* f = std::fopen(q.kernel.c_str(), "rb")) {
    std::fclose(f);
  } else {
    throw ImageError(fmt::format("could not load kernel '{}': {}", q.kernel, std::strerror(errno)));
  }
  return run_machine(run);
}

}  // namespace

int run_qemu_front(const std::vector<std::string>& args) {
  try {
    return run_qemu(args);
  } catch (const InputError& e) {
    fmt::print(stderr, "topolab: {}\n", e.what());
    return 1;  // QEMU's status for a command line or image it cannot take
  } catch (const std::exception& e) {
    fmt::print(stderr, "topolab: internal error: {}\n", e.what());
    return kExitInternalError;
  }
}

}  // namespace topolab::cli
