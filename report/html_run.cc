// SPDX-License-Identifier: GPL-2.0-or-later
// The run sections of the HTML page: the IPI heatmap (report/svg_report.h,
// inline), why halted vCPUs woke (Stats), and what each vCPU did over
// virtual time (ActivityLog), drawn as one lane per vCPU.
#include <algorithm>
#include <array>

#include "base/text_buffer.h"
#include "report/html_page.h"
#include "report/svg_report.h"

namespace topolab {

namespace {

constexpr unsigned kLanes = 64;           // vCPUs drawn and tabled
constexpr unsigned kPlotWidth = 960;      // pixels of virtual time
constexpr unsigned kLaneHeight = 14, kLaneGap = 3, kLaneLeft = 70;
constexpr size_t kActivities = 5;         // VcpuActivity's values

std::string time_words(double ns, uint64_t scale_ns) {
  if (scale_ns >= 10'000'000) return fmt::format("{:.3f} ms", ns / 1e6);
  if (scale_ns >= 10'000) return fmt::format("{:.1f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

using PixelTime = std::array<uint64_t, kActivities>;

// How long the vCPU spent in each activity within each pixel column.
std::vector<PixelTime> pixel_times(const std::vector<ActivitySpan>& spans, uint64_t end_ns) {
  std::vector<PixelTime> px(kPlotWidth, PixelTime{});
  auto pixel_begin = [&](unsigned p) { return uint64_t(double(end_ns) * p / kPlotWidth); };
  for (const ActivitySpan& s : spans) {
    unsigned p = static_cast<unsigned>(std::min<uint64_t>(kPlotWidth - 1, s.begin_ns * kPlotWidth / end_ns));
    for (; p < kPlotWidth && pixel_begin(p) < s.end_ns; ++p) {
      const uint64_t b = std::max(s.begin_ns, pixel_begin(p)), e = std::min(s.end_ns, pixel_begin(p + 1));
      if (e > b) px[p][static_cast<size_t>(s.activity)] += e - b;
    }
  }
  return px;
}

// One lane: each pixel takes the activity the vCPU spent most of it in, and
// neighbouring pixels of one activity merge into one box.
void append_lane(fmt::memory_buffer& out, unsigned cpu, const std::vector<ActivitySpan>& spans, uint64_t end_ns,
                 unsigned y) {
  const std::vector<PixelTime> px = pixel_times(spans, end_ns);
  auto dominant = [&](unsigned p) {
    const auto it = std::max_element(px[p].begin(), px[p].end());
    return *it == 0 ? -1 : static_cast<int>(it - px[p].begin());
  };
  for (unsigned p = 0; p < kPlotWidth;) {
    const int act = dominant(p);
    unsigned q = p + 1;
    while (q < kPlotWidth && dominant(q) == act) ++q;
    if (act >= 0) {
      const std::string_view name = to_string(static_cast<VcpuActivity>(act));
      appendf(out, "<rect class=\"span act-{0}\" x=\"{1}\" y=\"{2}\" width=\"{3}\" height=\"{4}\"><title>CPU {5}: {0} from {6} to {7}</title></rect>\n",
              name, kLaneLeft + p, y, q - p, kLaneHeight, cpu, time_words(double(end_ns) * p / kPlotWidth, end_ns),
              time_words(double(end_ns) * q / kPlotWidth, end_ns));
    }
    p = q;
  }
}

std::array<uint64_t, kActivities> totals_of(const std::vector<ActivitySpan>& spans) {
  std::array<uint64_t, kActivities> t{};
  for (const ActivitySpan& s : spans) t[static_cast<size_t>(s.activity)] += s.end_ns - s.begin_ns;
  return t;
}

void append_timeline_table(fmt::memory_buffer& out, const ActivityLog& log, unsigned lanes, uint64_t end_ns) {
  appendf(out, "<table id=\"timeline-table\"><tr><th>CPU</th>");
  for (size_t a = 0; a < kActivities; ++a) appendf(out, "<th>% {}</th>", to_string(static_cast<VcpuActivity>(a)));
  appendf(out, "<th>spans</th></tr>\n");
  for (unsigned cpu = 0; cpu < lanes; ++cpu) {
    const auto t = totals_of(log.spans(cpu));
    appendf(out, "<tr><td>{}</td>", cpu);
    for (uint64_t ns : t) appendf(out, "<td>{:.1f}</td>", 100.0 * double(ns) / double(end_ns));
    appendf(out, "<td>{}</td></tr>\n", log.spans(cpu).size());
  }
  appendf(out, "</table>\n");
}

}  // namespace

HtmlSection html_timeline_section(const ActivityLog& log) {
  fmt::memory_buffer out;
  const uint64_t end_ns = log.end_ns();
  const unsigned lanes = std::min(log.vcpus(), kLanes);
  appendf(out, "<p class=\"note\">What each vCPU did over virtual time: <b>running</b> guest code, <b>spinning</b> "
               "(PAUSE in a loop, waiting for another CPU), <b>halted</b> in HLT until an interrupt, parked in "
               "<b>MWAIT</b> until a store to the monitored line or an interrupt, or an application processor "
               "<b>waiting for SIPI</b> before the boot CPU starts it. Each pixel shows what the vCPU did most "
               "in it; point at a box for its times, and the table has the exact shares.</p>\n");
  appendf(out, "<div class=\"legend\">");
  for (size_t a = 0; a < kActivities; ++a)
    appendf(out, "<span><i class=\"act-{0}\"></i>{0}</span>", to_string(static_cast<VcpuActivity>(a)));
  appendf(out, "</div>\n");
  if (end_ns == 0) {
    appendf(out, "<p class=\"note\" id=\"timeline\">No activity was recorded.</p>\n");
    return {"run-timeline", "Timeline per vCPU", fmt::to_string(out)};
  }
  const unsigned height = lanes * (kLaneHeight + kLaneGap) + 30;
  appendf(out, "<div class=\"scroll\"><svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
               "font-family=\"sans-serif\">\n",
          kLaneLeft + kPlotWidth + 40, height);
  for (unsigned cpu = 0; cpu < lanes; ++cpu) {
    const unsigned y = cpu * (kLaneHeight + kLaneGap);
    appendf(out, "<text x=\"4\" y=\"{}\" font-size=\"11\">CPU {}</text>\n", y + 11, cpu);
    append_lane(out, cpu, log.spans(cpu), end_ns, y);
  }
  const unsigned axis_y = lanes * (kLaneHeight + kLaneGap) + 4;
  appendf(out, "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#555\"/>\n", kLaneLeft, kLaneLeft + kPlotWidth,
          axis_y);
  for (unsigned tick = 0; tick <= 4; ++tick)
    appendf(out, "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
            kLaneLeft + kPlotWidth * tick / 4, axis_y + 14, time_words(double(end_ns) * tick / 4, end_ns));
  appendf(out, "</svg></div>\n");
  if (lanes < log.vcpus()) appendf(out, "<p class=\"note\">The first {} of {} vCPUs.</p>\n", lanes, log.vcpus());
  append_timeline_table(out, log, lanes, end_ns);
  return {"run-timeline", "Timeline per vCPU", fmt::to_string(out)};
}

HtmlSection html_heatmap_section(const Stats& stats, const Topology& topology) {
  fmt::memory_buffer out;
  appendf(out, "<p class=\"note\">Each row is a sending vCPU and each column a receiving one; the darker the cell, the "
               "more IPIs took that route (a log scale; point at a cell for its count). A reschedule IPI is how one "
               "CPU's scheduler wakes a task on another that does not share its last-level cache.</p>\n");
  appendf(out, "<div class=\"scroll\" id=\"heatmap\">{}</div>\n", ipi_heatmap_svg(stats, topology));
  return {"run-heatmap", "IPIs: who sent to whom", fmt::to_string(out)};
}

HtmlSection html_wakes_section(const Stats& stats) {
  fmt::memory_buffer out;
  appendf(out, "<p class=\"note\">Why a halted vCPU (in HLT or MWAIT) resumed: an <b>interrupt</b> (an IPI or a device), "
               "its APIC <b>timer</b>, an <b>NMI</b>, <b>INIT</b> or <b>SIPI</b> (bringing a CPU up), or an "
               "<b>mwait-store</b> (another CPU wrote the line it was watching). IPIs that found their target halted "
               "cost a wakeup on the host.</p>\n");
  appendf(out, "<table id=\"wakes\"><tr><th>CPU</th><th>HLTs</th>");
  for (size_t c = 0; c < kWakeCauses; ++c) appendf(out, "<th>{}</th>", to_string(static_cast<WakeCause>(c)));
  appendf(out, "<th>IPIs sent</th><th>IPIs received</th><th>of which while halted</th></tr>\n");
  const unsigned rows = std::min(stats.vcpu_count(), kLanes);
  for (unsigned cpu = 0; cpu < rows; ++cpu) {
    const VcpuStats& s = stats.vcpu(cpu);
    appendf(out, "<tr><td>{}</td><td>{}</td>", cpu, s.hlt_entries);
    for (uint64_t n : s.wakes) appendf(out, "<td>{}</td>", n);
    appendf(out, "<td>{}</td><td>{}</td><td>{}</td></tr>\n", s.total_sent(), s.total_received(), s.received_while_halted);
  }
  const VcpuStats total = stats.total();
  appendf(out, "<tr><th>all</th><th>{}</th>", total.hlt_entries);
  for (uint64_t n : total.wakes) appendf(out, "<th>{}</th>", n);
  appendf(out, "<th>{}</th><th>{}</th><th>{}</th></tr>\n</table>\n", total.total_sent(), total.total_received(),
          total.received_while_halted);
  if (rows < stats.vcpu_count())
    appendf(out, "<p class=\"note\">The first {} of {} vCPUs; the last row counts all.</p>\n", rows, stats.vcpu_count());
  return {"run-wakes", "Wake causes", fmt::to_string(out)};
}

}  // namespace topolab
