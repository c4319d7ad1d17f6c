// SPDX-License-Identifier: GPL-2.0-or-later
// The lint's NUMA patterns: the SRAT's nodes (a topolab machine's -numa
// options; a dump has none) against the groups CPUID makes each consumer
// build, and the nodes and the SLIT on their own. The rules and the
// messages are Linux 6.1's and QEMU 7.2's (docs/check.md, "NUMA"):
// - arch/x86/kernel/smpboot.c topology_sane(): an SMT or LLC sibling on
//   another node is dropped from the sibling mask, with one warning per
//   boot; match_llc() lets an Intel family 6 package's LLC cross nodes
//   without a word (taken for SNC) and splits it at the node instead;
// - drivers/acpi/numa/srat.c slit_valid(): a remote distance <= 10 throws
//   the SLIT away; nothing checks symmetry;
// - hwloc takes its NUMA nodes from Linux (sysfs) and nests each in the
//   smallest cache, die or package that holds all its CPUs; its x86 backend
//   reads 0x8000001E's node ID only when the OS gives no nodes;
// - edk2 reads neither the SRAT nor the caches: its only view here is of
//   cores.
// Not modelled: HMAT, memory hotplug, the l2c-sibling check (an L2 over
// nodes), and Linux's renumbering of proximity domains in the SRAT's order
// (the messages name nodes by their -numa nodeid).
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "lab/topology_lint.h"
#include "report/cpu_list.h"

