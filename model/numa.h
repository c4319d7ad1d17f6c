// SPDX-License-Identifier: GPL-2.0-or-later
// NUMA nodes as QEMU 7.2's command line makes them: -numa node / dist / cpu
// and -object memory-backend-ram, checked with QEMU's rules and messages
// (hw/core/numa.c, hw/core/machine.c), then completed as QEMU completes
// them: CPUs no node names go to node (socket % nodes)
// (x86_get_default_cpu_node_id), the local distance is 10 and a missing
// direction takes the other's value. With -machine hmat=on, initiator=,
// -numa hmat-lb and -numa hmat-cache describe ACPI 6.3's HMAT the same way
// (hw/core/numa.c parse_numa_hmat_lb/_cache). Pure: the ACPI tables (SRAT,
// SLIT, HMAT), the views and `check` read the result. docs/numa.md has the rules and the
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

// HMAT (ACPI 6.3 §5.2.27) as -numa hmat-lb and hmat-cache give it. The
// numbers are QEMU's spellings: the hierarchy is the structure's flags
// [3:0] (0 memory, 1..3 the memory-side cache level), the data type its
// Data Type (0..2 access/read/write latency, 3..5 the bandwidths).
inline constexpr unsigned kHmatHierarchies = 4, kHmatDataTypes = 6;
inline constexpr uint8_t kHmatFirstBandwidth = 3;  // data types below are latencies
inline constexpr unsigned kHmatCacheLevels = 3;

// One System Locality Latency and Bandwidth Information structure's data.
struct HmatLocality {
  struct Entry {
    unsigned initiator = 0, target = 0;
    uint64_t value = 0;  // as given: ns or bytes/s; 0 for "not given"
    bool operator==(const Entry&) const = default;
  };
  uint8_t hierarchy = 0, data_type = 0;
  // QEMU's base unit in ns or bytes/s, as parse_numa_hmat_lb leaves it
  // (UINT64_MAX when every latency given is 0); the table divides by it.
  uint64_t base = 0;
  std::vector<Entry> entries;  // in the order given
  bool is_latency() const { return data_type < kHmatFirstBandwidth; }
  bool operator==(const HmatLocality&) const = default;
};

// One Memory Side Cache Information structure's data.
struct HmatCache {
  unsigned node = 0, level = 0;  // level 1..3
  uint64_t size = 0;
  uint8_t associativity = 0;  // 0 none, 1 direct, 2 complex
  uint8_t policy = 0;         // 0 none, 1 write-back, 2 write-through
  uint16_t line = 0;
  bool operator==(const HmatCache&) const = default;
};

struct Hmat {
  // Per node: the initiator= given, or the node itself once it has a CPU
  // (machine_set_cpu_numa_node); nullopt for neither.
  std::vector<std::optional<unsigned>> initiator;
  // The structures QEMU builds, in its order: hierarchy, then data type,
  // only those given at least one entry.
  std::vector<HmatLocality> localities;
  // Node order, then level 1 up (levels are given without gaps).
  std::vector<HmatCache> caches;
  bool operator==(const Hmat&) const = default;
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
  // -machine hmat=on: the guest gets an HMAT (with -numa only, as QEMU).
  bool hmat_enabled() const { return hmat_enabled_; }
  const Hmat& hmat() const { return hmat_; }

  bool operator==(const NumaConfig&) const = default;

 private:
  friend class NumaCompletion;
  std::vector<NumaNode> nodes_;
  std::vector<unsigned> node_of_cpu_;
  std::vector<std::vector<uint8_t>> distance_;  // [from][to], empty without -numa dist
  std::vector<std::string> warnings_;
  std::string arg_;
  bool hmat_enabled_ = false;
  Hmat hmat_;
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
// for the whole configuration's. `hmat` is -machine hmat=on.
class NumaOptions {
 public:
  NumaOptions(std::vector<std::string> numa, std::vector<std::string> objects, bool hmat = false)
      : numa_(std::move(numa)), objects_(std::move(objects)), hmat_(hmat) {}
  NumaConfig complete(const Topology& topology, uint64_t ram_bytes) const;

 private:
  std::vector<std::string> numa_, objects_;
  bool hmat_ = false;
};

}  // namespace topolab
