// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/check_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text_buffer.h"

namespace topolab {

std::string format_check_text(const LintInput& in, const std::vector<Finding>& findings) {
  fmt::memory_buffer out;
  appendf(out, "topolab check: {} ({} CPU{})\n\n", in.raw->source, in.raw->cpus.size(), in.raw->cpus.size() == 1 ? "" : "s");
  for (const auto& v : in.views) {
    appendf(out, "  {:<10} {}\n", consumer_name(v.consumer), summarize_topology(v));
    appendf(out, "  {:<10} {}\n", "", summarize_caches(v));
    for (const auto& m : v.messages) appendf(out, "  {:<10} prints: {}\n", "", m);
  }
  if (in.numa && in.numa->enabled()) appendf(out, "  {:<10} {}\n", "numa", summarize_numa(*in.numa, in.raw->cpus.size()));
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    appendf(out, "\nfinding {} [{}]: {}\n", i + 1, f.id, f.title);
    appendf(out, "  leaves:   {}\n", fmt::join(f.leaves, ", "));
    if (!f.detail.empty()) appendf(out, "  detail:   {}\n", f.detail);
    for (const auto& [who, what] : f.inferences) appendf(out, "  {:<9} {}\n", who + ":", what);
    appendf(out, "  symptom:  {}\n", f.symptom);
    appendf(out, "  seen in:  {}\n", f.seen_in);
  }
  appendf(out, "\n{}\n", findings.empty() ? "no findings" : fmt::format("{} finding{}", findings.size(), findings.size() == 1 ? "" : "s"));
  return fmt::to_string(out);
}

std::string format_check_json(const LintInput& in, const std::vector<Finding>& findings) {
  using nlohmann::ordered_json;
  ordered_json doc;
  doc["source"] = in.raw->source;
  doc["cpus"] = in.raw->cpus.size();
  ordered_json consumers = ordered_json::array();
  for (const auto& v : in.views) {
    ordered_json c;
    c["consumer"] = consumer_name(v.consumer);
    c["topology_source"] = v.topology_source;
    for (Level l : kLevels) c[std::string(level_name(l)) + "s"] = v.groups(l).size();
    c["threads_per_core"] = v.threads_per_core();
    c["caches"] = summarize_caches(v);
    c["messages"] = v.messages;
    consumers.push_back(std::move(c));
  }
  doc["consumers"] = std::move(consumers);
  if (in.numa && in.numa->enabled()) doc["numa"] = summarize_numa(*in.numa, in.raw->cpus.size());
  ordered_json list = ordered_json::array();
  for (const auto& f : findings) {
    ordered_json j;
    j["id"] = f.id;
    j["title"] = f.title;
    j["leaves"] = f.leaves;
    j["detail"] = f.detail;
    ordered_json inf = ordered_json::array();
    for (const auto& [who, what] : f.inferences) inf.push_back({{"consumer", who}, {"infers", what}});
    j["inferences"] = std::move(inf);
    j["symptom"] = f.symptom;
    j["seen_in"] = f.seen_in;
    list.push_back(std::move(j));
  }
  doc["findings"] = std::move(list);
  return doc.dump(2) + "\n";
}

}  // namespace topolab
