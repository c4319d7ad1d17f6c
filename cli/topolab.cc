// SPDX-License-Identifier: GPL-2.0-or-later
// topolab: what topology does a guest see, and what does that do to its IPI
// and HLT traffic? The command line: QEMU's spellings, the subcommands
// (each a file of cli/) and the exit statuses; all real work lives in the
// layers below.
#include <sys/prctl.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/check_command.h"
#include "cli/command_line.h"
#include "cli/cpuid_command.h"
#include "cli/data_paths.h"
#include "cli/demo_command.h"
#include "cli/experiment_command.h"
#include "cli/qemu_front.h"
#include "cli/run_command.h"
#include "emu/unicorn_vcpu.h"

namespace {

using namespace topolab;
using namespace topolab::cli;

// QEMU spells long options with one dash (-smp, -cpu, -append); CLI11 would
// read "-smp" as "-s -m -p". Rewrite the QEMU spellings we accept to "--",
// but never the value that follows one (-append "-smp" stays a value).
std::vector<std::string> qemu_style_to_cli11(int argc, char** argv) {
  static const std::string kQemuLong[] = {"-smp", "-cpu", "-machine", "-append", "-initrd", "-serial"};
  std::vector<std::string> args;
  bool value_next = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // cpuid --diff "-smp A -cpu X" "-smp B -cpu Y": values that start with
    // a dash, which CLI11 would read as options; "--diff=VALUE" keeps them.
    if (!value_next && a == "--diff" && i + 2 < argc) {
      args.push_back(a + "=" + argv[++i]);
      args.push_back(a + "=" + argv[++i]);
      continue;
    }
    bool option = false;
    if (!value_next)
      for (const std::string& q : kQemuLong)
        if (a == q || a.starts_with(q + "=")) {
          option = a == q;  // "-smp=4" carries its value
          a = "-" + a;
        }
    value_next = option;
    args.push_back(a);
  }
  return {args.rbegin(), args.rend()};  // CLI11 takes them reversed
}

// The command line an HTML page names: what the user typed, as "topolab
// ...", without the --html option itself (the page is the same wherever it
// is written). Arguments a shell would split or expand are quoted.
std::string command_for_page(int argc, char** argv) {
  std::string out = "topolab";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--html") {
      ++i;
      continue;
    }
    if (a.starts_with("--html=")) continue;
    if (a.empty() || a.find_first_of(" \t\n'\"\\$`*?;&|<>()[]{}!#~") != std::string::npos) {
      std::string quoted = "'";
      for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = quoted + "'";
    }
    out += " " + a;
  }
  return out;
}

// Every subcommand's options, filled in by parsing.
struct Commands {
  CpuidOptions cpuid;
  CheckOptions check;
  RunOptions run;
  ExperimentCli experiment;
  CLI::App *cpuid_cmd, *check_cmd, *models_cmd, *run_cmd, *experiment_cmd;

  explicit Commands(CLI::App& app)
      : cpuid_cmd(add_cpuid_command(app, cpuid)),
        check_cmd(add_check_command(app, check)),
        models_cmd(app.add_subcommand("models", "list the CPU models and -cpu properties")),
        run_cmd(add_run_command(app, run)),
        experiment_cmd(add_experiment_command(app, experiment)) {}

  // The subcommand that was given, or the demo.
  int run_parsed() {
    if (*cpuid_cmd) return run_cpuid(cpuid);
    if (*check_cmd) return run_check(check);
    if (*run_cmd) {
      run.configure();
      return run_machine(run);
    }
    if (*experiment_cmd) {
      apply_guest_defaults(*experiment_cmd, experiment);
      return run_experiment(experiment, find_data_paths());
    }
    if (*models_cmd) return print_models();
    return run_demo(find_data_paths());
  }
};

}  // namespace

int main(int argc, char** argv) {
  // QEMU asks for transparent huge pages for each engine's translation
  // buffer, so the first translated block of every vCPU makes the kernel
  // zero 2 MiB: 1,024 vCPUs spent 4 of their 10 s booting there. Small
  // pages cost those engines 2 MiB less each and the others nothing
  // measurable (docs/benchmarks.md).
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  // The QEMU command line: as `topolab qemu ARGS`, or under QEMU's own name
  // (build/qemu-system-x86_64 is a link to topolab).
  const bool as_qemu = std::filesystem::path(argv[0]).filename() == "qemu-system-x86_64";
  if (as_qemu || (argc > 1 && std::string_view(argv[1]) == "qemu"))
    return run_qemu_front(std::vector<std::string>(argv + (as_qemu ? 1 : 2), argv + argc));

  CLI::App app{"topolab: a deterministic x86 machine for studying what topology a guest sees\n"
               "and what that does to its IPI and HLT traffic. With no command it runs the demo."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version",
                       [] { return fmt::format("topolab {} on Unicorn {}", TOPOLAB_VERSION, engine_version()); },
                       "print topolab's version and the CPU engine's it runs on");
  Commands commands(app);
  try {
    auto args = qemu_style_to_cli11(argc, argv);
    app.parse(args);
    commands.cpuid.command = commands.run.command = commands.experiment.command = command_for_page(argc, argv);
    return commands.run_parsed();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "topolab: {} (see topolab --help)\n", e.what());
    return kExitBadInput;
  } catch (const InputError& e) {
    fmt::print(stderr, "topolab: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "topolab: internal error: {}\n", e.what());
    return kExitInternalError;
  }
}
