// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/cpuid_command.h"

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/check_command.h"
#include "cli/command_line.h"
#include "cli/output_files.h"
#include "lab/consumer_views.h"
#include "lab/cpuid_dump.h"
#include "lab/linux_sysfs.h"
#include "report/cpuid_report.h"
#include "report/html_report.h"

namespace topolab::cli {

CLI::App* add_cpuid_command(CLI::App& app, CpuidOptions& cpuid) {
  CLI::App* cpuid_cmd = app.add_subcommand("cpuid", "show the CPUID leaves of a topology, with no guest running");
  add_machine_options(cpuid_cmd, cpuid.spec);
  cpuid_cmd
      ->add_option("--format", cpuid.format,
                   "table (for a person), raw (cpuid -r), hwloc (HWLOC_CPUID_PATH dir), linux (the sysfs topology "
                   "and cache lists Linux should show, as the Linux guest's /init prints them)")
      ->check(CLI::IsMember({"table", "raw", "hwloc", "linux"}))
      ->capture_default_str();
  cpuid_cmd->add_option("--output", cpuid.output, "write to this file (raw, table) or directory (hwloc)");
  cpuid_cmd->add_option("--html", cpuid.html, "also write one self-contained HTML page about the topology here");
  cpuid_cmd->add_option("--diff", cpuid.diff,
                        "compare two machines: --diff \"-smp A -cpu X [-machine M]\" \"-smp B -cpu Y [-machine N]\"");
  return cpuid_cmd;
}

int run_cpuid(const CpuidOptions& o) {
  if (!o.diff.empty()) return run_cpuid_diff(o.diff);
  const CpuidModel model = parse_machine_and_warn(o.spec).cpuid_model();
  if (o.format == "hwloc" && o.output.empty()) throw ConfigError("cpuid --format hwloc needs --output DIR");
  HtmlFile html(o.html);
  if (html.wanted()) html.write(cpuid_html_page(model, o.command));
  if (o.format == "hwloc") {
    write_hwloc_cpuid_dir(model, o.output);
    fmt::print("wrote {} (read it with: HWLOC_CPUID_PATH={} HWLOC_COMPONENTS=x86,stop lstopo-no-graphics)\n", o.output,
               o.output);
    return 0;
  }
  std::string text = o.format == "raw"     ? format_cpuid_raw(model)
                     : o.format == "linux" ? format_linux_sysfs(decode_as(Consumer::Linux6, raw_cpuid_of(model, "")))
                                           : format_topology_table(model);
  if (o.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  write_text_file(o.output, text);
  return 0;
}

}  // namespace topolab::cli
