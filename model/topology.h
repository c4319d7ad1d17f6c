// The CPU topology of a machine: QEMU's -smp syntax, QEMU's APIC-ID layout,
// and conversions between CPU index, (package, die, module, core, thread)
// and APIC ID. Pure; no emulation here.
//
// APIC-ID layout (REFERENCE.md §1, QEMU include/hw/i386/topology.h): each
// level gets a field ceil(log2(count)) bits wide, SMT in the low bits, then
// core, module, die, package. Counts that are not powers of two leave gaps
// in the APIC-ID space, so consumers must enumerate IDs, never assume them
// dense.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/errors.h"

namespace topolab {

struct CpuCoords {
  unsigned package = 0, die = 0, module = 0, core = 0, thread = 0;
  bool operator==(const CpuCoords&) const = default;
};

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
  // sockets). Throws ConfigError.
  static Topology parse(std::string_view smp);
  // All counts per parent level; cpus = 0 means every CPU is present.
  static Topology from_counts(Counts counts, unsigned cpus = 0);

  unsigned cpus() const { return cpus_; }          // present at boot
  unsigned max_cpus() const { return max_cpus_; }  // the whole hierarchy
  const Counts& counts() const { return counts_; }
  unsigned threads_per_core() const { return counts_.threads; }
  unsigned threads_per_module() const { return counts_.threads * counts_.cores; }
  unsigned threads_per_die() const { return threads_per_module() * counts_.modules; }
  unsigned threads_per_package() const { return threads_per_die() * counts_.dies; }

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

  Counts counts_;
  unsigned cpus_ = 1, max_cpus_ = 1;
  unsigned core_offset_ = 0, module_offset_ = 0, die_offset_ = 0, package_offset_ = 0;
};

}  // namespace topolab
