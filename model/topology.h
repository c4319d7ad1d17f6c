// SPDX-License-Identifier: GPL-2.0-or-later
// The CPU topology of a machine: QEMU's -smp syntax, QEMU's APIC-ID layout,
// and conversions between CPU index, (package, die, module, core, thread)
// and APIC ID. Pure; no emulation here.
//
// APIC-ID layout (docs/topology.md, QEMU include/hw/i386/topology.h): each
// level gets a field ceil(log2(count)) bits wide, SMT in the low bits, then
// core, module, die, package. Counts that are not powers of two leave gaps
// in the APIC-ID space, so consumers must enumerate IDs, never assume them
// dense.
//
// Hybrid topologies (Intel's P-core/E-core parts, SDM vol. 1 "Hybrid
// architecture") put two kinds of module in every die: P-modules of Core
// cores and E-modules of Atom cores, each kind with its own cores per module
// and threads per core. The APIC-ID fields stay one layout for the package,
// wide enough for the larger kind (SDM vol. 3A 10.4.5: the shifts in leaf
// 0x1F are the same on every logical processor), so the smaller kind leaves
// gaps. docs/topology.md describes the -smp spelling.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"

namespace topolab {

struct CpuCoords {
  unsigned package = 0, die = 0, module = 0, core = 0, thread = 0;
  bool operator==(const CpuCoords&) const = default;
};

// The core types of leaf 1AH EAX[31:24] (SDM vol. 2A, "Hybrid Information
// Enumeration Leaf").
enum class CoreType : uint8_t { Atom = 0x20, Core = 0x40 };

// One kind of module in every die: `modules` of them, each with `cores`
// cores of `threads` threads.
struct ModuleKind {
  CoreType type = CoreType::Core;
  unsigned modules = 1, cores = 1, threads = 1;
  unsigned threads_per_module() const { return cores * threads; }
  bool operator==(const ModuleKind&) const = default;
};

// "P" for Core, "E" for Atom: the letter of the -smp keys and the reports.
const char* kind_letter(CoreType type);

// ceil(log2(n)), 0 for n <= 1: the width of an APIC-ID field that must hold
// IDs 0..n-1, and what Linux computes from a CPUID sharing count.
unsigned bit_width_for_count(unsigned n);

class Topology {
 public:
  static constexpr unsigned kMaxCpus = 4096;
  // The largest APIC ID an xAPIC can address; 0xFF is its broadcast ID.
  static constexpr uint32_t kMaxXApicId = 0xFE;

  struct Counts {
    unsigned sockets = 1, dies = 1, modules = 1, cores = 1, threads = 1;
  };

  // Parses QEMU's -smp argument, e.g. "16,sockets=1,cores=8,threads=2",
  // filling in missing counts as QEMU 7.2 does (cores preferred over
  // sockets), or the hybrid spelling, e.g.
  // "sockets=1,p-modules=8,p-threads=2,e-modules=2,e-cores=4". Throws
  // ConfigError.
  static Topology parse(std::string_view smp);
  // All counts per parent level; cpus = 0 means every CPU is present.
  static Topology from_counts(Counts counts, unsigned cpus = 0);
  // A hybrid die: the P-kind (Core) modules first, then the E-kind (Atom)
  // ones, as Alder Lake numbers its P-cores first.
  static Topology hybrid(unsigned sockets, unsigned dies, std::vector<ModuleKind> kinds, unsigned cpus = 0);

  unsigned cpus() const { return cpus_; }          // present at boot
  unsigned max_cpus() const { return max_cpus_; }  // the whole hierarchy
  // On a hybrid topology, modules is the sum over the kinds and cores and
  // threads the largest: the counts the APIC-ID fields are sized for.
  const Counts& counts() const { return counts_; }
  unsigned threads_per_core() const { return counts_.threads; }
  unsigned threads_per_module() const { return counts_.threads * counts_.cores; }
  unsigned threads_per_die() const { return threads_per_die_; }
  unsigned threads_per_package() const { return threads_per_die() * counts_.dies; }

  // Hybrid: more than one kind of module, or a kind spelled p-/e-.
  bool is_hybrid() const { return hybrid_; }
  // The kinds of module in each die, in CPU-index order (one kind for a
  // topology that is not hybrid).
  const std::vector<ModuleKind>& module_kinds() const { return kinds_; }
  const ModuleKind& kind_of_module(unsigned module) const;
  const ModuleKind& kind_of(unsigned index) const { return kind_of_module(coords_of(index).module); }
  CoreType core_type(unsigned index) const { return kind_of(index).type; }
  // The kind whose cores are of `type` (the one kind of a topology that is
  // not hybrid is Core). Throws std::out_of_range when there is none.
  const ModuleKind& kind_of_type(CoreType type) const;
  bool has_core_type(CoreType type) const;

  // Bit offsets of each level's field in the APIC ID.
  unsigned core_offset() const { return core_offset_; }
  unsigned module_offset() const { return module_offset_; }
  unsigned die_offset() const { return die_offset_; }
  unsigned package_offset() const { return package_offset_; }

  CpuCoords coords_of(unsigned index) const;
  unsigned index_of(const CpuCoords& c) const;
  uint32_t apic_id_of(const CpuCoords& c) const;
  uint32_t apic_id(unsigned index) const { return apic_id_of(coords_of(index)); }
  // nullopt for an ID in a gap or beyond the hierarchy.
  std::optional<CpuCoords> coords_of_apic_id(uint32_t apic_id) const;
  std::optional<unsigned> index_of_apic_id(uint32_t apic_id) const;
  // Highest APIC ID of a present CPU.
  uint32_t max_apic_id() const { return apic_id(cpus_ - 1); }
  // Hot-pluggable CPUs count too: QEMU sizes the APIC-ID space by maxcpus.
  bool needs_x2apic() const { return apic_id(max_cpus_ - 1) > kMaxXApicId; }

  // "2 sockets x 3 cores x 2 threads" (levels of count 1 below the socket
  // are left out).
  std::string describe() const;
  // The canonical -smp argument, e.g. "12,sockets=2,dies=1,cores=3,threads=2".
  std::string to_smp_arg() const;

 private:
  Topology(Counts counts, unsigned cpus);
  Topology(unsigned sockets, unsigned dies, std::vector<ModuleKind> kinds, bool hybrid, unsigned cpus);

  Counts counts_;
  std::vector<ModuleKind> kinds_;
  bool hybrid_ = false;
  unsigned threads_per_die_ = 1;
  unsigned cpus_ = 1, max_cpus_ = 1;
  unsigned core_offset_ = 0, module_offset_ = 0, die_offset_ = 0, package_offset_ = 0;
};

}  // namespace topolab
