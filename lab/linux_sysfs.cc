// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/linux_sysfs.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/cpu_list.h"

namespace topolab {

namespace {

const std::vector<unsigned>& group_of(const CpuGroups& groups, unsigned cpu) {
  for (const auto& g : groups)
    for (unsigned c : g)
      if (c == cpu) return g;
  static const std::vector<unsigned> none;
  return none;
}

const char* cache_type(char kind) {
  switch (kind) {
    case 'd': return "Data";
    case 'i': return "Instruction";
    default: return "Unified";
  }
}

}  // namespace

std::string format_linux_sysfs(const ConsumerView& v) {
  const CpuGroups packages = v.groups(Level::Package), dies = v.groups(Level::Die), cores = v.groups(Level::Core);
  std::string out;
  for (unsigned cpu = 0; cpu < v.apic_ids.size(); ++cpu) {
    // Linux 6.1's sysfs names the same sets twice: core_cpus = thread_siblings,
    // package_cpus = core_siblings (drivers/base/topology.c).
    const std::string core = format_cpu_list(group_of(cores, cpu));
    const std::string package = format_cpu_list(group_of(packages, cpu));
    out += fmt::format(
        "topolab-topology cpu{} core_cpus_list={} core_siblings_list={} die_cpus_list={} package_cpus_list={} "
        "thread_siblings_list={}\n",
        cpu, core, package, format_cpu_list(group_of(dies, cpu)), package, core);
  }
  for (unsigned cpu = 0; cpu < v.apic_ids.size(); ++cpu) {
    unsigned index = 0;
    for (const CacheView& c : v.caches)
      out += fmt::format("topolab-cache cpu{} index{} level={} type={} shared_cpu_list={}\n", cpu, index++, c.level,
                         cache_type(c.kind), format_cpu_list(group_of(c.groups, cpu)));
  }
  return out;
}

LinuxNumaView linux_numa_view(const NumaConfig& numa, const Topology& topology, uint64_t ram_bytes) {
  LinuxNumaView view;
  if (!numa.enabled()) {
    // dummy_numa_init(): "No NUMA configuration found", one node.
    LinuxNode node;
    for (unsigned cpu = 0; cpu < topology.cpus(); ++cpu) node.cpus.push_back(cpu);
    node.memory_bytes = ram_bytes;
    view.nodes.push_back(std::move(node));
    view.distance = {{kNumaDistanceLocal}};
    return view;
  }
  view.srat = true;
  view.slit = numa.has_distance_table();
  std::vector<int> linux_of(numa.node_count(), -1);
  for (unsigned proximity : srat_node_order(numa)) {
    linux_of[proximity] = static_cast<int>(view.nodes.size());
    LinuxNode node;
    node.node = static_cast<unsigned>(view.nodes.size());
    node.proximity = proximity;
    node.memory_bytes = numa.nodes()[proximity].memory_bytes;
    view.nodes.push_back(std::move(node));
  }
  for (unsigned cpu = 0; cpu < topology.cpus(); ++cpu)
    view.nodes[static_cast<size_t>(linux_of[numa.node_of_cpu(cpu)])].cpus.push_back(cpu);
  const size_t count = view.nodes.size();
  if (numa.has_distance_table())
    for (unsigned a = 0; a < numa.node_count(); ++a)
      for (unsigned b = 0; b < numa.node_count(); ++b)
        if (a == b ? numa.distance(a, b) != kNumaDistanceLocal : numa.distance(a, b) <= kNumaDistanceLocal)
          view.slit_rejected = true;
  view.distance.assign(count, std::vector<uint8_t>(count, kNumaDistanceRemote));
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b) {
      if (a == b) view.distance[a][b] = kNumaDistanceLocal;
      else if (numa.has_distance_table() && !view.slit_rejected)
        view.distance[a][b] = numa.distance(view.nodes[a].proximity, view.nodes[b].proximity);
    }
  return view;
}

void apply_linux_numa(ConsumerView& v, LinuxNumaView& numa, bool amd) {
  if (numa.nodes.size() < 2) return;
  std::vector<unsigned> node_of(v.apic_ids.size(), 0);
  for (const LinuxNode& node : numa.nodes)
    for (unsigned cpu : node.cpus)
      if (cpu < node_of.size()) node_of[cpu] = node.node;
  const auto spans_nodes = [&](const CpuGroups& groups) {
    for (const std::vector<unsigned>& g : groups)
      for (unsigned cpu : g)
        if (node_of[cpu] != node_of[g.front()]) return true;
    return false;
  };
  // set_cpu_sibling_map(): match_smt, match_l2c, match_llc, in that order.
  if (spans_nodes(v.groups(Level::Core))) numa.complaints.push_back("smt");
  if (const CacheView* l2 = v.cache(2, 'u'); l2 && spans_nodes(l2->groups)) numa.complaints.push_back("l2c");
  if (amd && spans_nodes(v.has_llc ? v.llc : CpuGroups{})) numa.complaints.push_back("llc");
  if (!amd) return;
  for (CacheView& cache : v.caches) {
    if (cache.level != 3) continue;
    // cpu_llc_shared_mask: the scheduler's LLC group, less other nodes.
    const CpuGroups& llc = v.has_llc ? v.llc : cache.groups;
    CpuGroups cut;
    for (const std::vector<unsigned>& group : llc)
      for (const LinuxNode& node : numa.nodes) {
        std::vector<unsigned> part;
        for (unsigned cpu : group)
          if (node_of[cpu] == node.node) part.push_back(cpu);
        if (!part.empty()) cut.push_back(std::move(part));
      }
    std::sort(cut.begin(), cut.end());
    cache.groups = std::move(cut);
  }
}

std::string format_linux_nodes(const LinuxNumaView& view) {
  std::string out = fmt::format("topolab-numa nodes={} srat={} slit={} complaints={}\n", view.nodes.size(),
                                view.srat ? "yes" : "no", !view.slit ? "none" : view.slit_rejected ? "rejected" : "used",
                                view.complaints.empty() ? "none" : fmt::format("{}", fmt::join(view.complaints, ",")));
  for (const LinuxNode& node : view.nodes)
    out += fmt::format("topolab-node node{} cpulist={} distance={} memory_kb={}\n", node.node,
                       format_cpu_list(node.cpus), fmt::join(view.distance[node.node], ","), node.memory_bytes / 1024);
  return out;
}

}  // namespace topolab
