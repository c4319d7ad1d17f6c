// SPDX-License-Identifier: GPL-2.0-or-later
// The topology lint behind `topolab check`: decodes a machine's raw leaves
// as each consumer does (consumer_views.h) and reports every disagreement
// between the consumers and every known-bad pattern VMMs keep shipping.
// Each finding names the leaves, what each consumer infers, the symptom in
// that consumer and where the pattern was seen in the wild. Pure: the
// formatting lives in lab/check_report.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lab/consumer_views.h"

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
};

// Decodes `raw` for each of `consumers` (kConsumers when empty).
LintInput decode_for_lint(const RawCpuid& raw, const std::vector<Consumer>& consumers);

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

// ---- the checks, by family (topology_lint.cc, topology_lint_leaves.cc) -----

void check_disagreements(const LintInput& in, std::vector<Finding>& out);
void check_cache_patterns(const LintInput& in, std::vector<Finding>& out);
void check_amd_patterns(const LintInput& in, std::vector<Finding>& out);
void check_apic_id_patterns(const LintInput& in, std::vector<Finding>& out);
void check_count_fields(const LintInput& in, std::vector<Finding>& out);
void check_hybrid(const LintInput& in, std::vector<Finding>& out);

}  // namespace topolab
