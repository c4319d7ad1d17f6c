#include "model/msr_features.h"

#include <algorithm>

#include "model/cpuid_regs.h"

namespace topolab {

namespace {

constexpr CpuidBit kTsc{0x1, 0, 'd', 4, "TSC"};
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
    {0x174, 0x176, "IA32_SYSENTER_CS/ESP/EIP", {kSep}},
    {0x277, 0x277, "IA32_PAT", {kPat}},
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
