// SPDX-License-Identifier: GPL-2.0-or-later
// -numa and -object (model/numa.h) against a topology and a RAM size, and
// the SRAT, SLIT and HMAT built from what is accepted (firmware/acpi.h).
// The input is lines: the -smp argument, -m in MiB, then options, "o " for
// an -object and "n " for a -numa, in order; a line "h" is -machine hmat=on.
// Invariants:
// - a refusal is a ConfigError of one line naming -numa or -object; an
//   AcpiError only for tables that do not fit the BIOS area;
// - an accepted configuration is complete: every possible CPU in exactly
//   one node, each node's CPU list sorted and the CPUs' node() agreeing,
//   the nodes' memory adding up to -m, distances 10 on the diagonal and
//   more than 9 off it, srat_node_order() naming every node with CPUs or
//   memory once;
// - the SRAT a guest reads has one enabled processor entry per possible
//   CPU, in index order, with its APIC ID and node; enabled memory entries
//   apart, each of a node with memory, inside guest RAM and adding up to the
//   RAM less QEMU's hole at [640 KiB, 1 MiB) (unless a node ends inside the
//   hole: QEMU's build_srat then starts the next node at 1 MiB and its range
//   runs past the RAM, which topolab keeps); the SLIT, when -numa dist was
//   given, is distance() byte for byte;
// - the HMAT is there exactly with hmat=on; its structures add up to its
//   length, one proximity structure per node in order, every locality
//   structure listing the nodes with CPUs as initiators and every node as a
//   target, every cache structure naming a node.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/memory_map.h"
#include "firmware/acpi.h"
#include "fuzz/fuzz_check.h"
#include "model/numa.h"

using namespace topolab;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMaxRamMib = 64 * 1024;  // reserved, only touched pages cost
constexpr uint64_t kHoleStart = 640 * 1024, kHoleEnd = kMiB;

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = text.find('\n', at);
    out.emplace_back(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return out;
}

