// SPDX-License-Identifier: GPL-2.0-or-later
#include "lab/linux_sysfs.h"

#include <fmt/format.h>

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

}  // namespace topolab
