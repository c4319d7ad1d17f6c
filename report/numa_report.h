// SPDX-License-Identifier: GPL-2.0-or-later
// The NUMA nodes of a machine as a person reads them: one row per -numa
// node with its CPUs, memory and distances, and the number Linux gives it
// where that differs (Linux numbers nodes as they first appear in the
// SRAT: lab/linux_sysfs.h). `topolab cpuid`, the monitor's
// `info topology`, `cpuid --diff` and the HTML page show this table.
// Nothing at all for a machine without -numa, so their output stays what
// it was.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/numa.h"
#include "model/topology.h"

namespace topolab {

// "NUMA: 2 nodes (SRAT), distances from the SLIT\n" then the table, or ""
// without -numa.
std::string format_numa_table(const NumaConfig& numa, const Topology& topology);

// The table's rows, for the HTML page (report/html_topology.cc).
struct NumaRow {
  unsigned node = 0;
  std::string cpus, memory, distances;
  std::optional<unsigned> linux_node;  // none: not in the SRAT (no CPUs, no memory)
  bool renumbered = false;             // Linux's number differs
};
std::vector<NumaRow> numa_rows(const NumaConfig& numa, const Topology& topology);
// "NUMA: 2 nodes (SRAT), distances from the SLIT"
std::string numa_heading(const NumaConfig& numa);

}  // namespace topolab
