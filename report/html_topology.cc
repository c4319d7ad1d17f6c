// SPDX-License-Identifier: GPL-2.0-or-later
// The topology section of the HTML page: the machine in one table, the
// APIC ID as a bit string with the field each topology level owns, and the
// package / die / module / core / thread tree with every CPU's APIC ID and,
// on a hybrid part, its core type (leaf 0x1A).
#include <algorithm>

#include "base/text_buffer.h"
#include "report/html_page.h"
#include "report/numa_report.h"

namespace topolab {

namespace {

constexpr unsigned kTreeCpuLimit = 1024;  // past this the tree stops (the leaves list every CPU)

// Which level owns bit `bit` of an APIC ID.
const char* level_of_bit(const Topology& t, unsigned bit) {
  if (bit < t.core_offset()) return "thread";
  if (bit < t.module_offset()) return "core";
  if (bit < t.die_offset()) return "module";
  if (bit < t.package_offset()) return "die";
  return "package";
}

void append_summary(fmt::memory_buffer& out, const CpuidModel& m, std::string_view prefix) {
  const Topology& t = m.topology();
  const CpuModelDef& def = m.cpu().model;
  bool hybrid = false;
  for (unsigned cpu = 0; cpu < t.cpus() && !hybrid; ++cpu) hybrid = !cpu_core_type(m, cpu).empty();
  appendf(out, "<table class=\"summary\" id=\"{}summary\">\n", prefix);
  appendf(out, "<tr><th class=\"l\">CPU model</th><td>{} ({}, family {:#x} model {:#x} stepping {}), l3-cache={}</td></tr>\n",
          html_escape(def.name), html_escape(def.vendor_id), def.family, def.model, def.stepping,
          m.cpu().l3_cache ? "on" : "off");
  appendf(out, "<tr><th class=\"l\">topology</th><td>{} = {} CPUs (-smp {})</td></tr>\n", html_escape(t.describe()),
          t.cpus(), html_escape(t.to_smp_arg()));
  appendf(out, "<tr><th class=\"l\">APIC IDs</th><td>highest {:#x}{}</td></tr>\n", t.max_apic_id(),
          t.needs_x2apic() ? " (needs x2APIC: above 254)" : "");
  appendf(out, "<tr><th class=\"l\">CPUID</th><td>max basic leaf {:#x}, max extended leaf {:#x}{}</td></tr>\n",
          m.max_basic_leaf(), m.max_extended_leaf(), m.reports_leaf_1f() ? "; leaf 0x1F reports the dies/modules" : "");
  appendf(out, "<tr><th class=\"l\">core types</th><td>{}</td></tr>\n",
          hybrid ? "hybrid: leaf 0x1A names each CPU's core type (shown in the tree)"
                 : "one kind of core (leaf 0x1A reports none)");
  appendf(out, "</table>\n");
}

// The APIC ID as bits, each coloured by the level that owns it, and one CPU
// taken apart as an example.
void append_apic_layout(fmt::memory_buffer& out, const CpuidModel& m, std::string_view prefix) {
  const Topology& t = m.topology();
  const unsigned width = apic_id_width(t);
  appendf(out, "<h3>The APIC ID, bit by bit</h3>\n<table class=\"apic-bits\" id=\"{}apic-layout\"><tr><th>bit</th>",
          prefix);
  for (unsigned b = width; b-- > 0;) appendf(out, "<th>{}</th>", b);
  appendf(out, "</tr><tr><th>level</th>");
  for (unsigned b = width; b-- > 0;) appendf(out, "<td class=\"lvl-{0}\">{0}</td>", level_of_bit(t, b));
  appendf(out, "</tr></table>\n");
  const unsigned cpu = t.cpus() - 1;
  const CpuCoords c = t.coords_of(cpu);
  appendf(out,
          "<p class=\"note\">Each CPU has an APIC ID, and the ID is built from bit fields: the low bits number the "
          "threads of a core, the next ones the cores, then modules, dies and packages; each field is just wide enough "
          "for its count (rounded up to a power of two, so counts that are not powers of two leave gaps). For example "
          "CPU {} has APIC ID {:#x} = <code>0b{:0{}b}</code>: package {}, die {}, module {}, core {}, thread {}. "
          "Software learns the field widths from CPUID leaf 0xB (or 0x1F): EAX[4:0] of each subleaf is how many bits "
          "to drop to reach the next level.</p>\n",
          cpu, t.apic_id(cpu), t.apic_id(cpu), width, c.package, c.die, c.module, c.core, c.thread);
}

std::string cpu_cell(const CpuidModel& m, unsigned cpu, unsigned width) {
  const Topology& t = m.topology();
  const std::string type = cpu_core_type(m, cpu);
  const CpuCoords c = t.coords_of(cpu);
  return fmt::format("<span class=\"cpu\" data-cpu=\"{0}\" title=\"CPU {0}: APIC ID {1:#x} = 0b{1:0{2}b}: package {3}, "
                     "die {4}, module {5}, core {6}, thread {7}\">CPU {0}<br>APIC {1:#x}{8}</span>",
                     cpu, t.apic_id(cpu), width, c.package, c.die, c.module, c.core, c.thread,
                     type.empty() ? "" : fmt::format("<span class=\"ctype\">{}</span>", html_escape(type)));
}

void append_tree(fmt::memory_buffer& out, const CpuidModel& m, std::string_view prefix) {
  const Topology& t = m.topology();
  const auto& n = t.counts();
  const unsigned shown = std::min(t.cpus(), kTreeCpuLimit);
  const unsigned width = apic_id_width(t);
  appendf(out, "<h3>The tree</h3>\n<div class=\"tree\" id=\"{}tree\">\n", prefix);
  for (unsigned cpu = 0; cpu < shown; ++cpu) {
    const CpuCoords c = t.coords_of(cpu);
    const bool core0 = c.thread == 0, module0 = core0 && c.core == 0, die0 = module0 && c.module == 0,
               package0 = die0 && c.die == 0;
    if (package0) appendf(out, "<div class=\"node package\"><div class=\"label\">package {}</div>", c.package);
    if (die0 && n.dies > 1) appendf(out, "<div class=\"node die\"><div class=\"label\">die {}</div>", c.die);
    if (module0 && n.modules > 1) appendf(out, "<div class=\"node module\"><div class=\"label\">module {}</div>", c.module);
    if (core0) appendf(out, "<div class=\"node core\"><div class=\"label\">core {}</div>", c.core);
    appendf(out, "{}", cpu_cell(m, cpu, width));
    // Close what ends with this CPU: the core, and the module, die and
    // package when this was their last thread (or the last CPU present).
    const bool last = cpu + 1 == shown;
    const CpuCoords next = last ? CpuCoords{} : t.coords_of(cpu + 1);
    const bool end_core = last || next.thread == 0, end_module = last || (end_core && next.core == 0),
               end_die = last || (end_module && next.module == 0), end_package = last || (end_die && next.die == 0);
    if (end_core) appendf(out, "</div>");
    if (end_module && n.modules > 1) appendf(out, "</div>");
    if (end_die && n.dies > 1) appendf(out, "</div>");
    if (end_package) appendf(out, "</div>\n");
  }
  appendf(out, "</div>\n");
  if (shown < t.cpus())
    appendf(out, "<p class=\"note\">The tree stops after {} of the {} CPUs.</p>\n", shown, t.cpus());
}

// The -numa nodes (report/numa_report.h), with the number Linux gives each.
void append_numa(fmt::memory_buffer& out, const NumaConfig& numa, const Topology& topology, std::string_view prefix) {
  appendf(out, "<p id=\"{}numa\">{}</p>\n<table>\n<tr><th>node</th><th>CPUs</th><th>memory</th><th>distances</th>"
               "<th>Linux's node</th></tr>\n",
          prefix, html_escape(numa_heading(numa)));
  for (const NumaRow& r : numa_rows(numa, topology))
    appendf(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", r.node, html_escape(r.cpus),
            html_escape(r.memory), html_escape(r.distances),
            r.linux_node ? fmt::format("{}", *r.linux_node) : std::string("none (not in the SRAT)"));
  appendf(out, "</table>\n");
}

}  // namespace

unsigned apic_id_width(const Topology& t) {
  return std::max(1u, t.package_offset() + bit_width_for_count(t.counts().sockets));
}

HtmlSection html_topology_section(const CpuidModel& model, std::string_view prefix, const NumaConfig* numa) {
  fmt::memory_buffer out;
  append_summary(out, model, prefix);
  append_apic_layout(out, model, prefix);
  append_tree(out, model, prefix);
  if (numa && numa->enabled()) append_numa(out, *numa, model.topology(), prefix);
  return {fmt::format("{}topology", prefix), "Topology and APIC IDs", fmt::to_string(out)};
}

}  // namespace topolab
