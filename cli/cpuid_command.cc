// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/cpuid_command.h"

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/check_command.h"
#include "cli/command_line.h"
#include "cli/output_files.h"
#include "base/memory_map.h"
#include "firmware/acpi.h"
#include "lab/consumer_views.h"
#include "lab/cpuid_dump.h"
#include "report/numa_report.h"
#include "lab/linux_sysfs.h"
#include "report/cpuid_report.h"
#include "report/html_report.h"

namespace topolab::cli {

namespace {

// The -numa nodes after the topology table, a blank line between them.
std::string numa_table(const ParsedMachine& machine) {
  const std::string table = format_numa_table(machine.numa, machine.topology);
  return table.empty() ? table : "\n" + table;
}

// What Linux's sysfs will show (lab/linux_sysfs.h), its nodes included.
std::string linux_sysfs_text(const ParsedMachine& machine) {
  const RawCpuid raw = raw_cpuid_of(machine.cpuid_model(), "");
  ConsumerView linux = decode_as(Consumer::Linux6, raw);
  LinuxNumaView numa = linux_numa_view(machine.numa, machine.topology, machine.ram_mib << 20);
  apply_linux_numa(linux, numa, !raw.cpus.empty() && identify(raw.cpus.front()).amd);
  return format_linux_sysfs(linux) + format_linux_nodes(numa);
}

// The ACPI tables the guest of this machine finds (firmware/acpi.h), one
// file a table as `acpidump -b` writes them, for `iasl -d` and the like.
void write_acpi_table_dir(const ParsedMachine& machine, const std::string& dir) {
  make_output_dir(dir, "--output");
  GuestRam ram(memory_map::pc_ram_regions(machine.ram_mib << 20));
  const AcpiTables tables = build_acpi_tables(ram, machine.topology, machine.numa);
  for (const AcpiTableFile& file : acpi_table_files(ram, tables)) {
    const std::string_view bytes(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
    write_text_file(std::filesystem::path(dir) / file.name, bytes);
  }
}

}  // namespace

CLI::App* add_cpuid_command(CLI::App& app, CpuidOptions& cpuid) {
  CLI::App* cpuid_cmd = app.add_subcommand("cpuid", "show the CPUID leaves of a topology, with no guest running");
  add_machine_options(cpuid_cmd, cpuid.spec);
  cpuid_cmd
      ->add_option("--format", cpuid.format,
                   "table (for a person), raw (cpuid -r), hwloc (HWLOC_CPUID_PATH dir), linux (the sysfs topology "
                   "and cache lists Linux should show, as the Linux guest's /init prints them), acpi (the guest's ACPI "
                   "tables in a directory, as acpidump -b writes them)")
      ->check(CLI::IsMember({"table", "raw", "hwloc", "linux", "acpi"}))
      ->capture_default_str();
  cpuid_cmd->add_option("--output", cpuid.output, "write to this file (raw, table) or directory (hwloc, acpi)");
  cpuid_cmd->add_option("--html", cpuid.html, "also write one self-contained HTML page about the topology here");
  cpuid_cmd->add_option("--diff", cpuid.diff,
                        "compare two machines: --diff \"-smp A -cpu X [-machine M]\" \"-smp B -cpu Y [-machine N]\"");
  return cpuid_cmd;
}

int run_cpuid(const CpuidOptions& o) {
  if (!o.diff.empty()) return run_cpuid_diff(o.diff);
  const ParsedMachine machine = parse_machine_and_warn(o.spec);
  const CpuidModel model = machine.cpuid_model();
  if ((o.format == "hwloc" || o.format == "acpi") && o.output.empty())
    throw ConfigError(fmt::format("cpuid --format {} needs --output DIR", o.format));
  HtmlFile html(o.html);
  if (html.wanted()) html.write(cpuid_html_page(model, o.command, &machine.numa));
  if (o.format == "hwloc") {
    write_hwloc_cpuid_dir(model, o.output);
    fmt::print("wrote {} (read it with: HWLOC_CPUID_PATH={} HWLOC_COMPONENTS=x86,stop lstopo-no-graphics)\n", o.output,
               o.output);
    return 0;
  }
  if (o.format == "acpi") {
    write_acpi_table_dir(machine, o.output);
    fmt::print("wrote {} (decode it with: iasl -d {}/*.dat)\n", o.output, o.output);
    return 0;
  }
  std::string text = o.format == "raw"     ? format_cpuid_raw(model)
                     : o.format == "linux" ? linux_sysfs_text(machine)
                                           : format_topology_table(model) + numa_table(machine);
  if (o.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  write_text_file(o.output, text);
  return 0;
}

}  // namespace topolab::cli
