// SPDX-License-Identifier: GPL-2.0-or-later
// The topology lint behind `topolab check`: decodes a machine's raw leaves
// as each consumer does (consumer_views.h) and reports every disagreement
// between the consumers and every known-bad pattern VMMs keep shipping.
// Each finding names the leaves, what each consumer infers, the symptom in
// that consumer and where the pattern was seen in the wild. Pure: the
// formatting lives in lab/check_report.h. A topolab machine's NUMA nodes
// (its -numa options) join the input; a dump has none.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lab/consumer_views.h"
#include "model/numa.h"

namespace topolab {

struct Finding {
  std::string id;                  // stable, for CI: "l3-across-packages"
  std::string title;               // one line
  std::vector<std::string> leaves; // "CPUID.04H:EAX[25:14]", ...
  std::string detail;              // what is wrong here, with the numbers
  // What each consumer makes of it: (consumer or "intended", its view).
  std::vector<std::pair<std::string, std::string>> inferences;
  std::string symptom;             // the kernel message, hwloc's or edk2's view
  std::string seen_in;             // the bug reports
};

inline Finding new_finding(std::string id, std::string title, std::vector<std::string> leaves) {
  Finding f;
  f.id = std::move(id);
  f.title = std::move(title);
  f.leaves = std::move(leaves);
  return f;
}

struct LintInput {
  const RawCpuid* raw = nullptr;
  std::vector<ConsumerView> views;  // the consumers asked for, decoded
  // The SRAT's nodes, CPU i being raw->cpus[i]: a topolab machine's -numa
  // options; null for a dump (CPUID does not carry them).
  const NumaConfig* numa = nullptr;
};

// Decodes `raw` for each of `consumers` (kConsumers when empty); `numa`
// must outlive the result.
LintInput decode_for_lint(const RawCpuid& raw, const std::vector<Consumer>& consumers, const NumaConfig* numa = nullptr);

// Every finding, in a fixed order: disagreements first, then the patterns.
std::vector<Finding> lint_topology(const LintInput& in);

// One line per consumer: "2 packages, 6 cores, 2 threads/core (leaf 0xB)".
std::string summarize_topology(const ConsumerView& v);
// "L2 x6 of 2 CPUs; L3 x2 of 6 CPUs" and the LLC.
std::string summarize_caches(const ConsumerView& v);
// Per CPU, the index of its group (UINT64_MAX for a CPU in none).
std::vector<uint64_t> group_keys_of(const CpuGroups& groups, size_t cpus);
// "0-1 | 2-3 | 4-5"
std::string format_groups(const CpuGroups& groups, size_t max_groups = 8);
// The groups of `inner` whose CPUs fall in more than one group of `outer`.
std::vector<const std::vector<unsigned>*> groups_spanning(const CpuGroups& inner, const std::vector<uint64_t>& outer_keys);
// Whether a consumer's view names dies at all: only a walk of leaf 0x1F
// does (Linux 4.x and leaf 0xB fold them into the package).
bool sees_dies(const ConsumerView& v);
// "2 nodes: 0-3 512 MiB | 4-7 512 MiB; SLIT" (topology_lint_numa.cc).
std::string summarize_numa(const NumaConfig& numa, size_t cpus);

// ---- the checks, by family (topology_lint.cc, topology_lint_leaves.cc,
// topology_lint_fields.cc, topology_lint_numa.cc) ---------------------------

void check_disagreements(const LintInput& in, std::vector<Finding>& out);
void check_cache_patterns(const LintInput& in, std::vector<Finding>& out);
void check_amd_patterns(const LintInput& in, std::vector<Finding>& out);
void check_apic_id_patterns(const LintInput& in, std::vector<Finding>& out);
void check_count_fields(const LintInput& in, std::vector<Finding>& out);
void check_hybrid(const LintInput& in, std::vector<Finding>& out);
// Only with in.numa: the nodes against the CPUID groupings, and on their own.
void check_numa_patterns(const LintInput& in, std::vector<Finding>& out);

}  // namespace topolab
