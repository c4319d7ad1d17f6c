// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/command_line.h"

#include <charconv>
#include <cmath>
#include <utility>
#include <optional>

#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>

#include "base/errors.h"
#include "emu/machine_config.h"
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
                  "QEMU -machine: [pc|q35,]smp-cache.N.cache=l1d|l1i|l2|l3,smp-cache.N.topology=core|module|die|socket,"
                  "hmat=on|off");
  // QEMU's spelling (model/qemu_options.h): MiB, or K, M, G, T; how much
  // the machine can have is the board's check (-cpu's phys-bits).
  app->add_option("-m", spec.memory,
                  "guest RAM: MiB, or a size with QEMU's K, M, G or T (16G); up to what -cpu's phys-bits reaches")
      ->default_str(std::to_string(kDefaultRamMib));
  app->add_option("--numa", spec.numa,
                  "QEMU -numa, once per option: node[,nodeid=N][,cpus=A[-B]]...[,memdev=ID] | dist,src=,dst=,val= | "
                  "cpu,node-id=N[,socket-id=,die-id=,core-id=,thread-id=] | hmat-lb,... | hmat-cache,... (docs/numa.md)")
      ->allow_extra_args(false);
  app->add_option("--object", spec.objects, "QEMU -object, once per object: memory-backend-ram,id=ID,size=SIZE")
      ->allow_extra_args(false);
}

ParsedMachine parse_machine_and_warn(const MachineSpec& spec) {
  ParsedMachine m = parse_machine_spec(spec);
  for (const std::string& why : m.cpu.dropped_requests)
    fmt::print(stderr, "topolab: warning: -cpu {}: {}\n", m.cpu.arg, why);
  for (const std::string& what : m.cpu.warnings) fmt::print(stderr, "topolab: warning: -cpu {}: {}\n", m.cpu.arg, what);
  for (const std::string& why : m.numa.warnings()) fmt::print(stderr, "topolab: warning: -numa: {}\n", why);
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

namespace {

std::optional<uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

}  // namespace

GdbEndpoint parse_gdb_endpoint(std::string_view text, std::string_view spelled) {
  std::string_view rest = text;
  if (rest.starts_with("tcp:")) rest.remove_prefix(4);
  else if (text.find(':') != std::string_view::npos && text.find(':') != text.rfind(':'))
    rest = {};  // two colons without tcp: is no spelling of QEMU's or ours
  const size_t colon = rest.rfind(':');
  const std::string_view host = colon == std::string_view::npos ? std::string_view() : rest.substr(0, colon);
  const std::optional<uint16_t> port = parse_port(colon == std::string_view::npos ? rest : rest.substr(colon + 1));
  if (!port || (text.starts_with("tcp:") && colon == std::string_view::npos))
    throw ConfigError(fmt::format("{} {}: expected PORT, HOST:PORT, tcp::PORT or tcp:HOST:PORT", spelled, text));
  GdbEndpoint endpoint;
  if (!host.empty()) endpoint.host = std::string(host);
  endpoint.port = *port;
  return endpoint;
}

uint64_t parse_virtual_time(std::string_view text, std::string_view spelled) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  std::string_view number = text;
  double scale = 1e9;
  for (const auto& [suffix, ns] : kUnits)
    if (text.ends_with(suffix)) {
      number = text.substr(0, text.size() - suffix.size());
      scale = ns;
      break;
    }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  const double ns = value * scale;
  if (number.empty() || ec != std::errc{} || end != number.data() + number.size() || !(ns >= 0) ||
      ns > MachineConfig::kMaxTimeLimitSeconds * 1e9)
    throw ConfigError(fmt::format("{} {}: expected a virtual time such as 250ms, 1.5s or 40000ns", spelled, text));
  return static_cast<uint64_t>(std::llround(ns));
}

}  // namespace topolab::cli
