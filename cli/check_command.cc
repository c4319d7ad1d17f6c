// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/check_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "lab/cpuid_dump.h"
#include "lab/topology_lint.h"
#include "lab/check_report.h"
#include "report/cpuid_diff.h"

namespace topolab {

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

// A machine named the way the user writes one: "-smp 16,cores=8 -cpu EPYC".
struct MachineSpec {
  std::string smp = "1", cpu = "qemu64";  // QEMU's defaults
  std::string label() const { return fmt::format("-smp {} -cpu {}", smp, cpu); }
};

MachineSpec parse_machine_spec(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  MachineSpec spec;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string key = words[i], value;
    if (key.starts_with("--")) key.erase(0, 1);
    if (size_t eq = key.find('='); eq != std::string::npos && (key.starts_with("-smp=") || key.starts_with("-cpu="))) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    }
    if ((key != "-smp" && key != "-cpu") || value.empty())
      throw ConfigError(fmt::format("--diff \"{}\": expected \"-smp N,... -cpu MODEL,...\"", text));
    (key == "-smp" ? spec.smp : spec.cpu) = value;
  }
  return spec;
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "check", "lint a topology: decode its CPUID as Linux 6.x, Linux 4.x, hwloc and edk2 do, and report every "
               "disagreement and known-bad pattern (exit 1 with findings)");
  cmd->add_option("--smp", o.smp, "QEMU -smp of a topolab machine (default 1)");
  cmd->add_option("--cpu", o.cpu, "QEMU -cpu of a topolab machine (default qemu64)");
  cmd->add_option("--dump", o.dump, "lint a `cpuid -r` dump instead (one \"CPU N:\" block per CPU)");
  cmd->add_option("--consumer", o.consumer, "linux-6.x, linux-4.x, hwloc, edk2 or all")->capture_default_str();
  cmd->add_flag("--json", o.json, "machine-readable output");
  return cmd;
}

int run_check(const CheckOptions& o) {
  std::vector<Consumer> consumers = consumers_of(o.consumer);
  RawCpuid raw;
  if (!o.dump.empty()) {
    if (!o.smp.empty() || !o.cpu.empty()) throw ConfigError("check: --dump reads a dump; it takes no -smp or -cpu");
    raw = parse_cpuid_raw_dump(read_file_text(o.dump), o.dump);
  } else {
    MachineSpec spec;
    if (!o.smp.empty()) spec.smp = o.smp;
    if (!o.cpu.empty()) spec.cpu = o.cpu;
    raw = raw_cpuid_of(CpuidModel(Topology::parse(spec.smp), parse_cpu(spec.cpu)), spec.label());
  }
  LintInput in = decode_for_lint(raw, consumers);
  std::vector<Finding> findings = lint_topology(in);
  std::string text = o.json ? format_check_json(in, findings) : format_check_text(in, findings);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return findings.empty() ? 0 : kExitFindings;
}

int run_cpuid_diff(const std::vector<std::string>& sides) {
  if (sides.size() != 2) throw ConfigError("cpuid --diff: expected two machines, e.g. --diff \"-smp 4 -cpu EPYC\" \"-smp 8 -cpu EPYC\"");
  MachineSpec a = parse_machine_spec(sides[0]), b = parse_machine_spec(sides[1]);
  CpuidModel ma(Topology::parse(a.smp), parse_cpu(a.cpu)), mb(Topology::parse(b.smp), parse_cpu(b.cpu));
  std::string text = format_cpuid_diff({a.label(), &ma}, {b.label(), &mb});
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace topolab
