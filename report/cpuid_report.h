// SPDX-License-Identifier: GPL-2.0-or-later
// What a CpuidModel looks like from outside: the `cpuid -r` dump, the hwloc
// HWLOC_CPUID_PATH directory, and a table for a person that shows the
// topology and which CPUs share each cache *as Linux decodes the leaves*.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "report/cpu_list.h"
#include "model/cpuid.h"

namespace topolab {

// Debian `cpuid -r` format for every vCPU ("CPU N:" then one line per
// leaf/subleaf); `cpuid -f FILE` decodes it.
std::string format_cpuid_raw(const CpuidModel& model);

// A HWLOC_CPUID_PATH directory: hwloc-cpuid-info and one pu<N> file per
// vCPU. Throws ConfigError naming the path on I/O errors.
void write_hwloc_cpuid_dir(const CpuidModel& model, const std::filesystem::path& dir);

// One cache as the guest decodes it from leaf 4 (or 0x8000001D on AMD):
// the CPUs whose `apicid >> ceil_log2(sharing count)` is equal share it.
// Each CPU's own leaf counts: a hybrid part lists its core types' caches
// apart.
struct DecodedCache {
  unsigned level = 0;
  std::string kind;  // "d", "i" or "" (unified)
  uint64_t size = 0;
  unsigned ways = 0;
  unsigned sharing_ids = 0;                 // 1 + EAX[25:14]
  std::vector<std::vector<unsigned>> groups;  // CPU indexes per cache instance
  std::string core_kinds;  // hybrid only: the core types that report it, "P", "E" or "P+E"
};
// Every cache in leaf order. AMD CPUs without TOPOEXT have no such leaf;
// Linux then shares L1/L2 per core and takes the LLC per package, and so
// does this.
std::vector<DecodedCache> decode_caches_as_linux(const CpuidModel& model);
// The groups of CPUs Linux's scheduler treats as sharing a last-level cache
// (cpus_share_cache), with the rule that chose them:
// - Intel: the L3 from leaf 4 if there is one, else the L2;
// - AMD (cacheinfo_amd_init_llc_id): before family 0x17 the node (die);
//   Zen 1 (family 0x17, model <= 0x1F) the 8-thread core complex, APIC ID
//   >> 3; later families the L3 from 0x8000001D;
// - no LLC ID at all (AMD without an L3 in 0x80000006): match_llc() falls
//   back to the die.
struct LlcView {
  std::vector<std::vector<unsigned>> groups;
  std::string rule;
};
LlcView linux_llc(const CpuidModel& model, const std::vector<DecodedCache>& caches);


std::string format_topology_table(const CpuidModel& model);

}  // namespace topolab
