// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/html_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "report/test_text.h"

namespace topolab {
namespace {

using test_text::count;

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Nothing the page refers to may come from outside it.
void expect_self_contained(const std::string& page) {
  EXPECT_FALSE(has(page, "src=")) << "no external scripts or images";
  EXPECT_FALSE(has(page, "href=\"http")) << "no links out";
  EXPECT_FALSE(has(page, "<link")) << "no external style sheets";
  EXPECT_FALSE(has(page, "@import"));
  EXPECT_FALSE(has(page, "url("));
}

CpuidModel l3_debate() { return CpuidModel(Topology::parse("16,sockets=1,cores=8,threads=2"), parse_cpu("Skylake-Server")); }

TEST(CpuidPage, HasEverySectionAndIsSelfContained) {
  const std::string page = cpuid_html_page(l3_debate(), "topolab cpuid -smp 16,sockets=1,cores=8,threads=2");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"topology", "summary", "apic-layout", "tree", "caches", "cache-map", "cache-why", "leaves",
                         "leaves-table", "field-panel", "leaf-cpu", "command"})
    EXPECT_TRUE(has(page, fmt::format("id=\"{}\"", id))) << id;
  expect_self_contained(page);
  EXPECT_EQ(page, cpuid_html_page(l3_debate(), "topolab cpuid -smp 16,sockets=1,cores=8,threads=2"));
}

// With -numa the topology section gains the nodes, Linux's numbers beside
// them; without, nothing of NUMA.
TEST(CpuidPage, NumaNodesInTheTopologySection) {
  const CpuidModel model = l3_debate();
  EXPECT_EQ(cpuid_html_page(model, "x").find("id=\"numa\""), std::string::npos);
  const NumaConfig numa = NumaOptions({"node,memdev=a,cpus=8-15", "node,memdev=b,cpus=0-7"},
                                      {"memory-backend-ram,id=a,size=64M", "memory-backend-ram,id=b,size=64M"})
                              .complete(model.topology(), uint64_t{128} << 20);
  const std::string page = cpuid_html_page(model, "x", &numa);
  EXPECT_NE(page.find("<p id=\"numa\">NUMA: 2 nodes (SRAT), distances 10 local and 20 remote (no SLIT)</p>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><td>0</td><td>8-15</td><td>64 MiB</td><td>10 20</td><td>1</td></tr>"), std::string::npos)
      << page;
}

TEST(CpuidPage, SaysWhyCpus0And1ShareAnL2) {
  const std::string page = cpuid_html_page(l3_debate(), "x");
  EXPECT_TRUE(has(page, "CPUID leaf 0x4, subleaf 2: <code>EAX[25:14] = 1</code> → up to 2 logical processors share "
                        "this cache."))
      << page;
  EXPECT_TRUE(has(page, "That is 2<sup>1</sup>, so Linux drops the low 1 bit of each APIC ID"));
  EXPECT_TRUE(has(page, "So there is one L2 per core, shared by all its CPUs."));
  EXPECT_TRUE(has(page, "CPU 0 (APIC ID 0x0 = <code>0b0000</code>) and CPU 1 (APIC ID 0x1 = <code>0b0001</code>) "
                        "differ only in bit 0, below bit 1: both are in L2 #0."));
  // The L3 of one package: 16 IDs, 4 bits dropped.
  EXPECT_TRUE(has(page, "drops the low 4 bits of each APIC ID"));
  EXPECT_TRUE(has(page, "So there is one L3 per package"));
  // The panel opens on the L2's leaf 4 EAX.
  EXPECT_TRUE(has(page, "<b class=\"what\">CPUID leaf 0x4, subleaf 2: EAX = "));
}

TEST(CpuidPage, DrawsEveryCpuAndEveryCacheInstance) {
  const std::string page = cpuid_html_page(l3_debate(), "x");
  EXPECT_EQ(count(page, "<span class=\"cpu\" data-cpu="), 16u);  // the tree
  EXPECT_EQ(count(page, "<rect class=\"cpu\" data-cpu="), 16u);  // the cache map
  EXPECT_TRUE(has(page, "data-cpus=\"0 1\""));                     // core 0, its L1s and L2
  EXPECT_EQ(count(page, "<title>L2 #"), 8u);
  EXPECT_EQ(count(page, "<title>L3 #"), 1u);
  EXPECT_TRUE(has(page, "<title>L3 #0: CPUs 0-15</title>"));
  EXPECT_TRUE(has(page, "title=\"CPU 1: APIC ID 0x1 = 0b0001: package 0, die 0, module 0, core 0, thread 1\""));
}

TEST(CpuidPage, LeavesThatCarryTheApicIdHaveOneRowPerCpu) {
  const std::string page = cpuid_html_page(CpuidModel(Topology::parse("4"), parse_cpu("Skylake-Server")), "x");
  EXPECT_TRUE(has(page, "<tr data-cpu=\"3\" hidden><td class=\"l\">0x00000001</td>"));
  EXPECT_TRUE(has(page, "<tr data-cpu=\"0\"><td class=\"l\">0x00000001</td>"));
  EXPECT_EQ(count(page, "<td class=\"l\">0x00000000</td>"), 1u);  // the same on every CPU
  EXPECT_TRUE(has(page, "initial APIC ID"));
  EXPECT_TRUE(has(page, "data-what=\"CPU 3: CPUID leaf 0x1, subleaf 0: EBX = 0x03"));
  EXPECT_TRUE(has(page, "data-what=\"CPUID leaf 0x0, subleaf 0: EAX = "));
}

