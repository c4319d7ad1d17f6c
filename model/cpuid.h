// SPDX-License-Identifier: GPL-2.0-or-later
// CpuidModel: the CPUID leaves every vCPU of a machine sees, built from a
// Topology and a CpuConfig. Pure data: the topolab cpuid dumps, the vCPU's
// CPUID trap and the unit tests all query this one object.
//
// Follows the Intel SDM vol. 2A "CPUID" (and AMD APM vol. 3 for the AMD
// leaves). Topology fields use the SDM's power-of-two "addressable IDs"
// encodings, as QEMU >= 9.0 does; docs/deviations.md lists every place that
// differs from QEMU 7.2 and why.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/cpu_model.h"
#include "model/cpuid_regs.h"
#include "model/topology.h"

namespace topolab {

// A value that does not fit the CPUID field it is written to. The message
// names the SDM field, e.g.
// "CPUID.04H:EAX[31:26] (max addressable core IDs in the package) overflow: 70".
class CpuidFieldError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// One bit field of one CPUID register, named as the SDM names it.
struct CpuidField {
  uint32_t leaf;
  char reg;  // 'a', 'b', 'c' or 'd'
  unsigned hi, lo;
  const char* meaning;
};

// Writes `value` into `field` of `reg`; throws CpuidFieldError when it does
// not fit. Every bit-field write of the model goes through here.
void put_field(uint32_t& reg, const CpuidField& field, uint64_t value);
// For the few fields the SDM made too narrow for large machines (leaf 1's
// 8-bit logical processor count, leaf 4's 6-bit core count): saturates at the
// field's maximum instead, as hardware with that many CPUs cannot encode it
// either; software reads leaf 0xB/0x1F for the real counts.
void put_field_saturated(uint32_t& reg, const CpuidField& field, uint64_t value);

// The CPUID bits that follow guest state instead of the configuration. The
// defaults are a vCPU's state at reset (CR4 = 0, the APIC enabled), which is
// what the dumps show.
struct CpuidDynamic {
  bool cr4_pke = false;      // CR4.PKE: CPUID.07H.0:ECX[4] (OSPKE) where PKU is
  bool apic_enabled = true;  // IA32_APIC_BASE.EN: CPUID.01H:EDX[9] (APIC)
};

// Every vCPU's CPUID is a table, normalized once when the model is built:
// the leaves its core type shares with every vCPU of that type, and its own
// entries of the leaves that carry its APIC ID. A guest's CPUID and the dumps
// read the same entries; only the two CpuidDynamic bits are applied per read.
class CpuidModel {
 public:
  // Throws ConfigError when the CPU model cannot describe the topology
  // (e.g. APIC IDs above 254 without x2APIC, E-cores on a model with one
  // core type) or -machine's cache levels break QEMU's ordering rule.
  CpuidModel(Topology topology, CpuConfig cpu, MachineOptions machine = {});

  // What CPUID returns on vCPU `cpu_index` for EAX = leaf, ECX = subleaf,
  // with the guest state `dynamic`. Leaves above the maximum return the
  // highest basic leaf, as Intel CPUs (and QEMU) do.
  CpuidRegs query(unsigned cpu_index, uint32_t leaf, uint32_t subleaf, CpuidDynamic dynamic = {}) const;

  struct Entry {
    uint32_t leaf;
    uint32_t subleaf;
    CpuidRegs regs;
  };
  // Every leaf and subleaf that `cpuid -r` would list for one vCPU (its
  // table at reset), in ascending (leaf, subleaf) order: basic leaves, the
  // hypervisor's, then extended ones; subleaf enumerations include their
  // terminating subleaf.
  std::vector<Entry> enumerate(unsigned cpu_index) const;

  // True for leaves whose output depends on ECX.
  static bool has_subleaves(uint32_t leaf);

