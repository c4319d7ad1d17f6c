// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/svg_report.h"

#include <gtest/gtest.h>

#include "report/test_text.h"

namespace topolab {
namespace {

using test_text::count;

TEST(IpiHeatmap, OneCellPerRouteWithItsCount) {
  Stats stats(4);
  stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfd, false);
  stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfd, false);
  stats.record_ipi(2, 3, ApicDeliveryMode::Nmi, 0, true);
  std::string svg = ipi_heatmap_svg(stats, Topology::parse("4"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<title>cpu 0 -> cpu 1: 2</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>cpu 2 -> cpu 3: 1</title>"), std::string::npos);
  EXPECT_NE(svg.find("3 in all"), std::string::npos);
  EXPECT_EQ(count(svg, "<title>"), 2u);
}

TEST(IpiHeatmap, LargeMachinesAreBinned) {
  Stats stats(1024);
  stats.record_ipi(0, 1023, ApicDeliveryMode::Fixed, 0x40, false);
  std::string svg = ipi_heatmap_svg(stats, Topology::parse("1024"));
  EXPECT_NE(svg.find("cpu 0-7 -> cpu 1016-1023: 1"), std::string::npos);
  EXPECT_NE(svg.find("8 vCPUs per cell"), std::string::npos);
}

TEST(TopologyPicture, EveryCpuOnceColouredByItsLlc) {
  CpuidModel m(Topology::parse("12,sockets=2,cores=3,threads=2"), parse_cpu("Skylake-Server"));
  std::string svg = topology_svg(m);
  EXPECT_EQ(count(svg, "<title>cpu "), 12u);
  EXPECT_NE(svg.find("<title>cpu 6 APIC 0x8 LLC group 1</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("package 1"), std::string::npos);
}

TEST(BarChartSvg, DrawsOneBarPerValueWithItsNumber) {
  BarChart chart{.title = "RES IPIs <per s>",
                 .value_label = "IPI/s",
                 .series = {"l3-cache=off", "l3-cache=on"},
                 .groups = {{.label = "8 vCPUs", .values = {560000, 40000}, .notes = {"", "-93%"}},
                            {.label = "16 vCPUs", .values = {0, 12.5}, .notes = {}}}};
  const std::string svg = bar_chart_svg(chart);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("RES IPIs &lt;per s&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">560000<"), std::string::npos);
  EXPECT_NE(svg.find(">12.5<"), std::string::npos);
  EXPECT_NE(svg.find(">-93%<"), std::string::npos);
  size_t bars = 0;
  for (size_t at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1)) ++bars;
  EXPECT_EQ(bars, 4u + 2u) << "four bars and two legend swatches";
  EXPECT_EQ(svg, bar_chart_svg(chart)) << "the same chart gives the same bytes";
}

}  // namespace
}  // namespace topolab
