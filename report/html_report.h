// SPDX-License-Identifier: GPL-2.0-or-later
// One self-contained HTML page per `topolab cpuid`, `run` or `experiment`
// (--html FILE): inline CSS, SVG and script, nothing requested from the
// network or the disk, and the same bytes for the same inputs (no clock, no
// host paths beyond what the caller passes in `command`). docs/html.md
// describes the page; its element ids are what tests/html_page.sh
// checks in a browser.
//
// Every page explains the machine's CPUID: the topology tree with APIC IDs
// and core types, which CPUs share each cache (drawn, and why in words: the
// CPUID field and the APIC-ID bits), and the raw leaves with each register
// decoded on hover. A run page adds the IPI heatmap, the wake causes and a
// per-vCPU timeline over virtual time; an experiment page its tables and
// charts, and each machine it ran.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "emu/activity_log.h"
#include "emu/stats.h"
#include "model/cpuid.h"
#include "model/numa.h"

namespace topolab {

// `command`: the command line the page is about, as the user typed it.
// `numa`: the -numa nodes (null or not enabled: none).
std::string cpuid_html_page(const CpuidModel& model, const std::string& command, const NumaConfig* numa = nullptr);

struct HtmlRunInput {
  std::string command;
  // The machine's topology (Machine::topology(), owned by its configuration)
  // for the heatmap and the title; the CPUID model for what the guest reads.
  const Topology& topology;
  const CpuidModel& cpuid;
  const Stats& stats;
  const ActivityLog& activity;
  std::string outcome;       // the closing line: "guest exit 0 after ..."
  std::string report_table;  // the end-of-run table (report/run_report.h); empty: none
  const NumaConfig* numa = nullptr;  // the -numa nodes; null: none
};
std::string run_html_page(const HtmlRunInput& in);

struct HtmlExperimentInput {
  std::string command;
  std::string name;                           // l3-cache, halt-poll
  std::string tables;                         // the tables the experiment prints
  std::map<std::string, std::string> charts;  // file name -> SVG, drawn in name order
  // Each machine the experiment ran, with what the tables call it.
  std::vector<std::pair<std::string, CpuidModel>> machines;
};
std::string experiment_html_page(const HtmlExperimentInput& in);

}  // namespace topolab
