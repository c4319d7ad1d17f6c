// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/html_report.h"

#include "base/text_buffer.h"
#include "report/html_page.h"

namespace topolab {

namespace {

std::vector<HtmlSection> machine_sections(const CpuidModel& model, std::string_view prefix,
                                          const NumaConfig* numa = nullptr) {
  return {html_topology_section(model, prefix, numa), html_caches_section(model, prefix),
          html_leaves_section(model, prefix)};
}

std::string pre_block(std::string_view id, std::string_view text) {
  return fmt::format("<pre id=\"{}\">{}</pre>\n", id, html_escape(text));
}

}  // namespace

std::string cpuid_html_page(const CpuidModel& model, const std::string& command, const NumaConfig* numa) {
  return html_document(fmt::format("CPUID of {} ({})", model.topology().describe(), model.cpu().model.name), command,
                       machine_sections(model, "", numa));
}

std::string run_html_page(const HtmlRunInput& in) {
  std::vector<HtmlSection> sections;
  fmt::memory_buffer summary;
  appendf(summary, "<p class=\"note\" id=\"run-outcome\">{}</p>\n", html_escape(in.outcome));
  if (!in.report_table.empty()) appendf(summary, "{}", pre_block("run-report", in.report_table));
  sections.push_back({"run", "The run", fmt::to_string(summary)});
  sections.push_back(html_timeline_section(in.activity));
  sections.push_back(html_wakes_section(in.stats));
  sections.push_back(html_heatmap_section(in.stats, in.topology));
  for (HtmlSection& s : machine_sections(in.cpuid, "", in.numa)) sections.push_back(std::move(s));
  return html_document(fmt::format("Run on {} ({})", in.topology.describe(), in.cpuid.cpu().model.name),
                       in.command, sections);
}

std::string experiment_html_page(const HtmlExperimentInput& in) {
  std::vector<HtmlSection> sections;
  fmt::memory_buffer charts;
  for (const auto& [name, svg] : in.charts)
    appendf(charts, "<figure class=\"chart\" id=\"chart-{}\">{}<figcaption>{}</figcaption></figure>\n",
            html_escape(name.substr(0, name.rfind('.'))), svg, html_escape(name));
  sections.push_back({"experiment-charts", "Charts", fmt::to_string(charts)});
  sections.push_back({"experiment-tables", "Tables", pre_block("experiment-table-text", in.tables)});
  // Each machine's topology, caches and leaves, folded: the l3-cache
  // experiment's point is how the L3 row differs between them.
  fmt::memory_buffer machines;
  appendf(machines, "<p class=\"note\">The machines the experiment ran, as their guests see them through CPUID.</p>\n");
  for (size_t i = 0; i < in.machines.size(); ++i) {
    const auto& [label, model] = in.machines[i];
    appendf(machines, "<details class=\"machine\" id=\"machine-{}\"><summary>{} (-smp {} -cpu {})</summary>\n", i,
            html_escape(label), html_escape(model.topology().to_smp_arg()), html_escape(model.cpu().arg));
    for (const HtmlSection& s : machine_sections(model, fmt::format("m{}-", i)))
      appendf(machines, "<div id=\"{}\"><h3>{}</h3>\n{}</div>\n", s.id, html_escape(s.heading), s.body);
    appendf(machines, "</details>\n");
  }
  sections.push_back({"experiment-machines", "The machines", fmt::to_string(machines)});
  return html_document(fmt::format("Experiment {}", in.name), in.command, sections);
}

}  // namespace topolab
