// SPDX-License-Identifier: GPL-2.0-or-later
// The lint's framework, the disagreements between consumers and the cache
// patterns; the leaf-consistency patterns are in topology_lint_leaves.cc.
#include "lab/topology_lint.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "report/cpu_list.h"

namespace topolab {

namespace {

constexpr const char* kSeenL3AcrossPackages =
    "cloud-hypervisor #8730 and #5742; a QEMU 10.2 report in containers/nri-plugins #716";
constexpr const char* kSeenSmtCls = "oxidecomputer/propolis #1001";

size_t widest(const CpuGroups& groups) {
  size_t w = 0;
  for (const auto& g : groups) w = std::max(w, g.size());
  return w;
}

std::string level_summary(const ConsumerView& v, Level l) {
  CpuGroups g = v.groups(l);
  return fmt::format("{} {}{}: {}", g.size(), level_name(l), g.size() == 1 ? "" : "s", format_groups(g));
}

// The intended topology as CPU groups per level (the -smp of topolab's own
// machines), from each CPU's coordinates.
CpuGroups intended_groups(const Topology& t, Level l) {
  std::vector<uint64_t> keys;
  for (unsigned cpu = 0; cpu < t.cpus(); ++cpu) {
    CpuCoords c = t.coords_of(cpu);
    uint64_t key = c.package;
    if (l != Level::Package) key = key * t.counts().dies + c.die;
    if (l == Level::Module || l == Level::Core) key = key * t.counts().modules + c.module;
    if (l == Level::Core) key = key * t.counts().cores + c.core;
    keys.push_back(key);
  }
  return group_by_key(keys);
}

void compare_levels(const LintInput& in, std::vector<Finding>& out) {
  for (Level l : kLevels) {
    bool narrow = l == Level::Die || l == Level::Module;
    std::vector<const ConsumerView*> judged;
    for (const auto& v : in.views)
      if (!narrow || sees_dies(v)) judged.push_back(&v);
    bool differ = false;
    for (const auto* v : judged) differ |= v->groups(l) != judged.front()->groups(l);
    if (!differ) continue;
    Finding f = new_finding("consumers-disagree", fmt::format("consumers disagree on the {}s", level_name(l)),
              {"CPUID.0BH/1FH", "CPUID.01H:EBX", "CPUID.04H:EAX[31:26]", "CPUID.8000001EH", "CPUID.80000008H:ECX"});
    f.detail = fmt::format("each consumer reads other leaves to place CPUs in {}s, and here they do not agree", level_name(l));
    for (const auto* v : judged)
      f.inferences.push_back({consumer_name(v->consumer), fmt::format("{} (from {})", level_summary(*v, l), v->topology_source)});
    f.symptom = "the OS, the firmware and the tools a user runs (lstopo) each show a different machine; placement "
                "and licensing that count cores or sockets differ by consumer";
    f.seen_in = "edk2 #7797 (firmware and OS stop enumerating on different rules)";
    out.push_back(std::move(f));
  }
}

void compare_caches(const LintInput& in, std::vector<Finding>& out) {
  std::vector<const ConsumerView*> readers;
  for (const auto& v : in.views)
    if (v.reads_caches) readers.push_back(&v);
  if (readers.size() < 2) return;
  std::set<std::pair<unsigned, char>> names;
  for (const auto* v : readers)
    for (const auto& c : v->caches) names.insert({c.level, c.kind});
  for (auto [level, kind] : names) {
    bool differ = false;
    const CacheView* first = readers.front()->cache(level, kind);
    for (const auto* v : readers) {
      const CacheView* c = v->cache(level, kind);
      differ |= !c || !first || c->groups != first->groups;
    }
    if (!differ) continue;
    CacheView named;
    named.level = level;
    named.kind = kind;
    std::string name = named.name();
    Finding f = new_finding("consumers-disagree", fmt::format("consumers disagree on which CPUs share the {}", name),
              {"CPUID.04H:EAX[25:14]", "CPUID.8000001DH:EAX[25:14]", "CPUID.80000006H"});
    f.detail = "Linux shifts the APIC ID by ceil(log2(sharing)) on Intel and divides it on AMD; hwloc masks on Intel, "
               "divides on AMD and keeps every cache inside one package";
    for (const auto* v : readers) {
      const CacheView* c = v->cache(level, kind);
      f.inferences.push_back({consumer_name(v->consumer),
                              c ? fmt::format("{} x{}: {}", name, c->groups.size(), format_groups(c->groups)) : "no " + name});
    }
    f.symptom = "lstopo and /sys/devices/system/cpu/cpu*/cache disagree; tools that pin by cache (OpenMP, MPI, DPDK) "
                "follow hwloc while the scheduler follows Linux";
    f.seen_in = kSeenL3AcrossPackages;
    out.push_back(std::move(f));
  }
}

void compare_llc(const LintInput& in, std::vector<Finding>& out) {
  std::vector<const ConsumerView*> linux;
  for (const auto& v : in.views)
    if (v.has_llc) linux.push_back(&v);
  if (linux.size() < 2 || linux[0]->llc == linux[1]->llc) return;
  Finding f = new_finding("consumers-disagree", "Linux 4.x and 6.x build different LLC domains",
            {"CPUID.04H", "CPUID.8000001DH", "CPUID.8000001EH", "CPUID.0BH"});
  f.detail = "the LLC is grouped by APIC ID: 6.x takes it from the APIC, 4.x from CPUID";
  for (const auto* v : linux)
    f.inferences.push_back({consumer_name(v->consumer), fmt::format("{} ({})", format_groups(v->llc), v->llc_rule)});
  f.symptom = "wakeups, idle balancing and the reschedule IPIs they cost change with the guest kernel version";
  f.seen_in = kSeenL3AcrossPackages;
  out.push_back(std::move(f));
}

// The consumers against the machine the user asked for (topolab's own
// leaves only: a dump does not say what was meant).
void compare_with_intended(const LintInput& in, std::vector<Finding>& out) {
  if (!in.raw->topology) return;
  const Topology& t = *in.raw->topology;
  for (Level l : {Level::Package, Level::Core}) {
    CpuGroups want = intended_groups(t, l);
    Finding f = new_finding("differs-from-intended", fmt::format("consumers see other {}s than -smp asked for", level_name(l)),
              {"CPUID.0BH/1FH", "CPUID.01H:EBX[23:16]", "CPUID.8000001EH"});
    for (const auto& v : in.views)
      if (v.groups(l) != want)
        f.inferences.push_back({consumer_name(v.consumer), fmt::format("{} (from {})", level_summary(v, l), v.topology_source)});
    if (f.inferences.empty()) continue;
    f.inferences.insert(f.inferences.begin(), {"intended", fmt::format("{} {}s: {}", want.size(), level_name(l), format_groups(want))});
    f.detail = fmt::format("-smp {} means {}", t.to_smp_arg(), t.describe());
    f.symptom = l == Level::Core ? "SMT siblings become separate cores: the scheduler's SMT domain is lost"
                                 : "sockets merge or split: one socket per vCPU, or all vCPUs in one";
    f.seen_in = "kubevirt #1994, oxidecomputer/propolis #940";
    out.push_back(std::move(f));
  }
}

}  // namespace

std::vector<const std::vector<unsigned>*> groups_spanning(const CpuGroups& inner, const std::vector<uint64_t>& outer_keys) {
  std::vector<const std::vector<unsigned>*> out;
  for (const auto& g : inner) {
    std::set<uint64_t> parents;
    for (unsigned cpu : g) parents.insert(outer_keys[cpu]);
    if (parents.size() > 1) out.push_back(&g);
  }
  return out;
}

bool sees_dies(const ConsumerView& v) { return v.topology_source.starts_with("leaf 0x1F"); }

std::string format_groups(const CpuGroups& groups, size_t max_groups) {
  std::string out;
  for (size_t i = 0; i < groups.size() && i < max_groups; ++i) out += (i ? " | " : "") + format_cpu_list(groups[i]);
  if (groups.size() > max_groups) out += fmt::format(" | ... ({} more)", groups.size() - max_groups);
  return out;
}

std::string summarize_topology(const ConsumerView& v) {
  auto n = [&](Level l) { return v.groups(l).size(); };
  std::string dies = sees_dies(v) ? fmt::format(", {} dies, {} modules", n(Level::Die), n(Level::Module)) : "";
  size_t packages = n(Level::Package);
  return fmt::format("{} package{}{}, {} cores, {} threads/core (from {})", packages, packages == 1 ? "" : "s", dies,
                     n(Level::Core), v.threads_per_core(), v.topology_source);
}

std::string summarize_caches(const ConsumerView& v) {
  if (!v.reads_caches) return "reads no caches";
  std::vector<std::string> parts;
  for (const auto& c : v.caches) parts.push_back(fmt::format("{} x{} of {}", c.name(), c.groups.size(), widest(c.groups)));
  std::string text = parts.empty() ? "no caches" : fmt::format("{}", fmt::join(parts, ", "));
  if (v.has_llc) text += fmt::format("; LLC x{} of {} ({})", v.llc.size(), widest(v.llc), v.llc_rule);
  return text;
}

void check_disagreements(const LintInput& in, std::vector<Finding>& out) {
  compare_levels(in, out);
  compare_caches(in, out);
  compare_llc(in, out);
  compare_with_intended(in, out);
}

void check_cache_patterns(const LintInput& in, std::vector<Finding>& out) {
  Finding l3 = new_finding("l3-across-packages", "an L3 is shared by CPUs of different packages",
             {"CPUID.04H:EAX[25:14]", "CPUID.8000001DH:EAX[25:14]", "CPUID.0BH/1FH"});
  Finding llc = new_finding("llc-wider-than-package", "the scheduler's LLC is wider than a package", {"CPUID.04H", "CPUID.8000001DH", "CPUID.0BH/1FH"});
  Finding smt = new_finding("smt-not-sharing-l1-l2", "SMT siblings do not share their L1/L2",
              {"CPUID.04H:EAX[25:14]", "CPUID.8000001DH:EAX[25:14]", "CPUID.0BH subleaf 0"});
  for (const auto& v : in.views) {
    if (!v.reads_caches) continue;
    const std::vector<uint64_t>& packages = v.keys[static_cast<size_t>(Level::Package)];
    std::string where = fmt::format("over packages {}", format_groups(v.groups(Level::Package)));
    // hwloc cannot show an L3 over packages (it keeps caches inside one
    // package and splits it instead); Linux can.
    if (const CacheView* c = v.cache(3, 'u'); c && !groups_spanning(c->groups, packages).empty())
      l3.inferences.push_back({consumer_name(v.consumer), fmt::format("L3 {} {}", format_groups(c->groups), where)});
    if (v.has_llc && !groups_spanning(v.llc, packages).empty())
      llc.inferences.push_back({consumer_name(v.consumer), fmt::format("LLC {} ({}) {}", format_groups(v.llc), v.llc_rule, where)});
    // SMT siblings must share L1 and L2: Linux's CLS domain is the L2, and
    // the SMT domain must nest in it (kernel/sched/topology.c).
    if (v.threads_per_core() < 2) continue;
    for (const auto& c : v.caches)
      if (c.level <= 2 && !groups_spanning(v.groups(Level::Core), group_keys_of(c.groups, v.apic_ids.size())).empty())
        smt.inferences.push_back({consumer_name(v.consumer), fmt::format("{} {} but cores {}", c.name(), format_groups(c.groups),
                                                                       format_groups(v.groups(Level::Core)))});
  }
  l3.detail = "the L3's sharing count reaches past the package's APIC-ID field, or (AMD family 0x17 model <= 0x1F) "
              "Linux's fixed Zen 1 core complex, APIC ID >> 3, does";
  l3.symptom = "Linux: the MC domain spans sockets, and with NUMA \"sched: CPU #N's llc-sibling CPU #M is not on the "
               "same node! Ignoring dependency.\"; lstopo shows one L3 per package instead";
  l3.seen_in = kSeenL3AcrossPackages;
  llc.detail = "cpus_share_cache() becomes true across sockets: wakeups go there without an IPI and idle search crosses them";
  llc.symptom = "Linux: BUG: arch topology borken / the MC domain not a subset of the PKG domain (DIE before 6.6)";
  llc.seen_in = kSeenL3AcrossPackages;
  smt.detail = "a cache that is private to each thread of a core";
  bool l2 = std::any_of(smt.inferences.begin(), smt.inferences.end(), [](const auto& i) { return i.second.starts_with("L2 "); });
  smt.symptom = l2 ? "Linux: BUG: arch topology borken / the SMT domain not a subset of the CLS domain (the CLS domain "
                     "is the L2); hwloc puts the L2 below the core, one per thread"
                   : "only the L1 is private to each thread: Linux prints nothing (its CLS domain follows the L2), but "
                     "/sys/devices/system/cpu/cpu*/cache/index0-1/shared_cpu_list and lstopo show one L1 per thread";
  smt.seen_in = kSeenSmtCls;
  for (Finding* f : {&l3, &llc, &smt})
    if (!f->inferences.empty()) out.push_back(std::move(*f));
}

std::vector<uint64_t> group_keys_of(const CpuGroups& groups, size_t cpus) {
  std::vector<uint64_t> keys(cpus, UINT64_MAX);
  for (size_t g = 0; g < groups.size(); ++g)
    for (unsigned cpu : groups[g]) keys[cpu] = g;
  return keys;
}

LintInput decode_for_lint(const RawCpuid& raw, const std::vector<Consumer>& consumers, const NumaConfig* numa) {
  LintInput in;
  in.raw = &raw;
  in.numa = numa;
  std::vector<Consumer> list = consumers;
  if (list.empty()) list.assign(std::begin(kConsumers), std::end(kConsumers));
  for (Consumer c : list) in.views.push_back(decode_as(c, raw));
  return in;
}

std::vector<Finding> lint_topology(const LintInput& in) {
  std::vector<Finding> out;
  check_disagreements(in, out);
  check_cache_patterns(in, out);
  check_amd_patterns(in, out);
  check_apic_id_patterns(in, out);
  check_count_fields(in, out);
  check_hybrid(in, out);
  check_numa_patterns(in, out);
  return out;
}

}  // namespace topolab
