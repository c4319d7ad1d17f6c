// SPDX-License-Identifier: GPL-2.0-or-later
// Named CPU models and QEMU's -cpu syntax: vendor, family/model/stepping,
// feature words and cache geometry. Pure data plus a parser; CpuidModel
// (cpuid.h) turns a CpuConfig and a Topology into CPUID leaves.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kvm_pv.h"

namespace topolab {

enum class CacheType { Data = 1, Instruction = 2, Unified = 3 };

// Which CPUs share a cache. Sharing is a topology level, so the sharing
// count follows the -smp layout instead of being fixed per model. Ordered
// from the narrowest level up, as QEMU's CpuTopologyLevel.
enum class CacheScope { Core, Module, Die, Package };

struct CacheInfo {
  CacheType type;
  unsigned level;
  uint32_t size;  // bytes; must equal line_size * ways * partitions * sets
  unsigned line_size;
  unsigned ways;
  unsigned partitions;
  unsigned sets;
  unsigned lines_per_tag;  // AMD 0x80000005/6 only
  bool self_init;
  bool no_invd_sharing;  // leaf 4 EDX[0]: WBINVD/INVD does not act on sharers
  bool inclusive;
  bool complex_indexing;
  CacheScope scope;
};

struct CacheSet {
  CacheInfo l1d, l1i, l2, l3;
};

// Leaf 2 descriptor bytes (SDM table 3-12) for the same caches.
// use_leaf4: the table has no descriptor for these caches, so leaf 2
// carries only descriptor FFH ("no cache descriptors; use leaf 4"), as
// Intel's hybrid parts report.
struct Leaf2Descriptors {
  uint8_t l1d = 0, l1i = 0, l2 = 0, l3 = 0;
  bool use_leaf4 = false;
};

// The second core type of a hybrid part (SDM vol. 2A, leaf 1AH): the
// model's own caches describe its Core (P) cores, these its Atom (E) cores.
// Family, model and brand are the part's, the same on every core, as on
// Alder Lake; the native model IDs (leaf 1AH EAX[23:0]) tell the
// microarchitectures apart.
struct HybridDef {
  uint32_t core_native_model_id;
  uint32_t atom_native_model_id;
  CacheSet atom_caches;
};

// The feature words CPUID reports (QEMU's FeatureWord, the ones we model).
enum class FeatureWord {
  Leaf1Edx,
  Leaf1Ecx,
  Leaf6Eax,
  Leaf7Ebx,
  Leaf7Ecx,
  Leaf7Edx,
  Ext1Edx,    // 0x80000001
  Ext1Ecx,
  Ext7Edx,    // 0x80000007
  Ext8Ebx,    // 0x80000008
  SvmEdx,     // 0x8000000A: SVM sub-features
  XsaveEax,   // 0xD subleaf 1: XSAVE extensions (named only: no model has XSAVE)
};

enum class Vendor { Intel, Amd };

// The engine's own CPU model a vCPU runs on. Unicorn gates instructions on
// its model's feature words (Unicorn 2.1.3's QEMU 5.0 TCG: POPCNT, SSSE3,
// PKU, CLWB ... raise #UD on a model without them), so a CPUID model can only
// advertise what its engine model executes. The vCPU engine is made for one
// of these (emu/vcpu.h VcpuFactory); docs/cpu_models.md has the measurement.
enum class EngineCpuModel : uint8_t { Qemu64, SkylakeServer, Epyc };
const char* engine_cpu_model_name(EngineCpuModel engine);

struct CpuModelDef {
  std::string name;
  std::string description;
  Vendor vendor;
  std::string vendor_id;  // 12 characters, as leaf 0 spells it
  unsigned family, model, stepping;
  uint32_t level;   // highest basic leaf
  uint32_t xlevel;  // highest extended leaf
  std::string brand;  // leaves 0x80000002..4, at most 47 characters
  std::map<FeatureWord, uint32_t> features;
  // Leaf 4 / 0x8000001D caches.
  CacheSet caches;
  // The caches AMD's 0x80000005/6 report where they differ from the above
  // (QEMU's legacy "_amd" geometry on non-AMD models).
  CacheSet amd_caches;
  Leaf2Descriptors leaf2;
  // Hybrid parts only: a topology with E-modules needs it.
  std::optional<HybridDef> hybrid;
  // The engine CPU this model runs on (see EngineCpuModel).
  EngineCpuModel engine = EngineCpuModel::Qemu64;
  // What QEMU 7.2's TCG shows a guest for this model (its definition less
  // the TCG_*_FEATURES filter), as a cpuid_dump guest reads it under
  // qemu-system-x86_64 7.2 -accel tcg; empty for topolab's own models.
  std::map<FeatureWord, uint32_t> qemu_features;
  // The features of QEMU 7.2's definition that its TCG filter drops (QEMU's
  // "TCG doesn't support requested feature" warnings): `enforce` refuses them.
  std::vector<std::string_view> qemu_filtered;
  // QEMU's pmu property default (on for max).
  bool pmu = false;
};

// Who carries out a feature: bit i set for EngineCpuModel i when that engine
// CPU executes it (measured), kBackedByMachine when topolab's machine
// implements it whatever the engine (the local APIC, the MONITOR/MWAIT and
// RDTSCP traps, CPUID itself).
inline constexpr uint8_t kBackedByMachine = 0x80;

// A named feature bit that -cpu +name / -name / name=on|off can change,
// with QEMU 7.2's name (target/i386/cpu.c feature_word_info).
struct FeatureFlag {
  std::string_view name;
  FeatureWord word;
  unsigned bit;
  uint8_t backed = 0;  // engines that execute it, | kBackedByMachine
  // Why topolab cannot advertise it on any engine (backed == 0).
  const char* refusal = nullptr;
  bool backed_on(EngineCpuModel engine) const {
    return (backed & kBackedByMachine) || (backed >> static_cast<unsigned>(engine) & 1);
  }
};

// The features the machine acts on rather than only reports, asked by type
// so that a misspelt name cannot read as "absent". Each is the bit of the
// -cpu flag of the same name (feature_flags()).
enum class CpuFeature : uint8_t { Apic, Monitor, X2apic, Hypervisor, Pku };
inline constexpr size_t kCpuFeatures = static_cast<size_t>(CpuFeature::Pku) + 1;
struct FeatureBit {
  FeatureWord word;
  unsigned bit;
  uint32_t mask() const { return 1u << bit; }
};
FeatureBit feature_bit(CpuFeature feature);

// A -cpu argument resolved: the model and every property applied.
struct CpuConfig {
  CpuModelDef model;
  bool l3_cache = true;  // QEMU's l3-cache, on by default since 2.8
  // level= / xlevel= given: QEMU then applies no automatic minimum level.
  bool level_explicit = false;
  bool xlevel_explicit = false;
  // QEMU 10.1's x-force-cpuid-0x1f: report leaf 0x1F even without dies or
  // modules.
  bool force_cpuid_0x1f = false;
  // CPUID.80000008H:EAX[7:0]; QEMU's TCG default (TCG_PHYS_ADDR_BITS).
  unsigned phys_bits = 40;
  // QEMU's pmu: accepted on and off. Under TCG QEMU 7.2 reports no
  // architectural PMU either way (leaf 0xA is zero), and so does topolab.
  bool pmu = false;
  // QEMU's migratable: no effect on TCG (it filters KVM's unmigratable
  // features only).
  bool migratable = true;
  // QEMU's enforce: refuse the model if any feature of its definition is
  // not advertised.
  bool enforce = false;
  // kvm=on: the hypervisor leaves say "KVMKVMKVM" with no paravirtual
  // features, as a KVM guest with every kvm-* feature off sees them. QEMU's
  // TCG has no KVM leaves; Linux needs the signature to run x2APIC without
  // interrupt remapping (x2apic_available), as it does on KVM.
  bool kvm_signature = false;
  // kvm-msi-ext-dest-id (KVM_FEATURE_MSI_EXT_DEST_ID, leaf 0x40000001 EAX
  // bit 15, with kvm=on): the I/O APIC takes APIC IDs up to 32767 from
  // redirection-entry bits 49-55 beside 56-63, as QEMU's userspace I/O APIC
  // (kernel-irqchip=split, where QEMU offers it) and KVM do. Linux 6.1 then
  // brings up CPUs with APIC IDs past 255 in x2APIC mode without interrupt
  // remapping. On by default with kvm=on: topolab's I/O APIC is QEMU's.
  bool kvm_msi_ext_dest_id = true;
  // KVM's paravirtual features (model/kvm_pv.h): with kvm=on QEMU's
  // defaults for a KVM guest, as the kvm-* properties change them; without
  // it none.
  KvmPvSet kvm_pv;
  // kvm-pv-enforce-cpuid (KVM_CAP_ENFORCE_PV_FEATURE_CPUID): KVM's MSRs and
  // hypercalls work only where CPUID announces their feature. Off, as
  // QEMU's default: a KVM host answers them all.
  bool kvm_pv_enforce_cpuid = false;
  // Whether the I/O APIC honours the extended destination ID.
  bool offers_ext_dest_id() const { return kvm_signature && kvm_msi_ext_dest_id; }
  // Features asked for that the engine cannot execute, without enforce: not
  // advertised, each with its reason, as QEMU's TCG warns "TCG doesn't
  // support requested feature" and drops it. The command prints them as
  // warnings (kvm-unit-tests lets stderr lines that say "warning" pass).
  std::vector<std::string> dropped_requests;
  // Properties taken as QEMU's TCG takes them, meaning nothing here
  // (host-phys-bits=on): the command prints each as a warning.
  std::vector<std::string> warnings;
  std::string arg;       // the -cpu text this came from, for reports

