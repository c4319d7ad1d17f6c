// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/msr_file.h"

#include <algorithm>
#include <bit>

#include "arch/x86_arch.h"

namespace topolab {

namespace {

using namespace x86;

constexpr uint64_t bit(unsigned n) { return uint64_t{1} << n; }
// Bits hi..lo set.
constexpr uint64_t bits(unsigned hi, unsigned lo) { return (hi >= 63 ? ~uint64_t{0} : bit(hi + 1) - 1) & ~(bit(lo) - 1); }
// The low `width` bits set (a counter `width` bits wide).
constexpr uint64_t low_bits(unsigned width) { return width >= 64 ? ~uint64_t{0} : bit(width) - 1; }

// CPUID.0 vendor strings in EBX, EDX, ECX order.
constexpr CpuidRegs kAuthenticAmd{.ebx = 0x68747541, .ecx = 0x444d4163, .edx = 0x69746e65};
constexpr CpuidRegs kHygonGenuine{.ebx = 0x6f677948, .ecx = 0x656e6975, .edx = 0x6e65476e};
// QEMU's default microcode revisions (X86CPU::ucode_rev) for IA32_BIOS_SIGN_ID.
constexpr uint64_t kIntelMicrocodeRevision = 0x1'0000'0000, kAmdMicrocodeRevision = 0x0100'0065;

// IA32_DEBUGCTL (SDM Vol. 4 table 2-2): of its bits only BTF (1), which
// every Intel and AMD CPU has; LBR, BTS and the freeze bits need LBR/DS
// support the CPU does not announce.
constexpr uint64_t kDebugCtlBtf = bit(1);

// IA32_MISC_ENABLE (SDM Vol. 4 table 2-2). Writable: fast strings, TCC,
// EIST, MONITOR FSM, limit CPUID maxval, xTPR disable, XD disable. KVM and
// QEMU accept all of these on every CPU, and kvm-unit-tests' msr test
// writes them on qemu64, which has neither EIST nor xTPR in CPUID: the SDM's
// "if CPUID..." notes for bits 16, 23 and 34 say when the bit means
// something, and are not enforced here. Read-only: perf monitoring
// available, BTS and PEBS unavailable; a write keeps them, as KVM does.
constexpr uint64_t kMiscEnableWritable = kMiscEnableFastStrings | kMiscEnableTcc | kMiscEnableEist |
                                         kMiscEnableMonitor | kMiscEnableLimitCpuid | kMiscEnableXtprDisable |
                                         kMiscEnableXdDisable;
constexpr uint64_t kMiscEnableReadOnly = kMiscEnablePerfMon | kMiscEnableBtsUnavailable | kMiscEnablePebsUnavailable;

// IA32_SPEC_CTRL bits (SDM Vol. 4 table 2-2; AMD's speculation white papers).
constexpr uint64_t kSpecCtrlIbrs = bit(0), kSpecCtrlStibp = bit(1), kSpecCtrlSsbd = bit(2), kSpecCtrlPsfd = bit(7);
constexpr uint64_t kPredCmdIbpb = bit(0);

// IA32_MTRR_DEF_TYPE: type in 7:0, FE (10), E (11).
constexpr uint64_t kMtrrDefTypeValid = 0xff | bit(10) | bit(11);
constexpr uint64_t kMtrrPhysBaseReservedLow = bits(11, 8);
constexpr uint64_t kMtrrPhysMaskReservedLow = bits(10, 0);

// IA32_MCG_STATUS: RIPV, EIPV, MCIP (LMCE_S needs MCG_CAP.LMCE_P, not offered).
constexpr uint64_t kMcgStatusValid = bits(2, 0);

// IA32_PERF_GLOBAL_OVF_CTRL / _STATUS_RESET also clear OvfBuf (62) and
// CondChgd (63) besides the counters' bits.
constexpr uint64_t kGlobalOvfExtra = bit(62) | bit(63);

// AMD PERF_CTL (APM Vol. 2 13.2.1, "Core Performance Event-Select
// Registers"): 63:42, 39:36, 21 and 19 are reserved (KVM's
// 0xfffffff000280000, "KVM: x86/pmu: Fix reserved bits for AMD PerfEvtSeln
// register"); HostOnly/GuestOnly (41:40) exist with SVM.
constexpr uint64_t kAmdPerfCtlReserved = bits(63, 42) | bits(39, 36) | bit(21) | bit(19);
constexpr uint64_t kAmdPerfCtlHostGuest = bits(41, 40);
constexpr unsigned kAmdCounterWidth = 48;

// Intel IA32_PERFEVTSELx: 63:32 reserved (the TSX and v6 bits are not
// offered), AnyThread (21) with version 3+ unless CPUID.0AH:EDX[15].
constexpr uint64_t kPerfEvtSelReserved = bits(63, 32);
constexpr uint64_t kPerfEvtSelAnyThread = bit(21);

// One 4-bit field of IA32_FIXED_CTR_CTRL: enable (1:0), AnyThread (2), PMI (3).
constexpr uint64_t kFixedCtrlEnPmi = 0xb, kFixedCtrlAnyThread = 0x4;

bool cpuid_has(const CpuidQuery& q, uint32_t leaf, uint32_t subleaf, char reg, uint8_t n) {
  return cpuid_bit_set(q, CpuidBit{leaf, subleaf, reg, n, nullptr});
}

}  // namespace

MsrCpuid MsrCpuid::read(const CpuidQuery& q) {
  MsrCpuid c;
  const CpuidRegs l0 = q(0, 0);
  auto vendor_is = [&](const CpuidRegs& v) { return l0.ebx == v.ebx && l0.ecx == v.ecx && l0.edx == v.edx; };
  c.amd = vendor_is(kAuthenticAmd) || vendor_is(kHygonGenuine);
  if (l0.eax >= 1) c.base_family = (q(1, 0).eax >> 8) & 0xf;
  c.sse3 = cpuid_has(q, 1, 0, 'c', 0);
  c.monitor = cpuid_has(q, 1, 0, 'c', 3);
  c.pae = cpuid_has(q, 1, 0, 'd', 6);
  c.mce = cpuid_has(q, 1, 0, 'd', 7);
  c.mtrr = cpuid_has(q, 1, 0, 'd', 12);
  c.mca = cpuid_has(q, 1, 0, 'd', 14);
  c.svm = cpuid_has(q, 0x80000001, 0, 'c', 2);
  c.spec_ibrs = cpuid_has(q, 7, 0, 'd', 26) || cpuid_has(q, 0x80000008, 0, 'b', 14);
  c.spec_stibp = cpuid_has(q, 7, 0, 'd', 27) || cpuid_has(q, 0x80000008, 0, 'b', 15);
  c.spec_ssbd = cpuid_has(q, 7, 0, 'd', 31) || cpuid_has(q, 0x80000008, 0, 'b', 24);
  // PSFD: CPUID.(07H,2):EDX[0] (subleaf 2 exists when CPUID.(07H,0):EAX >= 2), AMD 8000_0008h:EBX[28].
  const bool leaf7_sub2 = l0.eax >= 7 && q(7, 0).eax >= 2;
  c.spec_psfd = (leaf7_sub2 && cpuid_has(q, 7, 2, 'd', 0)) || cpuid_has(q, 0x80000008, 0, 'b', 28);
  c.ibpb = cpuid_has(q, 7, 0, 'd', 26) || cpuid_has(q, 0x80000008, 0, 'b', 12);
  // MAXPHYADDR (SDM Vol. 3A 4.1.4): CPUID.80000008H:EAX[7:0], else 36 with
  // PAE and 32 without; outside 32..52 the vCPU takes 36 too (emu/vcpu_modes.cc).
  c.maxphyaddr = c.pae ? 36 : 32;
  if (q(0x80000000, 0).eax >= 0x80000008) {
    const unsigned reported = q(0x80000008, 0).eax & 0xff;
    c.maxphyaddr = reported >= 32 && reported <= 52 ? reported : 36;
  }
  if (l0.eax >= 0xa) {
    const CpuidRegs a = q(0xa, 0);
    Pmu& p = c.pmu;
    p.version = a.eax & 0xff;
    if (p.version > 0) {
      p.gp_counters = std::min((a.eax >> 8) & 0xff, MsrFile::kMaxGpCounters);
      p.gp_width = std::min((a.eax >> 16) & 0xffu, 64u);
    }
    if (p.version > 1) {
      // SDM: fixed counter i exists if ECX[i] (version 5+) or EDX[4:0] > i.
      const unsigned fixed = a.edx & 0x1f;
      p.fixed_mask = static_cast<uint32_t>(low_bits(fixed));
      if (p.version >= 5) p.fixed_mask |= a.ecx;
      p.fixed_mask &= static_cast<uint32_t>(low_bits(MsrFile::kMaxFixedCounters));
      p.fixed_counters = 32 - static_cast<unsigned>(std::countl_zero(p.fixed_mask));
      p.fixed_width = std::min((a.edx >> 5) & 0xffu, 64u);
    }
    p.any_thread = p.version >= 3 && !((a.edx >> 15) & 1);
  }
  return c;
}

bool is_mtrr_memory_type(uint64_t type) { return type < 8 && ((0x73u >> type) & 1); }

MsrFile::MsrFile(const CpuidQuery& cpuid, MsrFileOptions options)
    : cpu_(MsrCpuid::read(cpuid)), announced_(cpuid), options_(options) {
  // QEMU's reset value (x86_cpu_reset) is fast strings, plus MONITOR when
  // CPUID has it; the read-only bits say what the CPU has, as the SDM
  // defines them (KVM sets BTS/PEBS unavailable too).
  misc_enable_ = kMiscEnableFastStrings | (cpu_.monitor ? kMiscEnableMonitor : 0) |
                 (cpu_.pmu.version > 0 ? kMiscEnablePerfMon : 0) | kMiscEnableBtsUnavailable |
                 kMiscEnablePebsUnavailable;
  // QEMU's mce_init(): banks only for family 6+ with both MCE and MCA;
  // MCG_CTL and every MCi_CTL start all ones.
  if (cpu_.mce && cpu_.mca && cpu_.base_family >= 6) {
    mcg_cap_ = kMcgCap;
    for (unsigned b = 0; b < kMceBanks; ++b) mc_banks_[4 * b] = ~uint64_t{0};
  }
  // SDM Vol. 3A table "IA-32 and Intel 64 Processor States Following
  // Power-up, Reset, or INIT": IA32_PERF_GLOBAL_CTRL sets bits n-1:0 (the
  // general-purpose counters) and clears the rest.
  if (cpu_.pmu.version > 1) global_ctrl_ = low_bits(cpu_.pmu.gp_counters);
}

MsrFile::Slot MsrFile::locate(uint32_t msr) const {
  if (!announced_.announced(msr)) return {};
  const MsrCpuid::Pmu& pmu = cpu_.pmu;
  switch (msr) {
    case kMsrTsc: return {Kind::Tsc};
    case kMsrTscAdjust: return {Kind::TscAdjust};
    case kMsrTscAux: return {Kind::TscAux};
    case kMsrBiosSignId: return {Kind::BiosSignId};
    case kMsrSpecCtrl: return {Kind::SpecCtrl};
    case kMsrPredCmd: return {Kind::PredCmd};
    case kMsrArchCapabilities: return {Kind::ArchCapabilities};
    // IA32_MISC_ENABLE has no CPUID bit (architectural since the Pentium 4);
    // QEMU and KVM offer it on AMD models too, which topolab follows.
    case kMsrMiscEnable: return {Kind::MiscEnable};
    case kMsrDebugCtl: return {Kind::DebugCtl};
    case kMsrMtrrCap: return {Kind::MtrrCap};
    case kMsrMtrrDefType: return {Kind::MtrrDefType};
    case kMsrMtrrFix64k00000: return {Kind::MtrrFixed, 0};
    case kMsrMtrrFix16k80000: return {Kind::MtrrFixed, 1};
    case kMsrMtrrFix16kA0000: return {Kind::MtrrFixed, 2};
    case kMsrMcgCap: return {Kind::McgCap};
    case kMsrMcgStatus: return {Kind::McgStatus};
    case kMsrMcgCtl: return (mcg_cap_ & kMcgCtlP) ? Slot{Kind::McgCtl} : Slot{};
    case kMsrPerfCapabilities: return {Kind::PerfCapabilities};
    // The global controls came with version 2 (SDM Vol. 3B "Architectural
    // Performance Monitoring Version 2"); _OVF_CTRL is named
    // _STATUS_RESET from version 4 on, with the same bits.
    case kMsrFixedCtrCtrl: return pmu.version > 1 ? Slot{Kind::FixedCtrCtrl} : Slot{};
    case kMsrPerfGlobalStatus: return pmu.version > 1 ? Slot{Kind::GlobalStatus} : Slot{};
    case kMsrPerfGlobalCtrl: return pmu.version > 1 ? Slot{Kind::GlobalCtrl} : Slot{};
    case kMsrPerfGlobalOvfCtrl: return pmu.version > 1 ? Slot{Kind::GlobalOvfCtrl} : Slot{};
    default: break;
  }
  if (msr >= kMsrMtrrFix4kC0000 && msr <= kMsrMtrrFix4kC0000 + 7) return {Kind::MtrrFixed, 3 + (msr - kMsrMtrrFix4kC0000)};
  if (msr >= kMsrMtrrPhysBase0 && msr < kMsrMtrrPhysBase0 + 2 * kVariableMtrrs) {
    const unsigned n = msr - kMsrMtrrPhysBase0;
    return {(n & 1) ? Kind::MtrrPhysMask : Kind::MtrrPhysBase, n / 2};
  }
  if (msr >= kMsrMc0Ctl && msr < kMsrMc0Ctl + 4 * (mcg_cap_ & 0xff)) {
    static constexpr Kind kBank[] = {Kind::McCtl, Kind::McStatus, Kind::McAddr, Kind::McMisc};
    return {kBank[(msr - kMsrMc0Ctl) % 4], msr - kMsrMc0Ctl};
  }
  if (msr >= kMsrPmc0 && msr < kMsrPmc0 + pmu.gp_counters) return {Kind::Pmc, msr - kMsrPmc0};
  if (msr >= kMsrPerfEvtSel0 && msr < kMsrPerfEvtSel0 + pmu.gp_counters) return {Kind::PerfEvtSel, msr - kMsrPerfEvtSel0};
  if (msr >= kMsrFixedCtr0 && msr < kMsrFixedCtr0 + kMaxFixedCounters && ((pmu.fixed_mask >> (msr - kMsrFixedCtr0)) & 1))
    return {Kind::FixedCtr, msr - kMsrFixedCtr0};
  // AMD: the K7 counters on every AMD CPU (APM Vol. 2 13.2.1); with
  // PerfCtrExtCore they alias core counters 0-3 (APM: "the legacy MSRs are
  // aliases"), so both numbers reach one register.
  if (cpu_.amd && msr >= kMsrK7PerfCtl0 && msr < kMsrK7PerfCtl0 + 4) return {Kind::AmdPerfCtl, msr - kMsrK7PerfCtl0};
  if (cpu_.amd && msr >= kMsrK7PerfCtr0 && msr < kMsrK7PerfCtr0 + 4) return {Kind::AmdPerfCtr, msr - kMsrK7PerfCtr0};
  if (msr >= kMsrF15hPerfCtl0 && msr < kMsrF15hPerfCtl0 + 2 * kAmdCoreCounters) {
    const unsigned n = msr - kMsrF15hPerfCtl0;
    return {(n & 1) ? Kind::AmdPerfCtr : Kind::AmdPerfCtl, n / 2};
  }
  // SYSCFG, NB_CFG and the K8 interrupt-pending message read 0 and take
  // writes without effect, as KVM's kvm_get_msr_common/kvm_set_msr_common
  // do (Linux reads SYSCFG for memory encryption, sets NB_CFG's extended
  // CF8 config on every AMD CPU, and reads 0xC0010055 for the E400 C1E bug
  // on family 0Fh).
  if (cpu_.amd && (msr == kMsrAmdSyscfg || msr == kMsrAmdNbCfg || msr == kMsrAmdIntPendingMsg))
    return {Kind::AmdReadsZero};
  // With SVM, the host save area's address (APM Vol. 2 15.30.4); Linux
  // clears it on the way to reboot or power-off.
  if (cpu_.svm && msr == kMsrVmHsavePa) return {Kind::VmHsavePa};
  return {};
}

bool MsrFile::exists(uint32_t msr) const { return locate(msr).kind != Kind::None; }

uint64_t MsrFile::spec_ctrl_valid() const {
  return (cpu_.spec_ibrs ? kSpecCtrlIbrs : 0) | (cpu_.spec_stibp ? kSpecCtrlStibp : 0) |
         (cpu_.spec_ssbd ? kSpecCtrlSsbd : 0) | (cpu_.spec_psfd ? kSpecCtrlPsfd : 0);
}

uint64_t MsrFile::perf_evtsel_reserved() const {
  return kPerfEvtSelReserved | (cpu_.pmu.any_thread ? 0 : kPerfEvtSelAnyThread);
}

uint64_t MsrFile::amd_perf_ctl_reserved() const {
  return kAmdPerfCtlReserved | (cpu_.svm ? 0 : kAmdPerfCtlHostGuest);
}

uint64_t MsrFile::fixed_ctr_ctrl_valid() const {
  uint64_t valid = 0;
  const uint64_t field = kFixedCtrlEnPmi | (cpu_.pmu.any_thread ? kFixedCtrlAnyThread : 0);
  for (unsigned i = 0; i < kMaxFixedCounters; ++i)
    if ((cpu_.pmu.fixed_mask >> i) & 1) valid |= field << (4 * i);
  return valid;
}

uint64_t MsrFile::global_ctrl_valid() const {
  return low_bits(cpu_.pmu.gp_counters) | (uint64_t{cpu_.pmu.fixed_mask} << 32);
}

uint64_t MsrFile::global_ovf_valid() const { return global_ctrl_valid() | kGlobalOvfExtra; }

uint64_t MsrFile::physical_reserved() const { return ~low_bits(cpu_.maxphyaddr); }

std::optional<uint64_t> MsrFile::read(uint32_t msr, uint64_t virtual_tsc) const {
  const Slot s = locate(msr);
  switch (s.kind) {
    case Kind::None: return std::nullopt;
    case Kind::Tsc: return tsc(virtual_tsc);
    case Kind::TscAdjust: return tsc_adjust_;
    case Kind::TscAux: return tsc_aux_;
    // QEMU's ucode_rev defaults (target/i386/cpu.c): Linux reads the
    // revision here after writing 0 and running CPUID(1), and warns about
    // old microcode, so an Intel CPU reports a revision in [63:32].
    case Kind::BiosSignId: return cpu_.amd ? kAmdMicrocodeRevision : kIntelMicrocodeRevision;
    case Kind::SpecCtrl: return spec_ctrl_;
    case Kind::PredCmd: return std::nullopt;  // write-only (SDM: "IA32_PRED_CMD (WO)")
    case Kind::ArchCapabilities: return options_.arch_capabilities;
    case Kind::MiscEnable: return misc_enable_;
    case Kind::DebugCtl: return debugctl_;
    case Kind::MtrrCap: return kMtrrCap;
    case Kind::MtrrDefType: return mtrr_def_type_;
    case Kind::MtrrFixed: return mtrr_fixed_[s.index];
    case Kind::MtrrPhysBase: return mtrr_var_[2 * s.index];
    case Kind::MtrrPhysMask: return mtrr_var_[2 * s.index + 1];
    case Kind::McgCap: return mcg_cap_;
    case Kind::McgStatus: return mcg_status_;
    case Kind::McgCtl: return mcg_ctl_;
    case Kind::McCtl: case Kind::McStatus: case Kind::McAddr: case Kind::McMisc: return mc_banks_[s.index];
    case Kind::PerfCapabilities: return options_.perf_capabilities;
    case Kind::Pmc: return pmc_[s.index];
    case Kind::PerfEvtSel: return evtsel_[s.index];
    case Kind::FixedCtr: return fixed_ctr_[s.index];
    case Kind::FixedCtrCtrl: return fixed_ctr_ctrl_;
    case Kind::GlobalStatus: return global_status_;
    case Kind::GlobalCtrl: return global_ctrl_;
    case Kind::GlobalOvfCtrl: return 0;  // a command: it reads 0, as KVM's
    case Kind::AmdPerfCtl: return amd_ctl_[s.index];
    case Kind::AmdPerfCtr: return amd_ctr_[s.index];
    case Kind::AmdReadsZero: return 0;
    case Kind::VmHsavePa: return vm_hsave_pa_;
  }
  return std::nullopt;
}

std::optional<uint64_t> MsrFile::read_pmc(uint32_t ecx) const {
  constexpr uint32_t kFixedSelect = 1u << 30;
  if (cpu_.amd) {
    if (ecx < 4) return read(kMsrK7PerfCtr0 + ecx, 0);
    if (ecx < kAmdCoreCounters) return read(kMsrF15hPerfCtl0 + 2 * ecx + 1, 0);
    return std::nullopt;
  }
  if (ecx & kFixedSelect) {
    const uint32_t n = ecx & ~kFixedSelect;
    return n < kMaxFixedCounters ? read(kMsrFixedCtr0 + n, 0) : std::nullopt;
  }
  return ecx < kMaxGpCounters ? read(kMsrPmc0 + ecx, 0) : std::nullopt;
}

// The MTRRs: memory types the SDM defines, no reserved bits.
bool MsrFile::write_mtrr(const Slot& s, uint64_t value) {
  switch (s.kind) {
    case Kind::MtrrDefType:
      if ((value & ~kMtrrDefTypeValid) || !is_mtrr_memory_type(value & 0xff)) return false;
      mtrr_def_type_ = value;
      return true;
    case Kind::MtrrFixed:
      for (unsigned i = 0; i < 8; ++i)
        if (!is_mtrr_memory_type((value >> (8 * i)) & 0xff)) return false;
      mtrr_fixed_[s.index] = value;
      return true;
    case Kind::MtrrPhysBase:
      if ((value & (physical_reserved() | kMtrrPhysBaseReservedLow)) || !is_mtrr_memory_type(value & 0xff)) return false;
      mtrr_var_[2 * s.index] = value;
      return true;
    case Kind::MtrrPhysMask:
      if (value & (physical_reserved() | kMtrrPhysMaskReservedLow)) return false;
      mtrr_var_[2 * s.index + 1] = value;
      return true;
    default: return false;
  }
}

// The machine-check MSRs.
bool MsrFile::write_machine_check(const Slot& s, uint64_t value) {
  switch (s.kind) {
    case Kind::McgStatus:
      if (value & ~kMcgStatusValid) return false;
      mcg_status_ = value;
      return true;
    // SDM Vol. 3B "IA32_MCG_CTL" and "IA32_MCi_CTL": all zeros or all ones.
    // KVM #GPs the rest (QEMU's TCG drops them); like KVM, MCi_CTL may also
    // leave bit 10 (the K8 GART erratum Linux works around) and bit 0
    // (UnixWare) clear.
    case Kind::McgCtl:
      if (value != 0 && value != ~uint64_t{0}) return false;
      mcg_ctl_ = value;
      return true;
    case Kind::McCtl:
      if (value != 0 && (value | bit(10) | bit(0)) != ~uint64_t{0}) return false;
      mc_banks_[s.index] = value;
      return true;
    // SDM Vol. 3B "IA32_MCi_STATUS": software may only write zeros (AMD's
    // HWCR.McStatusWrEn, which would allow more, is not modelled).
    case Kind::McStatus:
      if (value != 0) return false;
      mc_banks_[s.index] = value;
      return true;
    case Kind::McAddr: case Kind::McMisc:
      mc_banks_[s.index] = value;
      return true;
    default: return false;
  }
}

// The performance counters and their controls, Intel's and AMD's.
bool MsrFile::write_pmu(const Slot& s, uint64_t value) {
  switch (s.kind) {
    // SDM Vol. 3B: a WRMSR to IA32_PMCi writes bits 31:0 and sign-extends
    // bit 31 up to the counter's width; EDX is ignored.
    case Kind::Pmc:
      pmc_[s.index] = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(value))) &
                      low_bits(cpu_.pmu.gp_width);
      return true;
    case Kind::PerfEvtSel:
      if (value & perf_evtsel_reserved()) return false;
      evtsel_[s.index] = value;
      return true;
    case Kind::FixedCtr:  // bits past the width are dropped, as KVM does
      fixed_ctr_[s.index] = value & low_bits(cpu_.pmu.fixed_width);
      return true;
    case Kind::FixedCtrCtrl:
      if (value & ~fixed_ctr_ctrl_valid()) return false;
      fixed_ctr_ctrl_ = value;
      return true;
    case Kind::GlobalCtrl:
      if (value & ~global_ctrl_valid()) return false;
      global_ctrl_ = value;
      return true;
    case Kind::GlobalOvfCtrl:
      if (value & ~global_ovf_valid()) return false;
      global_status_ &= ~value;
      return true;
    case Kind::AmdPerfCtl:
      if (value & amd_perf_ctl_reserved()) return false;
      amd_ctl_[s.index] = value;
      return true;
    case Kind::AmdPerfCtr:  // 48 bits wide; the upper bits are dropped, as KVM does
      amd_ctr_[s.index] = value & low_bits(kAmdCounterWidth);
      return true;
    default: return false;
  }
}

