// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/check_command.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/command_line.h"
#include "lab/check_report.h"
#include "lab/cpuid_dump.h"
#include "lab/topology_lint.h"
#include "report/cpuid_diff.h"

namespace topolab::cli {

namespace {

constexpr int kExitFindings = 1;

std::string read_file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw DumpError(fmt::format("--dump {}: cannot read the file", path));
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) throw DumpError(fmt::format("--dump {}: cannot read the file", path));
  return text.str();
}

std::vector<Consumer> consumers_of(const std::string& name) {
  if (name == "all") return {};
  if (auto c = consumer_named(name)) return {*c};
  throw ConfigError(fmt::format("--consumer {}: expected linux-6.x, linux-4.x, hwloc, edk2 or all", name));
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "check", "lint a topology: decode its CPUID as Linux 6.x, Linux 4.x, hwloc and edk2 do, and report every "
               "disagreement and known-bad pattern (exit 1 with findings)");
  add_machine_options(cmd, o.spec);
  for (const char* name : {"--smp", "--cpu", "--machine", "-m", "--numa", "--object"})
    cmd->get_option(name)->each([&o](const std::string&) { o.spec_given = true; });
  cmd->add_option("--dump", o.dump, "lint a `cpuid -r` dump instead (one \"CPU N:\" block per CPU)");
  cmd->add_option("--consumer", o.consumer, "linux-6.x, linux-4.x, hwloc, edk2 or all")->capture_default_str();
  cmd->add_flag("--json", o.json, "machine-readable output");
  return cmd;
}

CheckResult check_topology(const CheckOptions& o) {
  std::vector<Consumer> consumers = consumers_of(o.consumer);
  RawCpuid raw;
  std::optional<ParsedMachine> machine;  // its NUMA nodes join the lint; a dump has none
  if (!o.dump.empty()) {
    if (o.spec_given) throw ConfigError("check: --dump reads a dump; it takes no -smp, -cpu, -machine, -m, -numa or -object");
    raw = parse_cpuid_raw_dump(read_file_text(o.dump), o.dump);
  } else {
    machine = parse_machine_and_warn(o.spec);
    raw = raw_cpuid_of(machine->cpuid_model(), o.spec.label());
  }
  LintInput in = decode_for_lint(raw, consumers, machine ? &machine->numa : nullptr);
  std::vector<Finding> findings = lint_topology(in);
  return {o.json ? format_check_json(in, findings) : format_check_text(in, findings), !findings.empty()};
}

int run_check(const CheckOptions& o) {
  const CheckResult result = check_topology(o);
  std::fwrite(result.text.data(), 1, result.text.size(), stdout);
  return result.findings ? kExitFindings : 0;
}

std::string cpuid_diff_text(const std::vector<std::string>& sides) {
  if (sides.size() != 2) throw ConfigError("cpuid --diff: expected two machines, e.g. --diff \"-smp 4 -cpu EPYC\" \"-smp 8 -cpu EPYC\"");
  const MachineSpec a = parse_machine_words(sides[0], "--diff"), b = parse_machine_words(sides[1], "--diff");
  const ParsedMachine pa = parse_machine_and_warn(a), pb = parse_machine_and_warn(b);
  const CpuidModel ma = pa.cpuid_model(), mb = pb.cpuid_model();
  return format_cpuid_diff({a.label(), &ma, &pa.numa}, {b.label(), &mb, &pb.numa});
}

int run_cpuid_diff(const std::vector<std::string>& sides) {
  const std::string text = cpuid_diff_text(sides);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace topolab::cli
