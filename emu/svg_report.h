// Pictures of a run for a person: the source -> destination IPI heatmap and
// the topology (packages, dies, cores, threads, LLC groups) as SVG.
#pragma once

#include <string>

#include "emu/cpuid.h"
#include "emu/stats.h"

namespace topolab {

// Rows are senders, columns receivers, colour the count on a log scale.
// Past 128 vCPUs neighbours are binned so the picture stays readable.
std::string ipi_heatmap_svg(const Stats& stats, const Topology& topology);

// One box per package, die and core; one cell per thread with its CPU
// index and APIC ID; threads that share Linux's LLC share a colour band.
std::string topology_svg(const CpuidModel& model);

}  // namespace topolab
