// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/html_page.h"

#include "base/text_buffer.h"
#include "report/cpuid_fields.h"

namespace topolab {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_document(std::string_view title, std::string_view command, const std::vector<HtmlSection>& sections) {
  fmt::memory_buffer out;
  appendf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
  appendf(out, "<meta name=\"generator\" content=\"topolab\">\n<title>{}</title>\n", html_escape(title));
  appendf(out, "<style>{}</style>\n</head>\n<body>\n", html_page_css());
  appendf(out, "<header id=\"page-header\"><h1>{}</h1><code id=\"command\">{}</code>\n<nav id=\"contents\">",
          html_escape(title), html_escape(command));
  for (const HtmlSection& s : sections) appendf(out, "<a href=\"#{}\">{}</a>", s.id, html_escape(s.heading));
  appendf(out, "</nav></header>\n");
  for (const HtmlSection& s : sections)
    appendf(out, "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n", s.id, html_escape(s.heading), s.body);
  appendf(out, "<script>{}</script>\n</body>\n</html>\n", html_page_js());
  return fmt::to_string(out);
}

std::string html_field_table(uint32_t leaf, char reg, uint32_t value) {
  fmt::memory_buffer out;
  appendf(out, "<table><tr><th class=\"l\">bits</th><th class=\"l\">field (SDM)</th><th class=\"l\">value</th>"
               "<th class=\"l\">in plain words</th></tr>");
  const auto fields = decode_register(leaf, reg, value);
  for (const DecodedField& f : fields)
    appendf(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", field_bits(reg, f.hi, f.lo),
            html_escape(f.name), html_escape(f.reading), html_escape(f.plain));
  if (fields.empty())
    appendf(out, "<tr><td colspan=\"4\">{}</td></tr>",
            value == 0 ? "0: nothing set" : "no field of this register is named here; the value is raw");
  appendf(out, "</table>");
  return fmt::to_string(out);
}

std::string html_register_cell(uint32_t leaf, uint32_t subleaf, char reg, uint32_t value, std::string_view whose) {
  return fmt::format(
      "<td class=\"reg\" tabindex=\"0\" data-what=\"{}CPUID leaf {:#x}, subleaf {}: E{}X = {:#010x}\">{:08x}"
      "<div class=\"fields\">{}</div></td>",
      whose, leaf, subleaf, char(reg - 'a' + 'A'), value, value, html_field_table(leaf, reg, value));
}

std::string cpu_core_type(const CpuidModel& model, unsigned cpu) {
  // A leaf past the maximum answers with the highest basic leaf's data.
  if (model.max_basic_leaf() < 0x1A) return "";
  return core_type_name(model.query(cpu, 0x1A, 0).eax);
}

}  // namespace topolab
