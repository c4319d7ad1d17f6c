// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/svg_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/cpuid_report.h"
#include "base/text_buffer.h"

namespace topolab {

namespace {

constexpr unsigned kMaxHeatmapCells = 128;  // per side; more vCPUs are binned
constexpr unsigned kHeatmapSide = 640;      // pixels of the grid itself
constexpr unsigned kMargin = 60;

// White for zero, then light yellow to dark red on a log scale.
std::string heat_colour(uint64_t count, uint64_t max) {
  if (count == 0) return "#ffffff";
  double t = max <= 1 ? 1.0 : std::log(double(count)) / std::log(double(max));
  int r = 255, g = static_cast<int>(235 - 200 * t), b = static_cast<int>(160 - 160 * t);
  if (t > 0.6) r = static_cast<int>(255 - 120 * (t - 0.6) / 0.4);
  return fmt::format("#{:02x}{:02x}{:02x}", r, std::max(g, 0), std::max(b, 0));
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string ipi_heatmap_svg(const Stats& stats, const Topology& topology) {
  unsigned n = stats.vcpu_count();
  unsigned bin = (n + kMaxHeatmapCells - 1) / kMaxHeatmapCells;  // vCPUs per cell
  unsigned cells = (n + bin - 1) / bin;
  double cell = double(kHeatmapSide) / cells;
  std::map<std::pair<unsigned, unsigned>, uint64_t> binned;
  uint64_t max = 0, total = 0;
  for (const auto& [route, count] : stats.ipi_matrix()) {
    uint64_t& c = binned[{route.first / bin, route.second / bin}];
    c += count;
    max = std::max(max, c);
    total += count;
  }
  unsigned width = kHeatmapSide + 2 * kMargin, height = kHeatmapSide + 2 * kMargin + 30;
  fmt::memory_buffer out;
  appendf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n",
          width, height);
  appendf(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  appendf(out, "<text x=\"{}\" y=\"24\" font-size=\"16\">IPIs sent (rows) to received (columns): {} in all, {}</text>\n",
          kMargin, total, escape(topology.describe()));
  appendf(out, "<g transform=\"translate({},{})\">\n", kMargin, kMargin);
  appendf(out, "<rect width=\"{}\" height=\"{}\" fill=\"white\" stroke=\"#888\"/>\n", kHeatmapSide, kHeatmapSide);
  for (const auto& [at, count] : binned)
    appendf(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"><title>cpu {}{} -> cpu {}{}: {}</title></rect>\n",
            at.second * cell, at.first * cell, cell, cell, heat_colour(count, max), at.first * bin,
            bin > 1 ? fmt::format("-{}", std::min(n, (at.first + 1) * bin) - 1) : "", at.second * bin,
            bin > 1 ? fmt::format("-{}", std::min(n, (at.second + 1) * bin) - 1) : "", count);
  // Axis labels every few cells, so 64 vCPUs stay legible.
  unsigned step = std::max(1u, cells / 16);
  for (unsigned i = 0; i < cells; i += step) {
    appendf(out, "<text x=\"{:.1f}\" y=\"-6\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n", (i + 0.5) * cell,
            i * bin);
    appendf(out, "<text x=\"-6\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            (i + 0.5) * cell, i * bin);
  }
  appendf(out, "<text x=\"{}\" y=\"-22\" font-size=\"11\" text-anchor=\"middle\">receiver</text>\n", kHeatmapSide / 2);
  appendf(out, "<text x=\"-40\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 -40 {})\">sender</text>\n",
          kHeatmapSide / 2, kHeatmapSide / 2);
  appendf(out, "</g>\n");
  appendf(out, "<text x=\"{}\" y=\"{}\" font-size=\"12\">colour: count on a log scale, white = none, darkest = {}{}</text>\n",
          kMargin, kMargin + kHeatmapSide + 30, max, bin > 1 ? fmt::format("; {} vCPUs per cell", bin) : "");
  appendf(out, "</svg>\n");
  return fmt::to_string(out);
}

std::string topology_svg(const CpuidModel& model) {
  const Topology& t = model.topology();
  auto caches = decode_caches_as_linux(model);
  LlcView llc = linux_llc(model, caches);
  std::vector<unsigned> llc_of(t.cpus(), 0);
  for (unsigned g = 0; g < llc.groups.size(); ++g)
    for (unsigned cpu : llc.groups[g]) llc_of[cpu] = g;
  static const char* kBands[] = {"#cfe8ff", "#ffe2c6", "#d9f5d0", "#f3d4f5", "#fff5b8", "#d4f0f0", "#f5d0d0", "#e0e0ff"};

  // Layout: one row per package; inside it dies side by side, cores in a
  // grid of up to 8 per row, threads as cells inside a core.
  const auto& n = t.counts();
  const unsigned thread_w = 46, thread_h = 30, pad = 6;
  const unsigned core_w = n.threads * (thread_w + 2) + 2 * pad;
  const unsigned core_h = thread_h + 2 * pad + 14;
  const unsigned cores_per_die = n.cores * n.modules;
  const unsigned cols = std::min(cores_per_die, 8u), rows = (cores_per_die + cols - 1) / cols;
  const unsigned die_w = cols * (core_w + pad) + pad, die_h = rows * (core_h + pad) + pad + 16;
  const unsigned pkg_w = n.dies * (die_w + pad) + pad, pkg_h = die_h + 2 * pad + 18;
  const unsigned width = pkg_w + 40, height = 70 + std::min(n.sockets, 16u) * (pkg_h + 10) + 40;

  fmt::memory_buffer out;
  appendf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n",
          width, height);
  appendf(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  appendf(out, "<text x=\"20\" y=\"24\" font-size=\"16\">{} ({}, l3-cache={})</text>\n", escape(t.describe()),
          escape(model.cpu().model.name), model.cpu().l3_cache ? "on" : "off");
  appendf(out, "<text x=\"20\" y=\"44\" font-size=\"12\">cell: CPU index / APIC ID; colour: Linux's LLC group ({}), {} group{}</text>\n",
          escape(llc.rule), llc.groups.size(), llc.groups.size() == 1 ? "" : "s");
  for (unsigned cpu = 0; cpu < t.cpus(); ++cpu) {
    CpuCoords c = t.coords_of(cpu);
    if (c.package >= 16) {
      if (c.thread == 0 && c.core == 0 && c.module == 0 && c.die == 0 && c.package == 16)
        appendf(out, "<text x=\"20\" y=\"{}\" font-size=\"12\">... {} more packages</text>\n", height - 16,
                n.sockets - 16);
      continue;
    }
    unsigned px = 20, py = 60 + c.package * (pkg_h + 10);
    unsigned dx = px + pad + c.die * (die_w + pad), dy = py + 18 + pad;
    unsigned core_index = c.module * n.cores + c.core;
    unsigned cx = dx + pad + (core_index % cols) * (core_w + pad), cy = dy + 16 + pad + (core_index / cols) * (core_h + pad);
    if (c.thread == 0 && core_index == 0 && c.die == 0)
      appendf(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\" rx=\"6\"/>"
                   "<text x=\"{}\" y=\"{}\" font-size=\"13\">package {}</text>\n",
              px, py, pkg_w, pkg_h, px + 8, py + 14, c.package);
    if (c.thread == 0 && core_index == 0 && n.dies > 1)
      appendf(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#777\" stroke-dasharray=\"4 2\" rx=\"4\"/>"
                   "<text x=\"{}\" y=\"{}\" font-size=\"11\">die {}</text>\n",
              dx, dy, die_w, die_h, dx + 6, dy + 12, c.die);
    if (c.thread == 0)
      appendf(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#999\" rx=\"3\"/>"
                   "<text x=\"{}\" y=\"{}\" font-size=\"10\">core {}</text>\n",
              cx, cy, core_w, core_h, cx + 4, cy + 11, core_index);
    unsigned tx = cx + pad + c.thread * (thread_w + 2), ty = cy + 14 + pad / 2;
    appendf(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#555\"><title>cpu {} APIC {:#x} LLC group {}</title></rect>"
                 "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}/{:#x}</text>\n",
            tx, ty, thread_w, thread_h, kBands[llc_of[cpu] % 8], cpu, t.apic_id(cpu), llc_of[cpu],
            tx + thread_w / 2, ty + thread_h / 2 + 4, cpu, t.apic_id(cpu));
  }
  appendf(out, "</svg>\n");
  return fmt::to_string(out);
}

std::string bar_chart_svg(const BarChart& chart) {
  static const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"};
  constexpr unsigned kBarWidth = 34, kGroupGap = 30, kPlotHeight = 300, kLeft = 90, kTop = 60, kBottom = 90;
  const size_t nseries = std::max<size_t>(1, chart.series.size());
  const unsigned group_width = static_cast<unsigned>(nseries) * kBarWidth + kGroupGap;
  const unsigned plot_width = std::max<unsigned>(300, static_cast<unsigned>(chart.groups.size()) * group_width);
  const unsigned width = kLeft + plot_width + 40, height = kTop + kPlotHeight + kBottom;
  double max = 0;
  for (const auto& g : chart.groups)
    for (double v : g.values) max = std::max(max, v);
  // A round top for the axis: 1, 2 or 5 times a power of ten.
  double top = 1;
  if (max > 0) {
    double p = std::pow(10.0, std::floor(std::log10(max)));
    top = max <= p ? p : max <= 2 * p ? 2 * p : max <= 5 * p ? 5 * p : 10 * p;
  }
  auto y_of = [&](double v) { return kTop + kPlotHeight - kPlotHeight * (v / top); };
  auto number = [](double v) {
    return v >= 100 || v == std::floor(v) ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
  };

  fmt::memory_buffer out;
  appendf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n",
          width, height);
  appendf(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  appendf(out, "<text x=\"{}\" y=\"24\" font-size=\"15\">{}</text>\n", kLeft, escape(chart.title));
  for (int tick = 0; tick <= 4; ++tick) {
    double v = top * tick / 4;
    appendf(out, "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, kLeft + plot_width,
            y_of(v), y_of(v));
    appendf(out, "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
            kLeft - 6, y_of(v), number(v));
  }
  appendf(out, "<text x=\"20\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 20 {})\">{}</text>\n",
          kTop + kPlotHeight / 2, kTop + kPlotHeight / 2, escape(chart.value_label));
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    const auto& group = chart.groups[g];
    const double x0 = kLeft + kGroupGap / 2.0 + g * group_width;
    for (size_t s = 0; s < group.values.size(); ++s) {
      const double v = group.values[s], x = x0 + s * kBarWidth, y = y_of(v);
      appendf(out, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
              x, y, kBarWidth - 4, kTop + kPlotHeight - y, kColours[s % std::size(kColours)],
              escape(s < chart.series.size() ? chart.series[s] : ""), number(v));
      appendf(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" text-anchor=\"middle\">{}</text>\n",
              x + (kBarWidth - 4) / 2.0, y - 3, number(v));
      if (s < group.notes.size() && !group.notes[s].empty())
        appendf(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" text-anchor=\"middle\">{}</text>\n",
                x + (kBarWidth - 4) / 2.0, y - 13, escape(group.notes[s]));
    }
    appendf(out, "<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" transform=\"rotate(-30 {:.1f} {})\">{}</text>\n",
            x0 + group.values.size() * kBarWidth / 2.0, kTop + kPlotHeight + 16,
            x0 + group.values.size() * kBarWidth / 2.0, kTop + kPlotHeight + 16, escape(group.label));
  }
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const unsigned x = kLeft + 10 + static_cast<unsigned>(s) * 150;
    appendf(out, "<rect x=\"{}\" y=\"36\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", x, kColours[s % std::size(kColours)]);
    appendf(out, "<text x=\"{}\" y=\"46\" font-size=\"11\">{}</text>\n", x + 16, escape(chart.series[s]));
  }
  appendf(out, "</svg>\n");
  return fmt::to_string(out);
}

}  // namespace topolab