void check_tables(const GuestRam& ram, const AcpiTables& t, const Topology& topology, const NumaConfig& numa,
                  uint64_t ram_bytes) {
  FUZZ_CHECK(t.srat != 0, "no SRAT with {} nodes", numa.node_count());
  FUZZ_CHECK((t.slit != 0) == numa.has_distance_table(), "SLIT {:#x} with a table: {}", t.slit,
             numa.has_distance_table());
  FUZZ_CHECK(std::memcmp(ram.data() + t.srat, "SRAT", 4) == 0, "SRAT signature");
  const uint32_t length = ram.read<uint32_t>(t.srat + 4);
  uint8_t sum = 0;
  for (uint8_t b : ram.bytes(t.srat, length)) sum = static_cast<uint8_t>(sum + b);
  FUZZ_CHECK(sum == 0 && length >= 48, "SRAT checksum or length {}", length);
  uint32_t at = t.srat + 48;
  const uint32_t end = t.srat + length;
  unsigned cpu = 0;
  uint64_t memory = 0, node_end = 0;
  bool ends_in_hole = false;
  for (const NumaNode& node : numa.nodes()) {
    node_end += node.memory_bytes;
    ends_in_hole |= node.memory_bytes && node_end > kHoleStart && node_end < kHoleEnd;
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  while (at < end) {
    const uint8_t type = ram.read<uint8_t>(at), len = ram.read<uint8_t>(at + 1);
    FUZZ_CHECK(len >= 2 && at + len <= end, "SRAT entry type {} length {}", type, len);
    if (type == 0 || type == 2) {
      FUZZ_CHECK(cpu < topology.max_cpus() && memory == 0 && ranges.empty(), "processor entry {} after memory", cpu);
      const uint32_t apic_id = type == 0 ? ram.read<uint8_t>(at + 3) : ram.read<uint32_t>(at + 8);
      const uint32_t node = type == 0 ? ram.read<uint8_t>(at + 2) : ram.read<uint32_t>(at + 4);
      const uint32_t flags = ram.read<uint32_t>(at + (type == 0 ? 4 : 12));
      FUZZ_CHECK(len == (type == 0 ? 16 : 24) && (type == 0) == (topology.apic_id(cpu) <= 254), "CPU {} entry", cpu);
      FUZZ_CHECK(apic_id == topology.apic_id(cpu) && node == numa.node_of_cpu(cpu) && flags == 1,
                 "CPU {}: APIC ID {:#x} node {} flags {}", cpu, apic_id, node, flags);
      ++cpu;
    } else {
      FUZZ_CHECK(type == 1 && len == 40, "SRAT entry type {} length {}", type, len);
      const uint32_t node = ram.read<uint32_t>(at + 2), flags = ram.read<uint32_t>(at + 28);
      const uint64_t base = ram.read<uint64_t>(at + 8), size = ram.read<uint64_t>(at + 16);
      if (flags & 1) {
        FUZZ_CHECK(size > 0 && node < numa.node_count() && numa.nodes()[node].memory_bytes > 0,
                   "memory entry of node {} ({:#x} bytes)", node, size);
        FUZZ_CHECK(ends_in_hole || ram.is_ram(base, size), "memory entry [{:#x}, +{:#x}) outside RAM", base, size);
        for (const auto& [b, e] : ranges) FUZZ_CHECK(base >= e || base + size <= b, "memory entries overlap");
        ranges.emplace_back(base, base + size);
        memory += size;
      } else {
        FUZZ_CHECK(flags == 0 && base == 0 && size == 0 && node == 0, "a padding entry that is not zero");
      }
    }
    at += len;
  }
  FUZZ_CHECK(cpu == topology.max_cpus(), "{} processor entries for {} CPUs", cpu, topology.max_cpus());
  const uint64_t hole = ram_bytes <= kHoleStart ? 0 : std::min(ram_bytes, kHoleEnd) - kHoleStart;
  FUZZ_CHECK(ends_in_hole || memory == ram_bytes - hole, "SRAT memory {:#x}, RAM {:#x} less the hole {:#x}", memory, ram_bytes, hole);
  if (t.slit) {
    FUZZ_CHECK(ram.read<uint64_t>(t.slit + 36) == numa.node_count(), "SLIT locality count");
    for (unsigned a = 0; a < numa.node_count(); ++a)
      for (unsigned b = 0; b < numa.node_count(); ++b)
        FUZZ_CHECK(ram.read<uint8_t>(t.slit + 44 + a * numa.node_count() + b) == numa.distance(a, b),
                   "SLIT [{}][{}]", a, b);
  }
}

void check_hmat(const GuestRam& ram, const AcpiTables& t, const NumaConfig& numa) {
  FUZZ_CHECK((t.hmat != 0) == numa.hmat_enabled(), "HMAT {:#x} with hmat={}", t.hmat, numa.hmat_enabled());
  if (!t.hmat) return;
  const uint32_t length = ram.read<uint32_t>(t.hmat + 4), end = t.hmat + length, nodes = numa.node_count();
  uint8_t sum = 0;
  for (uint8_t b : ram.bytes(t.hmat, length)) sum = static_cast<uint8_t>(sum + b);
  FUZZ_CHECK(sum == 0 && std::memcmp(ram.data() + t.hmat, "HMAT", 4) == 0, "HMAT signature or checksum");
  std::vector<uint32_t> initiators;
  for (uint32_t n = 0; n < nodes; ++n)
    if (!numa.nodes()[n].cpus.empty()) initiators.push_back(n);
  uint32_t at = t.hmat + 40, proximity = 0;
  while (at < end) {
    const uint16_t type = ram.read<uint16_t>(at);
    const uint32_t len = ram.read<uint32_t>(at + 4);
    FUZZ_CHECK(len >= 8 && at + len <= end, "HMAT structure type {} length {}", type, len);
    if (type == 0) {
      FUZZ_CHECK(len == 40 && ram.read<uint32_t>(at + 16) == proximity, "proximity structure {}", proximity);
      ++proximity;
    } else if (type == 1) {
      const uint32_t s = ram.read<uint32_t>(at + 12), targets = ram.read<uint32_t>(at + 16);
      FUZZ_CHECK(s == initiators.size() && targets == nodes && len == 32 + 4 * s + 4 * targets + 2 * s * targets,
                 "locality structure of {} initiators, {} targets, {} bytes", s, targets, len);
      for (uint32_t i = 0; i < s; ++i) FUZZ_CHECK(ram.read<uint32_t>(at + 32 + 4 * i) == initiators[i], "initiator {}", i);
      for (uint32_t d = 0; d < targets; ++d) FUZZ_CHECK(ram.read<uint32_t>(at + 32 + 4 * s + 4 * d) == d, "target {}", d);
    } else {
      FUZZ_CHECK(type == 2 && len == 32 && ram.read<uint32_t>(at + 8) < nodes, "HMAT structure type {}", type);
    }
    at += len;
  }
  FUZZ_CHECK(proximity == nodes, "{} proximity structures for {} nodes", proximity, nodes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> lines = lines_of(std::string_view(reinterpret_cast<const char*>(data), size));
  if (lines.size() < 2) return 0;
  std::optional<Topology> parsed;
  try {
    parsed = Topology::parse(lines[0].empty() ? "1" : lines[0]);
  } catch (const ConfigError&) {
    return 0;
  }
  const Topology& topology = *parsed;
  uint64_t ram_mib = 0;
  for (char c : lines[1]) {
    if (c < '0' || c > '9' || ram_mib > kMaxRamMib) return 0;
    ram_mib = ram_mib * 10 + static_cast<uint64_t>(c - '0');
  }
  if (ram_mib < 2 || ram_mib > kMaxRamMib) return 0;
  std::vector<std::string> numa_options, objects;
  bool hmat = false;
  for (size_t i = 2; i < lines.size(); ++i) {
    hmat |= lines[i] == "h";
    if (lines[i].starts_with("o ")) objects.push_back(lines[i].substr(2));
    else if (lines[i].starts_with("n ")) numa_options.push_back(lines[i].substr(2));
  }
  const uint64_t ram_bytes = ram_mib * kMiB;
  NumaConfig numa;
  try {
    numa = NumaOptions(numa_options, objects, hmat).complete(topology, ram_bytes);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    FUZZ_CHECK(what.find('\n') == std::string::npos && (what.starts_with("-numa") || what.starts_with("-object")),
               "refusal not one line naming its option: '{}'", what);
    return 0;
  }
  if (!numa.enabled()) return 0;

  // The configuration is complete.
  uint64_t memory = 0;
  std::vector<unsigned> seen(topology.max_cpus(), 0);
  for (unsigned n = 0; n < numa.node_count(); ++n) {
    const NumaNode& node = numa.nodes()[n];
    memory += node.memory_bytes;
    for (size_t i = 0; i < node.cpus.size(); ++i) {
      FUZZ_CHECK(node.cpus[i] < topology.max_cpus() && (i == 0 || node.cpus[i - 1] < node.cpus[i]),
                 "node {}'s CPU list", n);
      FUZZ_CHECK(numa.node_of_cpu(node.cpus[i]) == n, "CPU {} in node {} but node_of_cpu {}", node.cpus[i], n,
                 numa.node_of_cpu(node.cpus[i]));
      ++seen[node.cpus[i]];
    }
    for (unsigned to = 0; to < numa.node_count(); ++to)
      FUZZ_CHECK(n == to ? numa.distance(n, to) == 10 : numa.distance(n, to) >= 10, "distance {} -> {}: {}", n, to,
                 numa.distance(n, to));
  }
  for (unsigned cpu = 0; cpu < topology.max_cpus(); ++cpu) FUZZ_CHECK(seen[cpu] == 1, "CPU {} in {} nodes", cpu, seen[cpu]);
  FUZZ_CHECK(memory == ram_bytes, "nodes' memory {:#x}, RAM {:#x}", memory, ram_bytes);
  const std::vector<unsigned> order = srat_node_order(numa);
  std::vector<unsigned> named(numa.node_count(), 0);
  for (unsigned n : order) ++named[n];
  for (unsigned n = 0; n < numa.node_count(); ++n)
    FUZZ_CHECK(named[n] == ((!numa.nodes()[n].cpus.empty() || numa.nodes()[n].memory_bytes) ? 1u : 0u),
               "node {} named {} times in the SRAT's order", n, named[n]);

  // The tables.
  GuestRam ram(memory_map::pc_ram_regions(ram_bytes));
  AcpiTables t;
  try {
    t = build_acpi_tables(ram, topology, numa);
  } catch (const AcpiError& e) {
    FUZZ_CHECK(std::string(e.what()).find("need") != std::string::npos, "AcpiError: {}", e.what());
    return 0;
  }
  check_tables(ram, t, topology, numa, ram_bytes);
  check_hmat(ram, t, numa);
  return 0;
}
