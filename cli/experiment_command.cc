// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/experiment_command.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/output_files.h"
#include "emu/unicorn_vcpu.h"
#include "lab/runner.h"
#include "lab/sweep.h"

namespace topolab::cli {

namespace {

// A Linux guest boots for seconds of host time before each benchmark:
// fewer, coarser runs unless asked (its quantum does not change what the
// guest does, only how finely the vCPUs interleave).
inline constexpr uint64_t kLinuxExperimentQuantum = 10'000;
inline constexpr unsigned kLinuxExperimentRepeats = 2;

void make_output_dir(const ExperimentOptions& o) {
  if (!o.output_dir.empty()) cli::make_output_dir(o.output_dir, "--output");
}

// Runs `cases`; a guest that failed is one line on stderr and no results.
std::optional<std::vector<CaseMeasurement>> run_cases(const ExperimentOptions& o,
                                                      const std::vector<ExperimentCase>& cases) {
  try {
    return run_experiment_cases(o, cases, unicorn_vcpu_factory(), stderr);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "topolab: experiment {}: {}\n", o.name, e.what());
    return std::nullopt;
  }
}

// The tables (or JSON) on stdout, results.json, results.txt and the charts
// into --output: the same for a run in one piece and for a merge.
void write_experiment_results(const ExperimentOptions& o, const std::vector<CaseMeasurement>& results) {
  const std::string tables = format_experiment_tables(o, results);
  const std::string json = format_experiment_json(o, results);
  fmt::print("{}", o.json ? json : tables);
  if (!o.output_dir.empty()) {
    const std::filesystem::path dir(o.output_dir);
    write_text_file(dir / "results.json", json);
    write_text_file(dir / "results.txt", tables);
    for (const auto& [name, svg] : experiment_charts(o, results)) write_text_file(dir / name, svg);
    fmt::print(stderr, "wrote {}\n", (dir / "results.json").string());
  }
}

// `--case K`: one run, its case file into --output (written aside and
// renamed, so a job killed halfway leaves no half a file), else stdout.
int run_one_case(const ExperimentOptions& o, const std::vector<ExperimentCase>& cases, long index) {
  if (index < 0 || static_cast<size_t>(index) >= cases.size())
    throw ConfigError(fmt::format("--case {}: experiment {} has {} cases with these options (0-{}; see --list-cases)",
                                  index, o.name, cases.size(), cases.size() - 1));
  const ExperimentCase& spec = cases[index];
  fmt::print(stderr, "topolab experiment {}: case {} of {}\n", o.name, index, cases.size());
  std::optional<std::vector<CaseMeasurement>> result = run_cases(o, {spec});
  if (!result) return kExitGuestFailed;
  const std::string text = format_case_file(o, cases.size(), index, result->front());
  if (o.output_dir.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  const std::filesystem::path path = std::filesystem::path(o.output_dir) / case_file_name(index);
  const std::filesystem::path partial = path.string() + ".partial";
  write_text_file(partial, text);
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) throw ConfigError(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  fmt::print(stderr, "wrote {}\n", path.string());
  return 0;
}

// --guest linux: the guest's files where they must be.
void check_linux_guest(ExperimentOptions& o, const DataPaths& data) {
  if (o.linux_dir.empty()) {
    if (data.linux_dir.empty())
      throw ConfigError("--guest linux: no default directory for the Linux guest (HOME is not set): give --linux DIR");
    o.linux_dir = data.linux_dir.string();
  }
  for (const char* file : {"vmlinux", "initramfs.cpio"})
    if (!std::filesystem::exists(std::filesystem::path(o.linux_dir) / file))
      throw ConfigError(fmt::format("--guest linux: no {}/{} ({}{} fetches and builds the guest)", o.linux_dir, file,
                                    data.linux_guest_command,
                                    o.linux_dir == data.linux_dir.string() ? ""
                                                                           : fmt::format(" --dir {}", o.linux_dir)));
}

// A sweep in pieces: what a cluster's scheduler runs (docs/sweeps.md).
void add_sweep_options(CLI::App* experiment_cmd, ExperimentCli& experiment) {
  CLI::Option* list = experiment_cmd->add_flag("--list-cases", experiment.list_cases,
                                               "print the runs, one a line: the index --case takes, and what it is");
  CLI::Option* one = experiment_cmd->add_option("--case", experiment.case_index,
                                                "run this one run of --list-cases; write case-K.json into --output "
                                                "(or the case file to stdout)")
                         ->check(CLI::NonNegativeNumber);
  CLI::Option* merge = experiment_cmd->add_option("--merge", experiment.merge_dir,
                                                  "build the tables, JSON and charts from the case-*.json files of "
                                                  "this directory, as a run in one piece (same options)");
  list->excludes(one)->excludes(merge);
  one->excludes(merge);
}

// What the guest runs and how the runs are spread: the options beyond the
// experiment's name, its outputs and the sweep.
void add_workload_options(CLI::App* experiment_cmd, ExperimentCli& experiment) {
  experiment_cmd
      ->add_option_function<std::string>(
          "--kernel", [&experiment](const std::string& name) { experiment.options.wake_list = *wake_list_named(name); },
          "the guest kernel's wake-list IPI: 2016 (RES, the seeds) or 6.x (CAL)")
      ->check(CLI::IsMember(std::vector<std::string>{kernel_name(WakeList::Res), kernel_name(WakeList::Cal)}))
      ->default_str(kernel_name(WakeList::Res));
  experiment_cmd->add_option("--jobs", experiment.options.jobs, "machines to run at once")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  experiment_cmd->add_option("--quantum", experiment.options.quantum, "instructions per scheduling slice")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  add_spin_skip_option(experiment_cmd, experiment.options.spin_skip);
  experiment_cmd->add_option("--repeats", experiment.options.repeats,
                             "runs per case, at quanta around --quantum (the spread shows how robust a result is)")
      ->check(CLI::Range(1u, kMaxRepeats))
      ->capture_default_str();
  experiment_cmd->add_option("--scale", experiment.options.scale_percent, "workload size in percent")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  experiment_cmd->add_option("--cost", experiment.cost_spec, "cost model over the defaults, as for run");
  experiment_cmd->add_option("--image", experiment.options.sched_image,
                             "the sched kernel (default: sched.elf of topolab's guest images)");
  experiment_cmd
      ->add_option_function<std::string>(
          "--guest", [&experiment](const std::string& name) { experiment.options.guest = *guest_named(name); },
                   "sched (testcases/sched, the default) or linux (Debian's Linux 6.1 running perf bench sched for "
                   "l3-cache, topolab-ctxsw for halt-poll)")
      ->check(CLI::IsMember(std::vector<std::string>{guest_name(Guest::Sched), guest_name(Guest::Linux)}))
      ->default_str(guest_name(Guest::Sched));
  experiment_cmd
      ->add_option_function<std::vector<std::string>>(
          "--pv",
          [&experiment](const std::vector<std::string>& names) {
            experiment.options.pv.clear();
            for (const std::string& name : names) {
              const PvSetting pv = *pv_named(name);
              if (std::find(experiment.options.pv.begin(), experiment.options.pv.end(), pv) != experiment.options.pv.end())
                throw CLI::ValidationError("--pv", fmt::format("{} is given twice", name));
              experiment.options.pv.push_back(pv);
            }
          },
          "with --guest linux: KVM's paravirtual features, each machine once per item: off (none: the default), "
          "qemu (QEMU's defaults for a KVM guest), all (PV IPIs, spinlocks, TLB flush, sched yield and poll "
          "control too); e.g. --pv off,qemu,all")
      ->delimiter(',')
      ->check(CLI::IsMember(std::vector<std::string>{pv_name(PvSetting::Off), pv_name(PvSetting::Qemu),
                                                     pv_name(PvSetting::All)}));
  experiment_cmd->add_option("--linux", experiment.options.linux_dir,
                             "the Linux guest's directory, as linux_guest.sh fills it (default: .deps/linux of "
                             "the checkout topolab was built in; installed, ~/.cache/topolab/linux or "
                             "$XDG_CACHE_HOME/topolab/linux)");
}

}  // namespace

CLI::App* add_experiment_command(CLI::App& app, ExperimentCli& experiment) {
  CLI::App* experiment_cmd = app.add_subcommand(
      "experiment", "run an experiment of the l3-cache debate (l3-cache) or of halt polling (halt-poll); "
                    "no NAME lists them");
  experiment_cmd->add_option("name", experiment.options.name, "l3-cache or halt-poll");
  experiment_cmd->add_option("--output", experiment.options.output_dir,
                             "also write results.json, results.txt and the SVG charts into this directory");
  experiment_cmd->add_option("--format", experiment.format, "stdout: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  add_workload_options(experiment_cmd, experiment);
  experiment_cmd->add_option("--html", experiment.html,
                             "also write one self-contained HTML page with the charts, tables and machines");
  add_sweep_options(experiment_cmd, experiment);
  return experiment_cmd;
}

void apply_guest_defaults(const CLI::App& experiment_cmd, ExperimentCli& experiment) {
  if (experiment.options.guest != Guest::Linux) return;
  if (!experiment_cmd.count("--quantum")) experiment.options.quantum = kLinuxExperimentQuantum;
  if (!experiment_cmd.count("--repeats")) experiment.options.repeats = kLinuxExperimentRepeats;
}

int run_experiment(ExperimentCli& cli, const DataPaths& data) {
  ExperimentOptions& o = cli.options;
  if (o.name.empty()) {
    fmt::print("experiments (topolab experiment NAME):\n");
    for (const auto& [name, what] : experiment_names()) fmt::print("  {:<10} {}\n", name, what);
    return 0;
  }
  o.json = cli.format == "json";
  o.cost = CostModel::parse(cli.cost_spec, CostModel::defaults());
  if (o.sched_image.empty()) o.sched_image = (data.images / "sched.elf").string();
  if (o.guest == Guest::Linux) check_linux_guest(o, data);
  if (o.guest != Guest::Linux && o.pv_axis())
    throw ConfigError("--pv: only the Linux guest (--guest linux) takes up KVM's paravirtual features");
  if (o.name != "l3-cache" && o.pv_axis())
    throw ConfigError(fmt::format("--pv: the {} experiment sets KVM's paravirtual features per row itself", o.name));
  const std::vector<ExperimentCase> cases = experiment_cases(o);
  if (cli.list_cases) {
    fmt::print("{}", format_case_list(cases));
    return 0;
  }
  HtmlFile html(cli.html);
  if (!cli.merge_dir.empty()) {
    const std::vector<CaseMeasurement> results = read_case_files(o, cases, cli.merge_dir);
    fmt::print(stderr, "topolab experiment {}: merged {} case files from {}\n", o.name, cases.size(), cli.merge_dir);
    make_output_dir(o);
    write_experiment_results(o, results);
    if (html.wanted()) html.write(format_experiment_html(o, results, cli.command));
    return 0;
  }
  make_output_dir(o);
  if (cli.case_index >= 0) return run_one_case(o, cases, cli.case_index);
  fmt::print(stderr, "topolab experiment {}: {} machines, {} at a time\n", o.name, cases.size(), o.jobs);
  std::optional<std::vector<CaseMeasurement>> results = run_cases(o, cases);
  if (!results) return kExitGuestFailed;
  write_experiment_results(o, *results);
  if (html.wanted()) html.write(format_experiment_html(o, *results, cli.command));
  return 0;
}

}  // namespace topolab::cli
