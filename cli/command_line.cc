// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/command_line.h"

#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace topolab::cli {

void add_machine_options(CLI::App* app, MachineSpec& spec) {
  app->add_option("--smp", spec.smp,
                  "QEMU -smp: [cpus=]N[,maxcpus=,sockets=,dies=,clusters=1,modules=,cores=,threads=]; hybrid: "
                  "[sockets=,dies=,]p-modules=,p-cores=,p-threads=,e-modules=,e-cores=,e-threads=")
      ->capture_default_str();
  app->add_option("--cpu", spec.cpu,
                  "QEMU -cpu: MODEL[,l3-cache=on|off][,+x2apic|-x2apic][,+monitor|-monitor][,vendor=,level=,xlevel=]"
                  "[,x-force-cpuid-0x1f=on]")
      ->capture_default_str();
  app->add_option("--machine", spec.machine,
                  "QEMU -machine: [pc|q35,]smp-cache.N.cache=l1d|l1i|l2|l3,smp-cache.N.topology=core|module|die|socket");
}

ParsedMachine parse_machine_and_warn(const MachineSpec& spec) {
  ParsedMachine m = parse_machine_spec(spec);
  for (const std::string& why : m.cpu.dropped_requests)
    fmt::print(stderr, "topolab: warning: -cpu {}: {}\n", m.cpu.arg, why);
  return m;
}

void add_spin_skip_option(CLI::App* app, bool& spin_skip) {
  app->add_option("--spin-skip", spin_skip,
                  "on: a vCPU spinning in a PAUSE loop at a fixed point skips to the next time anything it can "
                  "observe could change; off: every instruction runs")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
      ->default_str("on");
}

int print_models() {
  for (const auto& m : cpu_models()) fmt::print("{:<16} {}\n", m.name, m.description);
  fmt::print("\nproperties: {}, and +F / -F / F=on|off for F in:\n ", cpu_property_help());
  for (const auto& f : feature_flags()) fmt::print(" {}", f.name);
  fmt::print("\n");
  return 0;
}

}  // namespace topolab::cli
