// SPDX-License-Identifier: GPL-2.0-or-later
// Pictures of a run for a person: the source -> destination IPI heatmap and
// the topology (packages, dies, cores, threads, LLC groups) as SVG.
#pragma once

#include <string>
#include <vector>

#include "model/cpuid.h"
#include "emu/stats.h"

namespace topolab {

// Rows are senders, columns receivers, colour the count on a log scale.
// Past 128 vCPUs neighbours are binned so the picture stays readable.
std::string ipi_heatmap_svg(const Stats& stats, const Topology& topology);

// One box per package, die and core; one cell per thread with its CPU
// index and APIC ID; threads that share Linux's LLC share a colour band.
std::string topology_svg(const CpuidModel& model);

// A grouped bar chart: one group per label, one bar per series in each,
// each bar with its value (and an optional note) written on it.
struct BarChart {
  std::string title;
  std::string value_label;          // the y axis
  std::vector<std::string> series;  // the legend, in bar order
  struct Group {
    std::string label;
    std::vector<double> values;      // one per series
    std::vector<std::string> notes;  // empty, or one per series
  };
  std::vector<Group> groups;
};
std::string bar_chart_svg(const BarChart& chart);

}  // namespace topolab
