// SPDX-License-Identifier: GPL-2.0-or-later
// The raw-leaves section of the HTML page: every leaf and subleaf `cpuid -r`
// lists, each register decoded into its SDM fields when pointed at. Leaves
// that differ between CPUs (the APIC-ID fields) have one row per CPU, and a
// selector picks the CPU; the rest are shown once.
#include <algorithm>
#include <optional>
#include <utility>

#include "base/text_buffer.h"
#include "report/cpuid_fields.h"
#include "report/html_page.h"

namespace topolab {

namespace {

constexpr unsigned kLeafCpuLimit = 64;  // CPUs the selector offers

// One leaf's row; `cpu` names the CPU when the row is one of a per-CPU set.
std::string leaf_row(const CpuidModel::Entry& e, std::optional<unsigned> cpu) {
  const std::string whose = cpu ? fmt::format("CPU {}: ", *cpu) : "";
  fmt::memory_buffer out;
  if (cpu) appendf(out, "<tr data-cpu=\"{}\"{}>", *cpu, *cpu ? " hidden" : "");
  else appendf(out, "<tr>");
  appendf(out, "<td class=\"l\">{:#010x}</td><td>{:#04x}</td>", e.leaf, e.subleaf);
  for (const auto& [reg, value] : {std::pair{'a', e.regs.eax}, {'b', e.regs.ebx}, {'c', e.regs.ecx}, {'d', e.regs.edx}})
    appendf(out, "{}", html_register_cell(e.leaf, e.subleaf, reg, value, whose));
  appendf(out, "<td class=\"l\">{}{}</td></tr>\n", html_escape(cpuid_leaf_name(e.leaf)),
          cpu ? fmt::format(" <i>(CPU {})</i>", *cpu) : "");
  return fmt::to_string(out);
}

// The register the panel shows before anything is pointed at: the L2's
// sharing field when there is one (the page's question), else leaf 1 EBX.
struct PanelStart {
  uint32_t leaf, subleaf;
  uint32_t value;
};

PanelStart panel_start(const CpuidModel& m) {
  const bool amd = m.cpu().vendor() == Vendor::Amd;
  const uint32_t leaf = amd ? 0x8000001D : 0x4;
  const bool has_leaf = amd ? m.has_topoext() && m.max_extended_leaf() >= leaf : m.max_basic_leaf() >= leaf;
  for (uint32_t sub = 0; has_leaf && sub < 16; ++sub) {
    const CpuidRegs r = m.query(0, leaf, sub);
    if ((r.eax & 0x1f) == 0) break;
    if (((r.eax >> 5) & 7) == 2) return {leaf, sub, r.eax};
  }
  return {0x1, 0, m.query(0, 1, 0).ebx};
}

void append_panel(fmt::memory_buffer& out, const CpuidModel& m, std::string_view prefix) {
  const PanelStart p = panel_start(m);
  const char reg = p.leaf == 0x1 ? 'b' : 'a';
  appendf(out, "<div class=\"field-panel\" id=\"{}field-panel\"><b class=\"what\">CPUID leaf {:#x}, subleaf {}: E{}X = {:#010x}</b>"
               "<div class=\"fields\">{}</div></div>\n",
          prefix, p.leaf, p.subleaf, char(reg - 'a' + 'A'), p.value, html_field_table(p.leaf, reg, p.value));
}

}  // namespace

HtmlSection html_leaves_section(const CpuidModel& model, std::string_view prefix) {
  const unsigned cpus = std::min(model.topology().cpus(), kLeafCpuLimit);
  std::vector<std::vector<CpuidModel::Entry>> per_cpu;
  for (unsigned cpu = 0; cpu < cpus; ++cpu) per_cpu.push_back(model.enumerate(cpu));
  const auto& first = per_cpu.front();
  auto differs = [&](size_t i) {
    for (const auto& entries : per_cpu)
      if (i >= entries.size() || !(entries[i].regs == first[i].regs)) return true;
    return false;
  };

  fmt::memory_buffer out;
  appendf(out, "<p class=\"note\">What CPUID returns for each leaf (EAX on input) and subleaf (ECX). Point at a register, "
               "or tab to it, to see its bit fields named as the Intel SDM (or, for AMD's leaves, the APM) names them; "
               "the panel keeps the last one. Leaves that differ between CPUs carry the APIC ID.</p>\n");
  append_panel(out, model, prefix);
  const std::string table_id = fmt::format("{}leaves-table", prefix);
  if (cpus > 1) {
    appendf(out, "<p><label>leaves of CPU <select class=\"leaf-cpu\" id=\"{}leaf-cpu\" data-table=\"{}\">", prefix, table_id);
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
      appendf(out, "<option value=\"{0}\"{1}>{0} (APIC ID {2:#x})</option>", cpu, cpu == 0 ? " selected" : "",
              model.topology().apic_id(cpu));
    appendf(out, "</select></label>{}</p>\n",
            cpus < model.topology().cpus() ? fmt::format(" (the first {} CPUs; topolab cpuid --format raw lists all)", cpus)
                                           : "");
  }
  appendf(out, "<div class=\"scroll\"><table class=\"leaves\" id=\"{}\">\n<tr><th class=\"l\">leaf</th><th>subleaf</th>"
               "<th>EAX</th><th>EBX</th><th>ECX</th><th>EDX</th><th class=\"l\">what the leaf is</th></tr>\n",
          table_id);
  for (size_t i = 0; i < first.size(); ++i) {
    if (!differs(i)) {
      appendf(out, "{}", leaf_row(first[i], std::nullopt));
      continue;
    }
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
      if (i < per_cpu[cpu].size())
        appendf(out, "{}", leaf_row(per_cpu[cpu][i], cpu));
  }
  appendf(out, "</table></div>\n");
  return {fmt::format("{}leaves", prefix), "The raw CPUID leaves", fmt::to_string(out)};
}

}  // namespace topolab
