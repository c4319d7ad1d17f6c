// SPDX-License-Identifier: GPL-2.0-or-later
// The pieces the HTML pages (report/html_report.h) are built from, shared by
// the files that draw them: escaping, the page skeleton with its inline CSS
// and script, and the sections about a CPUID model. Internal to report/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "emu/activity_log.h"
#include "emu/stats.h"
#include "model/cpuid.h"
#include "model/numa.h"

namespace topolab {

// Text made safe for HTML element content and attribute values.
std::string html_escape(std::string_view text);

// The page's inline style sheet and script (report/html_assets.cc).
std::string_view html_page_css();
std::string_view html_page_js();

// One section of a page, listed in the page's contents.
struct HtmlSection {
  std::string id;
  std::string heading;
  std::string body;  // HTML
};

// The whole document: <head> with the CSS, a header naming the command that
// made it, the contents, the sections, and the script at the end.
std::string html_document(std::string_view title, std::string_view command, const std::vector<HtmlSection>& sections);

// "0x1c004121" with a hover box of its decoded fields (report/cpuid_fields.h);
// `whose`: "" for a register every CPU reads alike, else "CPU 3: ".
std::string html_register_cell(uint32_t leaf, uint32_t subleaf, char reg, uint32_t value, std::string_view whose);
// The decoded fields of one register as a table (the hover box's content).
std::string html_field_table(uint32_t leaf, char reg, uint32_t value);

// The sections about a machine's CPUID, their element ids prefixed with
// `prefix` so that one page can show several machines:
// - the summary and the APIC-ID bit layout;
// - the package / die / module / core / thread tree with APIC IDs and core types;
// - which CPUs share each cache, drawn, and why, in words;
// - the raw leaves with each register decoded on hover.
// With -numa (`numa` not null and enabled), the nodes' table after the tree.
HtmlSection html_topology_section(const CpuidModel& model, std::string_view prefix, const NumaConfig* numa = nullptr);
HtmlSection html_caches_section(const CpuidModel& model, std::string_view prefix);
HtmlSection html_leaves_section(const CpuidModel& model, std::string_view prefix);

// The sections about a run (report/html_run.cc).
HtmlSection html_heatmap_section(const Stats& stats, const Topology& topology);
HtmlSection html_wakes_section(const Stats& stats);
HtmlSection html_timeline_section(const ActivityLog& log);

// Bits an APIC ID of this machine needs, for writing it out in binary.
unsigned apic_id_width(const Topology& t);

// The core type of `cpu` from leaf 0x1A, "" when the model reports none.
std::string cpu_core_type(const CpuidModel& model, unsigned cpu);

}  // namespace topolab
