// SPDX-License-Identifier: GPL-2.0-or-later
// NUMA nodes as QEMU 7.2's command line makes them: -numa node / dist / cpu
// and -object memory-backend-ram, checked with QEMU's rules and messages
// (hw/core/numa.c, hw/core/machine.c), then completed as QEMU completes
// them: CPUs no node names go to node (socket % nodes)
// (x86_get_default_cpu_node_id), the local distance is 10 and a missing
// direction takes the other's value. Pure: the ACPI tables (SRAT, SLIT),
// the views and `check` read the result. docs/numa.md has the rules and the
// messages side by side with QEMU's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/topology.h"

namespace topolab {

// QEMU's limits and ACPI's distances (include/sysemu/numa.h).
inline constexpr unsigned kMaxNumaNodes = 128;
inline constexpr uint8_t kNumaDistanceLocal = 10;   // NUMA_DISTANCE_MIN, SLIT's local value
inline constexpr uint8_t kNumaDistanceRemote = 20;  // NUMA_DISTANCE_DEFAULT: what Linux assumes with no SLIT

struct NumaNode {
  uint64_t memory_bytes = 0;
  std::string memdev;          // the backend's id; empty for a node without memory
  std::vector<unsigned> cpus;  // CPU indices (up to maxcpus), ascending
  bool operator==(const NumaNode&) const = default;
};

class NumaConfig {
 public:
  // No -numa: one implicit node, as a guest without SRAT assumes.
  bool enabled() const { return !nodes_.empty(); }
  unsigned node_count() const { return static_cast<unsigned>(nodes_.size()); }
  const std::vector<NumaNode>& nodes() const { return nodes_; }
  // The node of every possible CPU (0 without NUMA).
  unsigned node_of_cpu(unsigned index) const { return index < node_of_cpu_.size() ? node_of_cpu_[index] : 0; }
  // The CPUs node_of_cpu() knows: every possible one (maxcpus) with NUMA.
  unsigned possible_cpus() const { return static_cast<unsigned>(node_of_cpu_.size()); }
  // -numa dist given: the guest gets a SLIT. Otherwise distance() is what
  // a guest assumes without one (10 local, 20 remote).
  bool has_distance_table() const { return !distance_.empty(); }
  uint8_t distance(unsigned from, unsigned to) const;
  // What QEMU warns about and still starts (CPUs left to the default node).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // "-numa node,... -numa dist,..." as given: reports and diffs name it.
  const std::string& arg() const { return arg_; }

  bool operator==(const NumaConfig&) const = default;

 private:
  friend class NumaCompletion;
  std::vector<NumaNode> nodes_;
  std::vector<unsigned> node_of_cpu_;
  std::vector<std::vector<uint8_t>> distance_;  // [from][to], empty without -numa dist
  std::vector<std::string> warnings_;
  std::string arg_;
};

// The nodes in the order the SRAT first names them (firmware/acpi.h): the
// processor entries, every possible CPU in index order, then the memory
// entries in node order. A node with neither CPUs nor memory is not there.
// Linux numbers its nodes in this order (acpi_map_pxm_to_node).
std::vector<unsigned> srat_node_order(const NumaConfig& numa);

// The -numa and -object options of one command line, in the order given.
// complete() checks and completes them as QEMU does once the machine's
// topology and RAM size are known. Every error is a ConfigError with
// QEMU's message: "-numa TEXT: MESSAGE" for one option's, "-numa: MESSAGE"
// for the whole configuration's.
class NumaOptions {
 public:
  NumaOptions(std::vector<std::string> numa, std::vector<std::string> objects)
      : numa_(std::move(numa)), objects_(std::move(objects)) {}
  NumaConfig complete(const Topology& topology, uint64_t ram_bytes) const;

 private:
  std::vector<std::string> numa_, objects_;
};

}  // namespace topolab
