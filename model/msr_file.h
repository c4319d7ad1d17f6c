// SPDX-License-Identifier: GPL-2.0-or-later
// The model-specific registers one vCPU keeps outside the engine, as a pure
// register file built from its CPUID: Intel SDM Vol. 4 table 2-2
// ("IA-32 Architectural MSRs"), SDM Vol. 3 (chapters "Performance
// Monitoring", "Memory Cache Control" (MTRRs), "Machine-Check
// Architecture", "Time-Stamp Counter") and AMD APM Vol. 2 (13.2, appendix
// A). Every MSR exists exactly when the CPUID it is built from says so;
// RDMSR or WRMSR of one that does not, a reserved bit set, a bad memory type
// or a write to a read-only MSR is #GP(0), as on hardware.
//
// Here: TSC, TSC_ADJUST, TSC_AUX, SPEC_CTRL, PRED_CMD, ARCH_CAPABILITIES,
// MISC_ENABLE, DEBUGCTL, the MTRRs, the machine-check MSRs and banks, the
// Intel architectural PMU of CPUID leaf 0AH and AMD's K7 and core counters.
// Elsewhere: IA32_APIC_BASE, IA32_TSC_DEADLINE and the x2APIC range are the
// local APIC's (devices/local_apic.h); EFER, STAR, LSTAR, CSTAR, FMASK,
// FS/GS/KERNEL_GS_BASE, SYSENTER_* and PAT are state the engine keeps, and
// model/cpu_state_msrs.h has the rule for writing them.
//
// Not modelled (docs/msrs.md has the whole table):
// - counters do not count: PMCs, fixed counters and AMD's PERF_CTRs keep what
//   is written, as QEMU's TCG has no PMU at all; GLOBAL_STATUS stays 0;
// - MISC_ENABLE's writable bits are kept without their effect on CPUID
//   (bit 22 limits CPUID.0:EAX, bit 18 hides MONITOR, bit 34 hides NX on
//   hardware) - CPUID does not read MSRs here;
// - MTRR memory types and DEBUGCTL.BTF are kept without effect (the engine
//   has no caches, and single-steps every instruction under TF);
// - AMD PerfMonV2, LBRs, PEBS/DS, full-width PMC writes, CMCI, LMCE.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "model/cpu_state_msrs.h"
#include "model/msr_features.h"

namespace topolab {

// The CPUID facts the MSRs depend on, read once.
struct MsrCpuid {
  bool amd = false;               // CPUID.0 vendor AuthenticAMD or HygonGenuine
  unsigned base_family = 0;       // CPUID.01H:EAX[11:8]
  bool sse3 = false, monitor = false, pae = false, mce = false, mca = false, mtrr = false;
  bool svm = false;               // CPUID.80000001H:ECX[2]
  bool spec_ibrs = false, spec_stibp = false, spec_ssbd = false, spec_psfd = false, ibpb = false;
  unsigned maxphyaddr = 36;       // CPUID.80000008H:EAX[7:0]; 36 without that leaf (PAE)
  // CPUID leaf 0AH (SDM Vol. 3B "Architectural Performance Monitoring").
  struct Pmu {
    unsigned version = 0;         // EAX[7:0]; 0: no architectural PMU
    unsigned gp_counters = 0;     // EAX[15:8], at most 8 (IA32_PMC0-7)
    unsigned gp_width = 0;        // EAX[23:16]
    unsigned fixed_counters = 0;  // highest fixed counter + 1 (EDX[4:0], or ECX's mask from version 5)
    uint32_t fixed_mask = 0;      // which fixed counters exist
    unsigned fixed_width = 0;     // EDX[12:5]
    bool any_thread = false;      // AnyThread bits writable: version 3+ and not deprecated (EDX[15])
  } pmu;

  static MsrCpuid read(const CpuidQuery& cpuid);
};

// The MTRRs' memory types: 0 (UC), 1 (WC), 4 (WT), 5 (WP), 6 (WB); 2, 3 and
// above 6 are reserved (SDM Vol. 3A, "Memory Types That Can Be Encoded in
// MTRRs").
bool is_mtrr_memory_type(uint64_t type);

// Values CPUID does not carry.
struct MsrFileOptions {
  uint64_t arch_capabilities = 0;  // IA32_ARCH_CAPABILITIES, when CPUID.(07H,0):EDX[29] announces it
  uint64_t perf_capabilities = 0;  // IA32_PERF_CAPABILITIES, when CPUID.01H:ECX[15] (PDCM) does
};

class MsrFile {
 public:
  // QEMU's TCG values (target/i386/cpu.h, tcg/sysemu/misc_helper.c): 8
  // variable MTRRs with fixed ranges and WC (MTRRCAP 0x508), and with MCE
  // and MCA on a family 6+ CPU, MCG_CAP = MCG_CTL_P | MCG_SER_P | 10 banks.
  static constexpr unsigned kVariableMtrrs = 8;
  static constexpr uint64_t kMtrrCap = kVariableMtrrs | (1u << 8) | (1u << 10);
  static constexpr unsigned kMceBanks = 10;
  static constexpr uint64_t kMcgCtlP = uint64_t{1} << 8;
  static constexpr uint64_t kMcgSerP = uint64_t{1} << 24;
  static constexpr uint64_t kMcgCap = kMcgCtlP | kMcgSerP | kMceBanks;
  static constexpr unsigned kMaxGpCounters = 8;
  static constexpr unsigned kMaxFixedCounters = 16;  // FIXED_CTR_CTRL has 4 bits for each
  static constexpr unsigned kAmdCoreCounters = 6;