  Vendor vendor() const { return model.vendor; }
  bool has(CpuFeature feature) const;
};

// The models topolab knows, in the order `-cpu help` lists them.
const std::vector<CpuModelDef>& cpu_models();
const std::vector<FeatureFlag>& feature_flags();
// The flag named `name` (QEMU's spelling or one of its aliases), or nullptr.
const FeatureFlag* find_feature_flag(std::string_view name);
// The -cpu properties other than features, for `topolab models`.
std::string_view cpu_property_help();

// A feature of QEMU 7.2's definition of a model that topolab does not
// advertise, and why.
struct DroppedFeature {
  std::string_view name;
  std::string reason;
};
// Every feature QEMU 7.2's definition of `model` has (qemu_features plus
// qemu_filtered) that `model.features` lacks, in feature-table order.
std::vector<DroppedFeature> dropped_features(const CpuModelDef& model);

// The caches QEMU 10.0's -machine smp-cache.N.cache= names.
enum class SmpCache { L1d, L1i, L2, L3 };
inline constexpr size_t kSmpCacheCount = static_cast<size_t>(SmpCache::L3) + 1;
const char* smp_cache_name(SmpCache cache);

// What -machine sets that topolab models: the topology level each cache is
// shared at (nullopt: "default", the CPU model's own), and hmat=on (the
// guest gets an HMAT; -numa hmat-lb, hmat-cache and initiator= need it).
struct MachineOptions {
  std::array<std::optional<CacheScope>, kSmpCacheCount> cache_scope;
  bool hmat = false;
  std::string arg;  // the -machine text this came from
  const std::optional<CacheScope>& scope_of(SmpCache cache) const { return cache_scope[static_cast<size_t>(cache)]; }
};

// Parses QEMU's -machine syntax: [TYPE,]smp-cache.N.cache=l1d|l1i|l2|l3,
// smp-cache.N.topology=core|module|die|socket|default...,hmat=on|off, with QEMU 10.0's
// x86 rules (hw/core/machine-smp.c machine_parse_smp_cache): no cache twice,
// no thread level, no cluster/book/drawer level. The ordering rule (L1 <=
// L2 <= L3) needs the CPU model's defaults, so CpuidModel checks it. Throws
// ConfigError.
MachineOptions parse_machine(std::string_view arg);

// Parses QEMU's -cpu syntax: MODEL[,+flag|-flag|flag=on|off|flag|l3-cache=on|off|
// vendor=ID|level=N|xlevel=N|model-id=TEXT|family=N|model=N|stepping=N|
// phys-bits=N|host-phys-bits=on|off|pmu=on|off|migratable=on|off|enforce|check|
// x-force-cpuid-0x1f=on|off...]. A feature topolab cannot carry out is
// refused with the reason, never advertised. Throws ConfigError.
CpuConfig parse_cpu(std::string_view arg);

}  // namespace topolab