bool MsrFile::write(uint32_t msr, uint64_t value, uint64_t virtual_tsc) {
  const Slot s = locate(msr);
  switch (s.kind) {
    case Kind::None: return false;
    // SDM Vol. 3B "Time-Stamp Counter Adjustment": a WRMSR to the TSC that
    // adds X to it adds X to IA32_TSC_ADJUST, and one to IA32_TSC_ADJUST that
    // adds X to it adds X to the TSC.
    case Kind::Tsc: {
      const uint64_t delta = value - tsc(virtual_tsc);
      tsc_offset_ += delta;
      tsc_adjust_ += delta;
      return true;
    }
    case Kind::TscAdjust:
      tsc_offset_ += value - tsc_adjust_;
      tsc_adjust_ = value;
      return true;
    case Kind::BiosSignId: return true;  // the write that asks for the revision; it stays
    case Kind::TscAux:
      if (value >> 32) return false;  // IA32_TSC_AUX[63:32] are reserved
      tsc_aux_ = value;
      return true;
    case Kind::SpecCtrl:
      if (value & ~spec_ctrl_valid()) return false;
      spec_ctrl_ = value;  // no speculation to control in an emulator
      return true;
    case Kind::PredCmd: return !(value & ~kPredCmdIbpb);  // IBPB: nothing to flush
    // Read-only.
    case Kind::ArchCapabilities: case Kind::MtrrCap: case Kind::McgCap: case Kind::PerfCapabilities:
    case Kind::GlobalStatus:
      return false;
    case Kind::MiscEnable:
      if (value & ~(kMiscEnableWritable | kMiscEnableReadOnly)) return false;
      // SDM: writing the MONITOR FSM bit without SSE3 "may generate a #GP".
      if (!cpu_.sse3 && ((value ^ misc_enable_) & kMiscEnableMonitor)) return false;
      misc_enable_ = (value & kMiscEnableWritable) | (misc_enable_ & kMiscEnableReadOnly);
      return true;
    case Kind::DebugCtl:
      if (value & ~kDebugCtlBtf) return false;
      debugctl_ = value;
      return true;
    case Kind::MtrrDefType: case Kind::MtrrFixed: case Kind::MtrrPhysBase: case Kind::MtrrPhysMask:
      return write_mtrr(s, value);
    case Kind::McgStatus: case Kind::McgCtl: case Kind::McCtl: case Kind::McStatus: case Kind::McAddr:
    case Kind::McMisc:
      return write_machine_check(s, value);
    case Kind::Pmc: case Kind::PerfEvtSel: case Kind::FixedCtr: case Kind::FixedCtrCtrl: case Kind::GlobalCtrl:
    case Kind::GlobalOvfCtrl: case Kind::AmdPerfCtl: case Kind::AmdPerfCtr:
      return write_pmu(s, value);
    case Kind::AmdReadsZero: return true;
    case Kind::VmHsavePa:  // page-aligned and within MAXPHYADDR, or #GP (KVM's page_address_valid)
      if (value & (physical_reserved() | 0xfff)) return false;
      vm_hsave_pa_ = value;
      return true;
  }
  return false;
}

}  // namespace topolab