  // The reset state (power-up) of a CPU with this CPUID.
  explicit MsrFile(const CpuidQuery& cpuid, MsrFileOptions options = {});

  // Whether `msr` is one of the registers this file keeps, for this CPU.
  bool exists(uint32_t msr) const;
  // RDMSR: nullopt is #GP(0) (no such MSR, or a write-only one).
  // `virtual_tsc` is the time-stamp counter before any guest write.
  std::optional<uint64_t> read(uint32_t msr, uint64_t virtual_tsc) const;
  // RDPMC's counter ECX, as the counter MSR it reads: on Intel ECX[30]
  // picks the fixed counters, else IA32_PMCn; on AMD 0-3 are PERF_CTR0-3
  // (the core counters' first four) and 4-5 the core counters' others.
  // nullopt (#GP) for a counter the CPU does not have.
  std::optional<uint64_t> read_pmc(uint32_t ecx) const;
  // WRMSR: false is #GP(0), and nothing changed.
  bool write(uint32_t msr, uint64_t value, uint64_t virtual_tsc);
  // The TSC the guest reads (RDTSC, RDTSCP, RDMSR 0x10).
  uint64_t tsc(uint64_t virtual_tsc) const { return virtual_tsc + tsc_offset_; }
  const MsrCpuid& cpu() const { return cpu_; }

  // Snapshots (base/state_archive.h). cpu_, announced_, options_ and
  // mcg_cap_ (read-only, set from CPUID) are the configuration. tsc_offset_
  // is relative to the virtual TSC, which the machine's restored time gives.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(tsc_offset_, tsc_adjust_, tsc_aux_, spec_ctrl_, misc_enable_, debugctl_, mtrr_def_type_, mtrr_fixed_,
       mtrr_var_, mcg_status_, mcg_ctl_, mc_banks_, pmc_, evtsel_, fixed_ctr_, fixed_ctr_ctrl_, global_ctrl_,
       global_status_, amd_ctl_, amd_ctr_, vm_hsave_pa_);
  }

 private:
  enum class Kind : uint8_t {
    None, Tsc, TscAdjust, TscAux, BiosSignId, SpecCtrl, PredCmd, ArchCapabilities, MiscEnable, DebugCtl,
    MtrrCap, MtrrDefType, MtrrFixed, MtrrPhysBase, MtrrPhysMask,
    McgCap, McgStatus, McgCtl, McCtl, McStatus, McAddr, McMisc,
    PerfCapabilities, Pmc, PerfEvtSel, FixedCtr, FixedCtrCtrl, GlobalStatus, GlobalCtrl, GlobalOvfCtrl,
    AmdPerfCtl, AmdPerfCtr, AmdReadsZero, VmHsavePa,
  };
  struct Slot {
    Kind kind = Kind::None;
    unsigned index = 0;  // which counter, bank or range
  };
  // The one place that decides which MSRs exist.
  Slot locate(uint32_t msr) const;
  uint64_t misc_enable_writable() const;
  uint64_t spec_ctrl_valid() const;
  uint64_t perf_evtsel_reserved() const;
  uint64_t amd_perf_ctl_reserved() const;
  uint64_t fixed_ctr_ctrl_valid() const;
  uint64_t global_ctrl_valid() const;
  uint64_t global_ovf_valid() const;
  uint64_t physical_reserved() const;  // bits at and above MAXPHYADDR
  // write() by group of MSRs.
  bool write_mtrr(const Slot& s, uint64_t value);
  bool write_machine_check(const Slot& s, uint64_t value);
  bool write_pmu(const Slot& s, uint64_t value);

  MsrCpuid cpu_;
  MsrAvailability announced_;
  MsrFileOptions options_;
  uint64_t tsc_offset_ = 0;  // what TSC / TSC_ADJUST writes added (mod 2^64)
  uint64_t tsc_adjust_ = 0;
  uint64_t tsc_aux_ = 0;
  uint64_t spec_ctrl_ = 0;
  uint64_t misc_enable_ = 0;
  uint64_t debugctl_ = 0;
  uint64_t mtrr_def_type_ = 0;
  std::array<uint64_t, 11> mtrr_fixed_{};  // FIX64K_00000, FIX16K_80000/A0000, FIX4K_C0000..F8000
  std::array<uint64_t, 2 * kVariableMtrrs> mtrr_var_{};  // PHYSBASE0, PHYSMASK0, PHYSBASE1...
  uint64_t mcg_cap_ = 0;
  uint64_t mcg_status_ = 0;
  uint64_t mcg_ctl_ = ~uint64_t{0};
  std::array<uint64_t, 4 * kMceBanks> mc_banks_{};  // CTL, STATUS, ADDR, MISC of each bank
  std::array<uint64_t, kMaxGpCounters> pmc_{};
  std::array<uint64_t, kMaxGpCounters> evtsel_{};
  std::array<uint64_t, kMaxFixedCounters> fixed_ctr_{};
  uint64_t fixed_ctr_ctrl_ = 0;
  uint64_t global_ctrl_ = 0;
  uint64_t global_status_ = 0;
  std::array<uint64_t, kAmdCoreCounters> amd_ctl_{};
  std::array<uint64_t, kAmdCoreCounters> amd_ctr_{};
  uint64_t vm_hsave_pa_ = 0;
};

}  // namespace topolab
