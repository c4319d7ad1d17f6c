// SPDX-License-Identifier: GPL-2.0-or-later
#include "model/msr_features.h"

#include <algorithm>

#include "model/cpuid_regs.h"

namespace topolab {

namespace {

constexpr CpuidBit kTsc{0x1, 0, 'd', 4, "TSC"};
constexpr CpuidBit kMtrr{0x1, 0, 'd', 12, "MTRR"};
constexpr CpuidBit kMca{0x1, 0, 'd', 14, "MCA"};
constexpr CpuidBit kPdcm{0x1, 0, 'c', 15, "PDCM"};
constexpr CpuidBit kTscAdjust{0x7, 0, 'b', 1, "IA32_TSC_ADJUST"};
constexpr CpuidBit kIbrsIbpb{0x7, 0, 'd', 26, "IBRS/IBPB"};
constexpr CpuidBit kStibp{0x7, 0, 'd', 27, "STIBP"};
constexpr CpuidBit kArchCapabilities{0x7, 0, 'd', 29, "IA32_ARCH_CAPABILITIES"};
constexpr CpuidBit kSsbd{0x7, 0, 'd', 31, "SSBD"};
constexpr CpuidBit kPerfCtrExtCore{0x80000001, 0, 'c', 23, "PerfCtrExtCore"};
// AMD's speculation controls, CPUID 8000_0008h:EBX (AMD's "Indirect Branch
// Control Extension" white paper; APM Vol. 3 appendix E).
constexpr CpuidBit kAmdIbpb{0x80000008, 0, 'b', 12, "IBPB"};
constexpr CpuidBit kAmdIbrs{0x80000008, 0, 'b', 14, "IBRS"};
constexpr CpuidBit kAmdStibp{0x80000008, 0, 'b', 15, "STIBP"};
constexpr CpuidBit kAmdSsbd{0x80000008, 0, 'b', 24, "SSBD"};
constexpr CpuidBit kSep{0x1, 0, 'd', 11, "SEP"};
constexpr CpuidBit kPat{0x1, 0, 'd', 16, "PAT"};
constexpr CpuidBit kX2apic{0x1, 0, 'c', 21, "x2APIC"};
constexpr CpuidBit kTscDeadline{0x1, 0, 'c', 24, "TSC-Deadline"};
constexpr CpuidBit kRdpid{0x7, 0, 'c', 22, "RDPID"};
constexpr CpuidBit kSyscall{0x80000001, 0, 'd', 11, "SYSCALL/SYSRET"};
constexpr CpuidBit kNx{0x80000001, 0, 'd', 20, "Execute Disable"};
constexpr CpuidBit kRdtscp{0x80000001, 0, 'd', 27, "RDTSCP"};
constexpr CpuidBit kLm{0x80000001, 0, 'd', 29, "Intel 64 (LM)"};

// SDM Vol. 4 table 2-2 unless noted.
constexpr MsrRequirement kRequirements[] = {
    {0x10, 0x10, "IA32_TIME_STAMP_COUNTER", {kTsc}},
    {0x3b, 0x3b, "IA32_TSC_ADJUST", {kTscAdjust}},
    {0x48, 0x48, "IA32_SPEC_CTRL", {kIbrsIbpb, kStibp, kSsbd, kAmdIbrs, kAmdStibp, kAmdSsbd}},
    {0x49, 0x49, "IA32_PRED_CMD", {kIbrsIbpb, kAmdIbpb}},
    {0xfe, 0xfe, "IA32_MTRRCAP", {kMtrr}},
    {0x10a, 0x10a, "IA32_ARCH_CAPABILITIES", {kArchCapabilities}},
    {0x174, 0x176, "IA32_SYSENTER_CS/ESP/EIP", {kSep}},
    {0x179, 0x17b, "IA32_MCG_CAP/STATUS/CTL", {kMca}},
    // The variable ranges, as many pairs as IA32_MTRRCAP.VCNT counts, sit
    // below the first fixed range.
    {0x200, 0x24f, "IA32_MTRR_PHYSBASEn/PHYSMASKn", {kMtrr}},
    {0x250, 0x250, "IA32_MTRR_FIX64K_00000", {kMtrr}},
    {0x258, 0x259, "IA32_MTRR_FIX16K_80000/A0000", {kMtrr}},
    {0x268, 0x26f, "IA32_MTRR_FIX4K_C0000..F8000", {kMtrr}},
    {0x277, 0x277, "IA32_PAT", {kPat}},
    {0x2ff, 0x2ff, "IA32_MTRR_DEF_TYPE", {kMtrr}},
    {0x345, 0x345, "IA32_PERF_CAPABILITIES", {kPdcm}},
    // Up to 32 banks (0x480 starts the VMX MSRs); IA32_MCG_CAP counts them.
    {0x400, 0x47f, "IA32_MCi_CTL/STATUS/ADDR/MISC", {kMca}},
    {0x6e0, 0x6e0, "IA32_TSC_DEADLINE", {kTscDeadline}},
    // The x2APIC range also needs x2APIC mode; the local APIC decides that.
    {0x800, 0x8ff, "x2APIC registers", {kX2apic}},
    // EFER: Intel "CPUID.80000001H:EDX.[20] || [29]"; AMD has it with SYSCALL.
    {0xc0000080, 0xc0000080, "IA32_EFER", {kSyscall, kNx, kLm}},
    // STAR: Intel with LM, AMD with SYSCALL (APM Vol. 2 6.1.1).
    {0xc0000081, 0xc0000081, "IA32_STAR", {kSyscall, kLm}},
    // LSTAR, CSTAR (AMD's compatibility-mode target), FMASK.
    {0xc0000082, 0xc0000084, "IA32_LSTAR/CSTAR/FMASK", {kLm}},
    {0xc0000100, 0xc0000102, "IA32_FS_BASE/GS_BASE/KERNEL_GS_BASE", {kLm}},
    {0xc0000103, 0xc0000103, "IA32_TSC_AUX", {kRdtscp, kRdpid}},
    // AMD's six core counters (APM Vol. 2 13.2.1); the K7 four at
    // C001_0000h..7 exist on every AMD CPU (model/msr_file.h).
    {0xc0010200, 0xc001020b, "PERF_CTL0-5/PERF_CTR0-5", {kPerfCtrExtCore}},
};

}  // namespace

std::span<const MsrRequirement> msr_requirements() { return kRequirements; }

const MsrRequirement* msr_requirement(uint32_t msr) {
  for (const MsrRequirement& r : kRequirements)
    if (msr >= r.first && msr <= r.last) return &r;
  return nullptr;
}

bool cpuid_bit_set(const CpuidQuery& query, const CpuidBit& bit) {
  if (!bit.reg) return false;
  const uint32_t range_base = bit.leaf & 0x80000000u;
  if (bit.leaf > query(range_base, 0).eax) return false;
  return (register_value(query(bit.leaf, bit.subleaf), bit.reg) >> bit.bit) & 1;
}

MsrAvailability::MsrAvailability(const CpuidQuery& query) {
  for (const MsrRequirement& r : kRequirements)
    announced_.push_back(std::any_of(r.any_of.begin(), r.any_of.end(),
                                     [&](const CpuidBit& bit) { return cpuid_bit_set(query, bit); }));
}

bool MsrAvailability::announced(uint32_t msr) const {
  const MsrRequirement* r = msr_requirement(msr);
  return !r || announced_[static_cast<size_t>(r - kRequirements)];
}

}  // namespace topolab
