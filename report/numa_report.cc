// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/numa_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "report/cpu_list.h"

namespace topolab {

namespace {

std::string memory_text(uint64_t bytes) {
  if (bytes == 0) return "none";
  if (bytes % (uint64_t{1} << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes % (uint64_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

std::vector<NumaRow> numa_rows(const NumaConfig& numa, const Topology& topology) {
  // Linux numbers the nodes in the SRAT's order.
  const std::vector<unsigned> order = srat_node_order(numa);
  std::vector<std::optional<unsigned>> linux(numa.node_count());
  for (unsigned i = 0; i < order.size(); ++i) linux[order[i]] = i;
  std::vector<NumaRow> rows;
  for (unsigned n = 0; n < numa.node_count(); ++n) {
    NumaRow row;
    row.node = n;
    row.cpus = numa.nodes()[n].cpus.empty() ? "none" : format_cpu_list(numa.nodes()[n].cpus);
    row.memory = memory_text(numa.nodes()[n].memory_bytes);
    std::vector<unsigned> distances;
    for (unsigned to = 0; to < numa.node_count(); ++to) distances.push_back(numa.distance(n, to));
    row.distances = fmt::format("{}", fmt::join(distances, " "));
    row.linux_node = linux[n];
    row.renumbered = linux[n] != n;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string numa_heading(const NumaConfig& numa) {
  return fmt::format("NUMA: {} node{} (SRAT), distances {}", numa.node_count(), numa.node_count() == 1 ? "" : "s",
                     numa.has_distance_table() ? "from the SLIT" : "10 local and 20 remote (no SLIT)");
}

std::string format_numa_table(const NumaConfig& numa, const Topology& topology) {
  if (!numa.enabled()) return "";
  const std::vector<NumaRow> rows = numa_rows(numa, topology);
  size_t cpus_width = 4, distances_width = 9;
  bool renumbered = false;
  for (const NumaRow& r : rows) {
    cpus_width = std::max(cpus_width, r.cpus.size());
    distances_width = std::max(distances_width, r.distances.size());
    renumbered |= r.renumbered;
  }
  std::string out = numa_heading(numa) + "\n";
  const auto row = [&](std::string_view node, std::string_view cpus, std::string_view memory,
                       std::string_view distances, std::string_view linux) {
    std::string line = fmt::format("{:<4}  {:<{}}  {:<9}  {:<{}}", node, cpus, cpus_width, memory, distances,
                                   distances_width);
    if (renumbered) line += fmt::format("  {}", linux);
    while (line.ends_with(' ')) line.pop_back();
    return line + "\n";
  };
  out += row("node", "CPUs", "memory", "distances", "Linux's node");
  for (const NumaRow& r : rows)
    out += row(fmt::format("{}", r.node), r.cpus, r.memory, r.distances,
               r.linux_node ? fmt::format("node{}", *r.linux_node) : "none");
  if (const auto& warnings = numa.warnings(); !warnings.empty())
    for (const std::string& w : warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace topolab
