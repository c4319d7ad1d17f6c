// topolab: what topology does a guest see, and what does that do to its IPI
// and HLT traffic? The command line; all real work lives in emu/, devices/
// and firmware/.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "emu/cpuid.h"
#include "emu/cpuid_report.h"

namespace {

using namespace topolab;

// The configuration of the demo a bare `topolab` runs: the machine of the
// l3-cache debate, 16 vCPUs as 1 socket x 8 cores x 2 threads.
constexpr const char* kDemoSmp = "16,sockets=1,cores=8,threads=2";
constexpr const char* kDemoCpu = "Skylake-Server,l3-cache=on";

// QEMU spells long options with one dash (-smp, -cpu, -append); CLI11 would
// read "-smp" as "-s -m -p". Rewrite the QEMU spellings we accept to "--".
std::vector<std::string> qemu_style_to_cli11(int argc, char** argv) {
  static const char* kQemuLong[] = {"-smp", "-cpu", "-append", "-initrd", "-serial", "-kernel"};
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    std::string a = argv[i];
    for (const char* q : kQemuLong)
      if (a == q || a.starts_with(std::string(q) + "=")) a = "-" + a;
    args.push_back(a);
  }
  return args;  // CLI11 takes them reversed
}

struct CpuidOptions {
  std::string smp = kDemoSmp;
  std::string cpu = kDemoCpu;
  std::string format = "table";
  std::string output;
};

int run_cpuid(const CpuidOptions& o) {
  CpuidModel model(Topology::parse(o.smp), parse_cpu(o.cpu));
  if (o.format == "hwloc") {
    if (o.output.empty()) throw ConfigError("cpuid --format hwloc needs --output DIR");
    write_hwloc_cpuid_dir(model, o.output);
    fmt::print("wrote {} (read it with: HWLOC_CPUID_PATH={} HWLOC_COMPONENTS=x86,stop lstopo-no-graphics)\n", o.output,
               o.output);
    return 0;
  }
  std::string text = o.format == "raw" ? format_cpuid_raw(model) : format_topology_table(model);
  if (o.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::FILE* f = std::fopen(o.output.c_str(), "w");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
    throw std::runtime_error(fmt::format("cannot write {}", o.output));
  return 0;
}

void add_topology_options(CLI::App* app, std::string& smp, std::string& cpu) {
  app->add_option("--smp", smp, "QEMU -smp: [cpus=]N[,maxcpus=,sockets=,dies=,modules=,cores=,threads=]")
      ->capture_default_str();
  app->add_option("--cpu", cpu, "QEMU -cpu: MODEL[,l3-cache=on|off][,+x2apic|-x2apic][,+monitor|-monitor][,vendor=,level=,xlevel=]")
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"topolab: a deterministic x86 machine for studying what topology a guest sees\n"
               "and what that does to its IPI and HLT traffic. With no command it runs the demo."};
  app.require_subcommand(0, 1);

  CpuidOptions cpuid;
  CLI::App* cpuid_cmd = app.add_subcommand("cpuid", "show the CPUID leaves of a topology, with no guest running");
  add_topology_options(cpuid_cmd, cpuid.smp, cpuid.cpu);
  cpuid_cmd->add_option("--format", cpuid.format, "table (for a person), raw (cpuid -r), hwloc (HWLOC_CPUID_PATH dir)")
      ->check(CLI::IsMember({"table", "raw", "hwloc"}))
      ->capture_default_str();
  cpuid_cmd->add_option("--output", cpuid.output, "write to this file (raw, table) or directory (hwloc)");

  CLI::App* models_cmd = app.add_subcommand("models", "list the CPU models and -cpu properties");

  try {
    auto args = qemu_style_to_cli11(argc, argv);
    app.parse(args);
    if (*cpuid_cmd) return run_cpuid(cpuid);
    if (*models_cmd) {
      for (const auto& m : cpu_models()) fmt::print("{:<16} {}\n", m.name, m.description);
      fmt::print("\nproperties: l3-cache=on|off, vendor=ID, level=N, xlevel=N, model-id=TEXT, and +F / -F / F=on|off for F in:\n ");
      for (const auto& f : feature_flags()) fmt::print(" {}", f.name);
      fmt::print("\n");
      return 0;
    }
    return run_cpuid(CpuidOptions{});
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "topolab: {}\n", e.what());
    return 2;
  }
}