TEST(CpuidPage, AmdWithoutTopoextSaysThereIsNoSharingLeaf) {
  const std::string page = cpuid_html_page(CpuidModel(Topology::parse("4"), parse_cpu("qemu64")), "x");
  EXPECT_TRUE(has(page, "This AMD model has no TOPOEXT")) << page;
}

TEST(CpuidPage, EscapesWhatTheUserTyped) {
  const std::string page = cpuid_html_page(l3_debate(), "topolab cpuid -cpu '<script>alert(1)</script>'");
  EXPECT_TRUE(has(page, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_EQ(count(page, "<script>"), 1u);  // the page's own
}

TEST(CpuidPage, LargeMachinesStayBounded) {
  const std::string page = cpuid_html_page(CpuidModel(Topology::parse("300"), parse_cpu("Skylake-Server,+x2apic")), "x");
  EXPECT_EQ(count(page, "<rect class=\"cpu\" data-cpu="), 128u);
  EXPECT_TRUE(has(page, "The drawing shows the first 128 of 300 CPUs"));
  EXPECT_TRUE(has(page, "the first 64 CPUs"));
  EXPECT_LT(page.size(), 2u << 20);
}

struct RunFixture {
  CpuidModel model = CpuidModel(Topology::parse("2"), parse_cpu("Skylake-Server"));
  Stats stats{2};
  ActivityLog log{2};
  RunFixture() {
    stats.record_send(0, ApicDeliveryMode::Fixed, ApicShorthand::None, 0xfd);
    stats.record_ipi(0, 1, ApicDeliveryMode::Fixed, 0xfd, true);
    stats.record_wake(1, WakeCause::Interrupt);
    log.record(0, 0, 1000, VcpuActivity::Running);
    log.record(0, 1000, 3000, VcpuActivity::Halted);
    log.record(1, 0, 1500, VcpuActivity::WaitForSipi);
    log.record(1, 1500, 3000, VcpuActivity::Mwait);
  }
  std::string page() const {
    return run_html_page({"topolab run ipi.elf -smp 2", model.topology(), model, stats, log, "guest exit 0", "the table"});
  }
};

TEST(RunPage, HasTheRunSectionsAndTheMachine) {
  const std::string page = RunFixture().page();
  for (const char* id : {"run", "run-outcome", "run-report", "run-timeline", "timeline", "timeline-table", "run-wakes",
                         "wakes", "run-heatmap", "heatmap", "topology", "cache-map", "leaves-table"})
    EXPECT_TRUE(has(page, fmt::format("id=\"{}\"", id))) << id;
  expect_self_contained(page);
  EXPECT_EQ(page, RunFixture().page());
}

TEST(RunPage, TimelineDrawsEachActivity) {
  const std::string page = RunFixture().page();
  EXPECT_TRUE(has(page, "<title>CPU 0: running from 0 ns to 1000 ns</title>")) << page;
  EXPECT_TRUE(has(page, "<title>CPU 0: halted from 1000 ns to 3000 ns</title>"));
  EXPECT_TRUE(has(page, "<title>CPU 1: wait-for-sipi from 0 ns to 1500 ns</title>"));
  EXPECT_TRUE(has(page, "class=\"span act-mwait\""));
  EXPECT_TRUE(has(page, "<tr><td>0</td><td>33.3</td><td>0.0</td><td>66.7</td>"));
  EXPECT_TRUE(has(page, "<title>cpu 0 -> cpu 1: 1</title>"));  // the heatmap, inline
}

TEST(RunPage, TimelineIsBoundedByPixelsNotSpans) {
  RunFixture f;
  ActivityLog busy(1);
  for (uint64_t i = 0; i < ActivityLog::kMaxSpansPerVcpu; ++i)
    busy.record(0, i * 10, i * 10 + 10, i % 2 ? VcpuActivity::Halted : VcpuActivity::Running);
  Stats stats(1);
  CpuidModel one(Topology::parse("1"), parse_cpu("qemu64"));
  const std::string page = run_html_page({"x", one.topology(), one, stats, busy, "", ""});
  EXPECT_LE(count(page, "<rect class=\"span"), 960u);
  EXPECT_GT(count(page, "<rect class=\"span"), 0u);
}

TEST(ExperimentPage, ChartsTablesAndMachines) {
  HtmlExperimentInput in{"topolab experiment l3-cache", "l3-cache", "RES/s <1>", {{"l3-cache-pipe.svg", "<svg>pipe</svg>"}}, {}};
  in.machines.emplace_back("8 vCPUs", CpuidModel(Topology::parse("8"), parse_cpu("Skylake-Server,l3-cache=off")));
  in.machines.emplace_back("8 vCPUs", CpuidModel(Topology::parse("8"), parse_cpu("Skylake-Server,l3-cache=on")));
  const std::string page = experiment_html_page(in);
  for (const char* id : {"experiment-charts", "chart-l3-cache-pipe", "experiment-tables", "experiment-table-text",
                         "experiment-machines", "machine-0", "m0-cache-map", "m1-cache-map", "m1-leaves-table"})
    EXPECT_TRUE(has(page, fmt::format("id=\"{}\"", id))) << id;
  EXPECT_TRUE(has(page, "<svg>pipe</svg>"));
  EXPECT_TRUE(has(page, "RES/s &lt;1&gt;"));
  EXPECT_EQ(count(page, "<title>L3 #"), 1u);  // only the l3-cache=on machine has one
  expect_self_contained(page);
}

}  // namespace
}  // namespace topolab