  const Topology& topology() const { return topology_; }
  const CpuConfig& cpu() const { return cpu_; }
  const MachineOptions& machine() const { return machine_; }
  uint32_t max_basic_leaf() const { return level_; }
  uint32_t max_extended_leaf() const { return xlevel_; }
  // Whether leaf 0x1F is reported: Intel, with dies or modules.
  bool reports_leaf_1f() const;
  // AMD's TOPOEXT (0x80000001:ECX[22]): leaves 0x8000001D/1E exist.
  bool has_topoext() const { return has_topoext_; }
  // A hybrid topology: CPUID.07H:EDX[15] is set and leaf 0x1A gives each
  // vCPU's core type.
  bool is_hybrid() const { return topology_.is_hybrid(); }
  // The caches one core type reports in leaf 4 / 0x8000001D, with
  // -machine smp-cache's levels applied.
  const CacheSet& caches_of(CoreType type) const { return type == CoreType::Atom ? atom_caches_ : core_caches_; }

 private:
  CpuidRegs base_leaf(uint32_t leaf, uint32_t subleaf, CoreType type) const;
  std::vector<Entry> build_enumeration(CoreType type) const;
  void build_cpu_entries();
  void apply_machine_cache_levels();
  void patch_for_cpu(uint32_t apic_id, uint32_t leaf, CpuidRegs& r) const;
  // The leaf whose data CPUID returns for `leaf` (the leaf-limit rule).
  uint32_t answering_leaf(uint32_t leaf) const;
  // vCPU `cpu_index`'s entry for (leaf, subleaf), the rule for subleaves
  // past a list's end included.
  CpuidRegs lookup(unsigned cpu_index, uint32_t leaf, uint32_t subleaf) const;
  const std::vector<Entry>& type_entries(unsigned cpu_index) const;
  std::span<const Entry> cpu_entries(unsigned cpu_index) const;

  CpuidRegs leaf0() const;
  CpuidRegs leaf1() const;
  CpuidRegs leaf2() const;
  CpuidRegs leaf4(uint32_t subleaf, CoreType type) const;
  CpuidRegs leaf5() const;
  CpuidRegs leaf6() const;
  CpuidRegs leaf7(uint32_t subleaf) const;
  CpuidRegs leafB(uint32_t subleaf, CoreType type) const;
  CpuidRegs leaf1A(CoreType type) const;
  CpuidRegs leaf1F(uint32_t subleaf, CoreType type) const;
  CpuidRegs ext0() const;
  CpuidRegs ext1() const;
  CpuidRegs brand(uint32_t leaf) const;
  CpuidRegs ext5() const;
  CpuidRegs ext6() const;
  CpuidRegs ext7() const;
  CpuidRegs ext8() const;
  CpuidRegs extA() const;
  CpuidRegs hypervisor(uint32_t leaf) const;
  CpuidRegs ext1D(uint32_t subleaf) const;
  CpuidRegs ext1E() const;

  // Caches in leaf 4 / 0x8000001D order; L3 only with l3-cache=on.
  std::vector<const CacheInfo*> deterministic_caches(CoreType type) const;
  // APIC-ID bit offset of the level a cache is shared at.
  unsigned sharing_offset(CacheScope scope) const;
  uint32_t feature(FeatureWord w) const;

  Topology topology_;
  CpuConfig cpu_;
  MachineOptions machine_;
  CacheSet core_caches_, atom_caches_;
  uint32_t level_, xlevel_;
  bool has_topoext_;
  // What every vCPU of one core type reads, with the APIC-ID fields zero:
  // each vCPU has its own entries of those leaves (carries_apic_id).
  std::vector<Entry> core_entries_, atom_entries_;
  // vCPU i's own entries are [cpu_begin_[i], cpu_begin_[i + 1]) of
  // cpu_entries_: about ten per vCPU, so 4,096 vCPUs hold under 1 MiB.
  std::vector<Entry> cpu_entries_;
  std::vector<uint32_t> cpu_begin_;
};

}  // namespace topolab