namespace topolab {

namespace {

constexpr const char* kSrat = "SRAT (-numa node,cpus= / -numa cpu)";
constexpr const char* kSlit = "SLIT (-numa dist)";
constexpr const char* kSeenLlcAcrossNodes =
    "cloud-hypervisor #5742 (topology_sane's llc-sibling warning with 2 vNUMA nodes) and #8730 (the host's L3 "
    "sharing count makes one L3 over all packages); QEMU gitlab #2270; oxidecomputer/propolis #921 (an SMT "
    "panic: every thread one core) and #940 (vCPU-many sockets)";

// Linux's node numbers (the SRAT's order, model/numa.h), which its
// messages print.
std::vector<uint64_t> linux_node_numbers(const NumaConfig& numa, const std::vector<uint64_t>& nodes) {
  std::vector<uint64_t> linux_of(numa.node_count(), 0), out;
  const std::vector<unsigned> order = srat_node_order(numa);
  for (unsigned i = 0; i < order.size(); ++i) linux_of[order[i]] = i;
  for (uint64_t n : nodes) out.push_back(n < linux_of.size() ? linux_of[n] : n);
  return out;
}

std::vector<uint64_t> node_keys(const NumaConfig& numa, size_t cpus) {
  std::vector<uint64_t> keys(cpus);
  for (unsigned cpu = 0; cpu < cpus; ++cpu) keys[cpu] = numa.node_of_cpu(cpu);
  return keys;
}

// "0-7 (nodes 0, 1)": a group and the nodes its CPUs are in.
std::string with_nodes(const std::vector<unsigned>& group, const std::vector<uint64_t>& nodes) {
  std::set<uint64_t> in;
  for (unsigned cpu : group) in.insert(nodes[cpu]);
  return fmt::format("{} (nodes {})", format_cpu_list(group), fmt::join(in, ", "));
}

std::string spanning_text(const std::vector<const std::vector<unsigned>*>& groups, const std::vector<uint64_t>& nodes) {
  std::vector<std::string> parts;
  for (const auto* g : groups) parts.push_back(with_nodes(*g, nodes));
  if (parts.size() > 4) parts.resize(4), parts.push_back("...");
  return fmt::format("{}", fmt::join(parts, " | "));
}

// hwloc nests a node in the smallest object that holds all its CPUs: a
// group that holds whole nodes gets them as children; one that cuts a node
// breaks the tree.
std::string hwloc_nesting(const std::vector<const std::vector<unsigned>*>& groups, const std::vector<uint64_t>& nodes) {
  for (const auto* g : groups) {
    std::set<uint64_t> touched;
    for (unsigned cpu : *g) touched.insert(nodes[cpu]);
    size_t in_touched_nodes = 0;  // the CPUs of every node it touches
    for (uint64_t n : nodes) in_touched_nodes += touched.count(n);
    if (in_touched_nodes != g->size())
      return "it cuts a node: \"hwloc received invalid information from the operating system ... intersection without "
             "inclusion\", and the object is dropped";
  }
  return "it holds whole nodes: each node hangs below it (a NUMA node inside a cache or die)";
}

// The first warning topology_sane() prints (WARN_ONCE): CPUs come up in
// index order, each compared with those already up, lowest first; an
// `exempt` pair is passed over silently. `nodes` in Linux's numbers.
std::string topology_sane_warning(const std::vector<uint64_t>& keys, const std::vector<uint64_t>& nodes, const char* what,
                                  const std::function<bool(unsigned, unsigned)>& exempt) {
  for (unsigned c = 0; c < keys.size(); ++c)
    for (unsigned o = 0; o < c; ++o)
      if (keys[c] == keys[o] && keys[c] != UINT64_MAX && nodes[c] != nodes[o] && !exempt(c, o))
        return fmt::format("sched: CPU #{}'s {}-sibling CPU #{} is not on the same node! [node: {} != {}]. Ignoring dependency.",
                           c, what, o, nodes[c], nodes[o]);
  return {};
}

bool is_linux(Consumer c) { return c == Consumer::Linux6 || c == Consumer::Linux4; }

// The LLC as each consumer decodes the caches: Linux's cpu_llc_id, hwloc's
// widest cache.
const CpuGroups* llc_of(const ConsumerView& v) {
  if (v.has_llc) return &v.llc;
  const CacheView* widest = nullptr;
  for (const auto& c : v.caches)
    if (c.kind != 'i' && (!widest || c.level > widest->level)) widest = &c;
  return widest ? &widest->groups : nullptr;
}

std::string nodes_intended(const NumaConfig& numa, size_t cpus) { return "SRAT: " + summarize_numa(numa, cpus); }

// 1. An LLC or a die over nodes.
void check_llc_across_nodes(const LintInput& in, const std::vector<uint64_t>& nodes, std::vector<Finding>& out) {
  Finding f = new_finding("llc-across-nodes", "a last-level cache or a die spans NUMA nodes",
                          {"CPUID.04H:EAX[25:14]", "CPUID.8000001DH:EAX[25:14]", "CPUID.80000006H:EDX", "CPUID.1FH", kSrat});
  CpuIdentity id = identify(in.raw->cpus[0]);
  // 6.1's match_llc() (intel_cod_cpu[]): every Intel family 6 model but
  // Haswell-X and Broadwell-X (Cluster-on-Die) is taken for SNC.
  bool intel_snc = !id.amd && id.family == 6 && id.model != 0x3F && id.model != 0x4F;
  std::map<Consumer, std::string> warnings;
  for (const auto& v : in.views) {
    std::vector<std::string> parts;
    bool llc_spans = false;
    if (const CpuGroups* llc = llc_of(v)) {
      auto over = groups_spanning(*llc, nodes);
      if (!over.empty()) {
        llc_spans = true;
        std::string what = v.has_llc ? fmt::format("LLC ({})", v.llc_rule) : "widest cache";
        parts.push_back(fmt::format("{} {}", what, spanning_text(over, nodes)));
        if (v.consumer == Consumer::Hwloc) parts.push_back(hwloc_nesting(over, nodes));
      }
    }
    // A package of one die may hold several nodes (sub-NUMA clustering);
    // where a package has several dies, no die of real parts spans nodes.
    CpuGroups dies = v.groups(Level::Die);
    if (sees_dies(v) && dies.size() > v.groups(Level::Package).size()) {
      auto over = groups_spanning(dies, nodes);
      if (!over.empty()) {
        parts.push_back(fmt::format("die {}", spanning_text(over, nodes)));
        if (v.consumer == Consumer::Hwloc) parts.push_back(hwloc_nesting(over, nodes));
      }
    }
    if (parts.empty()) continue;
    if (is_linux(v.consumer) && llc_spans) {
      const std::vector<uint64_t>& pkg = v.keys[static_cast<size_t>(Level::Package)];
      bool snc = intel_snc && v.consumer == Consumer::Linux6;
      std::string w = topology_sane_warning(group_keys_of(v.llc, nodes.size()), linux_node_numbers(*in.numa, nodes), "llc",
                                            [&](unsigned c, unsigned o) { return snc && pkg[c] == pkg[o]; });
      if (!w.empty()) parts.push_back("prints \"" + w + "\"; the LLC mask is cut at the node"), warnings[v.consumer] = w;
      else if (snc) parts.push_back("no warning: an Intel package's LLC over nodes is taken for SNC and split at the node "
                                    "(cpus_share_cache() false across it)");
    }
    f.inferences.push_back({consumer_name(v.consumer), fmt::format("{}", fmt::join(parts, "; "))});
  }
  if (f.inferences.empty()) return;
  f.inferences.insert(f.inferences.begin(), {"intended", nodes_intended(*in.numa, nodes.size())});
  f.detail = "CPUs that share the last-level cache (or a die, whose L3 QEMU and topolab share by default) are put in "
             "different nodes: the caches say one place, the SRAT another";
  std::string hwloc = "hwloc nests the nodes inside the cache or breaks on it";
  if (warnings.contains(Consumer::Linux6))
    f.symptom = fmt::format("Linux: \"{}\" with a WARNING backtrace at topology_sane (arch/x86/kernel/smpboot.c; once per "
                            "boot, for the first pair of any kind); the MC domain is cut at the node; {}",
                            warnings[Consumer::Linux6], hwloc);
  else
    f.symptom = fmt::format("Linux 6.x splits the LLC at the node without a word (SNC), while sysfs' cache "
                            "shared_cpu_list keeps the whole cache{}; {}",
                            warnings.contains(Consumer::Linux4) ? fmt::format("; Linux 4.x: \"{}\"", warnings[Consumer::Linux4]) : "",
                            hwloc);
  f.seen_in = kSeenLlcAcrossNodes;
  out.push_back(std::move(f));
}

// 2. SMT siblings on different nodes.
void check_smt_across_nodes(const LintInput& in, const std::vector<uint64_t>& nodes, std::vector<Finding>& out) {
  Finding f = new_finding("smt-siblings-across-nodes", "SMT siblings of one core are on different NUMA nodes",
                          {"CPUID.0BH/1FH subleaf 0", "CPUID.8000001EH:EBX[15:8]", kSrat});
  std::string warning;
  for (const auto& v : in.views) {
    CpuGroups cores = v.groups(Level::Core);
    auto over = groups_spanning(cores, nodes);
    if (over.empty()) continue;
    std::string text = fmt::format("core {}", spanning_text(over, nodes));
    if (is_linux(v.consumer)) {
      std::string w = topology_sane_warning(v.keys[static_cast<size_t>(Level::Core)], linux_node_numbers(*in.numa, nodes),
                                            "smt",
                                            [](unsigned, unsigned) { return false; });
      if (warning.empty()) warning = w;
      text += fmt::format("; prints \"{}\"; the SMT mask is cut at the node", w);
    }
    if (v.consumer == Consumer::Hwloc) text += "; " + hwloc_nesting(over, nodes);
    if (v.consumer == Consumer::Edk2) text += " (edk2 reads no SRAT: it places the threads by CPUID only)";
    f.inferences.push_back({consumer_name(v.consumer), text});
  }
  if (f.inferences.empty()) return;
  f.inferences.insert(f.inferences.begin(), {"intended", nodes_intended(*in.numa, nodes.size())});
  f.detail = "threads of one core share its L1 and L2 and cannot be in two memory domains: -numa cpus= (or -numa cpu "
             "with thread-id) splits a core";
  f.symptom = fmt::format("Linux: \"{}\" with a WARNING backtrace at topology_sane (once per boot, for the first pair of "
                          "any kind); the siblings lose their SMT domain "
                          "(each thread a core to the scheduler); hwloc's tree breaks on the core",
                          warning.empty() ? "sched: CPU #N's smt-sibling CPU #M is not on the same node!" : warning);
  f.seen_in = "no report found; QEMU 7.2 accepts -numa cpus= that split a core without a warning (checked: "
              "-smp 4,sockets=2,cores=1,threads=2 with cpus=0,cpus=2 and cpus=1,cpus=3)";
  out.push_back(std::move(f));
}

// A finding on the nodes or the SLIT alone: no CPUID decoder has a say, so
// its views are what Linux and hwloc make of the ACPI tables.
struct TableFinding {
  const char* id;
  const char* title;
  const char* leaf;
  std::string detail, intended, linux_view, hwloc_view, symptom;
  const char* seen_in;
};

void add(TableFinding t, std::vector<Finding>& out) {
  Finding f = new_finding(t.id, t.title, {t.leaf});
  f.detail = std::move(t.detail);
  f.inferences = {{"intended", std::move(t.intended)}, {"linux-6.x", std::move(t.linux_view)}, {"hwloc", std::move(t.hwloc_view)}};
  f.symptom = std::move(t.symptom);
  f.seen_in = t.seen_in;
  out.push_back(std::move(f));
}

constexpr const char* kSeenLegal = "QEMU 7.2 under Linux 6.1 (docs/check.md, NUMA); a warning-level finding: the configuration is legal";

// "node 1 has" / "nodes 1-2 have"
std::string nodes_have(const std::vector<unsigned>& nodes) {
  return fmt::format("node{} {} {}", nodes.size() == 1 ? "" : "s", format_cpu_list(nodes), nodes.size() == 1 ? "has" : "have");
}

// 3. Nodes without CPUs or without memory: legal, and a guest treats them
// apart.
void check_node_contents(const LintInput& in, std::vector<Finding>& out) {
  const NumaConfig& numa = *in.numa;
  std::vector<unsigned> memoryless, cpuless;
  for (unsigned n = 0; n < numa.node_count(); ++n) {
    if (numa.nodes()[n].memory_bytes == 0) memoryless.push_back(n);
    if (numa.nodes()[n].cpus.empty()) cpuless.push_back(n);
  }
  std::string intended = nodes_intended(numa, in.raw->cpus.size());
  if (!memoryless.empty()) {
    unsigned n = memoryless.front();
    add({"numa-node-memoryless", "a NUMA node has CPUs but no memory", kSrat,
         fmt::format("{} CPUs and no memdev: legal (QEMU 7.2 accepts it), but every allocation of its CPUs is remote",
                     nodes_have(memoryless)),
         intended,
         fmt::format("\"Initializing node {} as memoryless\": the node is online with CPUs and no zones; its CPUs "
                     "allocate from the nearest node by the SLIT", n),
         "takes its nodes from Linux (sysfs), not from CPUID: it shows what Linux makes of the node",
         fmt::format("Linux: \"Initializing node {} as memoryless\"; numactl -H shows \"node {} size: 0 MB\"; memory "
                     "policies that bind to the node (numactl --membind, MPOL_BIND) fail", n, n),
         kSeenLegal},
        out);
  }
  if (!cpuless.empty())
    add({"numa-node-cpuless", "a NUMA node has no CPUs (a memory-only node)", kSrat,
         fmt::format("{} no CPUs: legal (QEMU 7.2 accepts it, e.g. for far or CXL-like memory), but no CPU is local to it",
                     nodes_have(cpuless)),
         intended,
         "a memory-only node (N_MEMORY without N_CPU): its memory is used only as fallback or by explicit policy; an "
         "empty cpulist in /sys/devices/system/node",
         "a NUMA node with an empty cpuset, attached at the machine level",
         "numactl -H lists the node with no CPUs; the default local allocation never uses it; tools that pin a task to "
         "\"its\" node find none for it",
         kSeenLegal},
        out);
}

// 4. The SLIT: asymmetric, or with a remote distance Linux refuses.
void check_distances(const LintInput& in, std::vector<Finding>& out) {
  const NumaConfig& numa = *in.numa;
  if (!numa.has_distance_table()) return;
  std::vector<std::string> asymmetric, too_near;
  for (unsigned a = 0; a < numa.node_count(); ++a)
    for (unsigned b = 0; b < numa.node_count(); ++b) {
      if (a < b && numa.distance(a, b) != numa.distance(b, a))
        asymmetric.push_back(fmt::format("{}->{} = {}, {}->{} = {}", a, b, numa.distance(a, b), b, a, numa.distance(b, a)));
      if (a != b && numa.distance(a, b) <= kNumaDistanceLocal)
        too_near.push_back(fmt::format("{}->{} = {}", a, b, numa.distance(a, b)));
    }
  if (!too_near.empty())
    add({"numa-slit-invalid", "a remote SLIT distance of 10: Linux throws the whole SLIT away", kSlit,
         fmt::format("{}: QEMU 7.2 refuses only distances below 10, Linux's slit_valid() every remote one <= 10",
                     fmt::join(too_near, "; ")),
         fmt::format("SLIT {}", fmt::join(too_near, "; ")),
         "\"ACPI: SLIT table looks invalid. Not used.\": every remote distance becomes 20 (REMOTE_DISTANCE), the "
         "table's other values are lost",
         "reads Linux's node distances (all 20), not the SLIT",
         "Linux: ACPI: SLIT table looks invalid. Not used. (numactl -H shows 10/20 instead of the table)",
         "QEMU 7.2 under Linux 6.1 (-numa dist,val=10 accepted, the SLIT then refused: docs/check.md, NUMA)"},
        out);
  if (!asymmetric.empty())
    add({"numa-distances-asymmetric", "the SLIT is asymmetric", kSlit,
         fmt::format("{}: QEMU 7.2 fills a missing direction from the other (a table given one way is symmetric), "
                     "refuses an incomplete asymmetric one, and accepts a complete asymmetric one",
                     fmt::join(asymmetric, "; ")),
         fmt::format("SLIT {}", fmt::join(asymmetric, "; ")),
         "takes it without a word (no symmetry check): node_distance(a, b) != node_distance(b, a), so the page "
         "allocator's fallback order and the scheduler's NUMA levels differ by direction",
         "keeps the matrix as Linux gives it (/sys/devices/system/node/node*/distance)",
         "no message: numactl -H shows the asymmetric matrix; NUMA balancing and fallback allocation treat a pair "
         "differently by direction",
         "QEMU 7.2 accepts complete asymmetric tables (docs/check.md, NUMA); real SLITs are symmetric"},
        out);
}

// 5. AMD's node ID (0x8000001E ECX[7:0]) against the SRAT.
void check_amd_node_id(const LintInput& in, const std::vector<uint64_t>& nodes, std::vector<Finding>& out) {
  const RawCpuid& raw = *in.raw;
  CpuIdentity id = identify(raw.cpus[0]);
  if (!id.amd || id.max_extended < 0x8000001E) return;
  std::vector<uint64_t> node_ids(raw.cpus.size());
  for (unsigned cpu = 0; cpu < raw.cpus.size(); ++cpu) node_ids[cpu] = raw.cpus[cpu].get(0x8000001E).ecx & 0xff;
  CpuGroups same_node_id = group_by_key(node_ids), same_node = group_by_key(nodes);
  auto by_node_id = groups_spanning(same_node_id, nodes);  // a NodeId over several nodes
  auto by_srat = groups_spanning(same_node, node_ids);     // a node over several NodeIds
  if (by_node_id.empty() && by_srat.empty()) return;
  std::vector<std::string> problems;
  for (const auto* g : by_node_id)
    problems.push_back(fmt::format("NodeId {} on CPUs {} spans SRAT nodes", node_ids[g->front()], with_nodes(*g, nodes)));
  for (const auto* g : by_srat) {
    std::set<uint64_t> ids;
    for (unsigned cpu : *g) ids.insert(node_ids[cpu]);
    problems.push_back(fmt::format("SRAT node {} (CPUs {}) has NodeIds {}", nodes[g->front()], format_cpu_list(*g), fmt::join(ids, ", ")));
  }
  unsigned per_socket = ((raw.cpus[0].get(0x8000001E).ecx >> 8) & 7) + 1;
  Finding f = new_finding("amd-node-id-vs-numa", "AMD's node ID (0x8000001E ECX) disagrees with the SRAT's nodes",
                          {"CPUID.8000001EH:ECX[7:0]", "CPUID.8000001EH:ECX[10:8]", kSrat});
  f.detail = fmt::format("{}{}; NodesPerProcessor {}. QEMU derives the NodeId from dies (socket << bits(dies) | die), "
                         "never from -numa; TOPOEXT is {}",
                         problems.front(), problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : "",
                         per_socket, id.topoext ? "set" : "clear (Linux and hwloc do not read the leaf)");
  f.inferences = {{"intended", nodes_intended(*in.numa, nodes.size())},
                  {"linux-6.x", fmt::format("places CPUs in nodes by the SRAT, but with TOPOEXT takes the die ID (6.1 "
                                        "cpu_die_id, 6.9+ amd_node_id) and {} node(s) per socket from this leaf: "
                                        "amd_nb, EDAC and the AMD uncore PMUs group CPUs by NodeId",
                                        per_socket)},
                  {"hwloc", "takes its NUMA nodes from Linux; its x86 backend alone (no OS nodes: "
                            "HWLOC_X86_DISC_FLAG_TOPOEXT_NUMANODES) builds them from the NodeIds instead"}};
  f.symptom = "/sys/devices/system/cpu/cpu*/topology/die_id (6.1) or the AMD node grouping does not match "
              "/sys/devices/system/node; per-node AMD drivers and perf's uncore count the wrong CPUs together";
  f.seen_in = "QEMU 7.2 (NodeId from dies; nodes crosswise leave it unchanged: docs/check.md, NUMA); hwloc #338 (the "
              "0x8000001E nodes ignore what the OS says)";
  out.push_back(std::move(f));
}

// 6. Nodes that split packages, with no L3 to say which cores share.
void check_split_without_l3(const LintInput& in, const std::vector<uint64_t>& nodes, std::vector<Finding>& out) {
  std::vector<const ConsumerView*> readers;
  for (const auto& v : in.views)
    if (v.reads_caches) readers.push_back(&v);
  if (readers.empty()) return;
  for (const auto* v : readers)
    if (v->cache(3, 'u')) return;
  std::set<uint64_t> cpu_nodes(nodes.begin(), nodes.end());
  size_t packages = in.views.front().groups(Level::Package).size();
  if (cpu_nodes.size() <= packages) return;
  Finding f = new_finding("numa-split-without-l3", "NUMA nodes split packages and no L3 is reported (l3-cache=off)",
                          {"CPUID.04H subleaf 3", "CPUID.8000001DH subleaf 3", "CPUID.80000006H:EDX", kSrat});
  f.detail = fmt::format("{} nodes with CPUs over {} package{}: a package spans nodes, so Linux sets "
                         "x86_has_numa_in_package and builds SMT, CLS, MC and the NUMA levels with no package level; "
                         "with no L3 the MC domain is whatever Linux takes for the LLC",
                         cpu_nodes.size(), packages, packages == 1 ? "" : "s");
  f.inferences.push_back({"intended", nodes_intended(*in.numa, nodes.size())});
  for (const auto* v : readers) {
    if (v->has_llc) {
      bool per_core = v->llc == v->groups(Level::Core);
      f.inferences.push_back(
          {consumer_name(v->consumer),
           fmt::format("LLC {} ({}): {}", format_groups(v->llc), v->llc_rule,
                       per_core ? "the MC domain is one core, so no domain below NUMA shares a cache between cores: "
                                  "cpus_share_cache() is false between any two cores and wakeups never take the "
                                  "shared-LLC path; load moves between a node's cores only by NUMA-level balancing"
                                : "the MC domain is this group cut at the node (with topology_sane's llc-sibling "
                                  "warning where it spans nodes)")});
    } else {
      f.inferences.push_back({consumer_name(v->consumer), "no L3: each node holds its cores' L2s directly"});
    }
  }
  f.symptom = "Linux builds no cache domain inside a node (the scheduler sees a node as a set of unrelated cores), "
              "where real sub-NUMA clustering has an L3 per node (-machine smp-cache.0.cache=l3,... on the level of "
              "the node)";
  f.seen_in = "no report of the combination found; QEMU's l3-cache=off and Linux's L2-as-LLC fallback are measured in "
              "docs/results.md (the l3-cache experiment)";
  out.push_back(std::move(f));
}

}  // namespace

std::string summarize_numa(const NumaConfig& numa, size_t cpus) {
  std::vector<std::string> parts;
  for (unsigned n = 0; n < numa.node_count(); ++n) {
    std::vector<unsigned> mine;
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
      if (numa.node_of_cpu(cpu) == n) mine.push_back(cpu);
    parts.push_back(fmt::format("{} {} MiB", mine.empty() ? "no CPUs" : format_cpu_list(mine), numa.nodes()[n].memory_bytes >> 20));
  }
  return fmt::format("{} node{}: {}{}", numa.node_count(), numa.node_count() == 1 ? "" : "s", fmt::join(parts, " | "),
                     numa.has_distance_table() ? "; SLIT given" : "; no SLIT (10 local, 20 remote)");
}

void check_numa_patterns(const LintInput& in, std::vector<Finding>& out) {
  if (!in.numa || !in.numa->enabled()) return;
  std::vector<uint64_t> nodes = node_keys(*in.numa, in.raw->cpus.size());
  check_llc_across_nodes(in, nodes, out);
  check_smt_across_nodes(in, nodes, out);
  check_node_contents(in, out);
  check_distances(in, out);
  check_amd_node_id(in, nodes, out);
  check_split_without_l3(in, nodes, out);
}

}  // namespace topolab
