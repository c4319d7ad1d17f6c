// SPDX-License-Identifier: GPL-2.0-or-later
// Which MSRs a CPU has, as far as CPUID announces them: Intel SDM Vol. 4,
// table 2-2 ("IA-32 Architectural MSRs"), whose comment column gives each
// MSR's "If CPUID.xxH:reg[bit] = 1" condition, and AMD APM Vol. 2 appendix A
// for the AMD-only ones. RDMSR and WRMSR of an MSR that does not exist raise
// #GP(0); RDTSCP without IA32_TSC_AUX is #UD (the vCPU asks for the MSR).
//
// Pure data: a table of MSR ranges, each with the CPUID bits any one of
// which announces it, and a lookup evaluated once against a CpuidModel.
// MSRs not in the table (IA32_APIC_BASE, IA32_MISC_ENABLE: architectural
// since the P6 / Pentium 4 with no CPUID bit) are not decided here, nor are
// those whose existence is a count or a vendor rather than a bit (the PMU
// counters of CPUID leaf 0AH, AMD's K7 counters, the MTRRs and machine-check
// banks beyond what IA32_MTRRCAP / IA32_MCG_CAP count): model/msr_file.h
// decides those.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/cpuid_regs.h"

namespace topolab {

// One CPUID bit, as the SDM writes it: CPUID.(EAX=leaf,ECX=subleaf):reg[bit].
struct CpuidBit {
  uint32_t leaf = 0;
  uint32_t subleaf = 0;
  char reg = 0;  // 'a', 'b', 'c' or 'd'; 0: unused slot
  uint8_t bit = 0;
  const char* name = nullptr;  // the feature's SDM name
};

struct MsrRequirement {
  uint32_t first, last;  // inclusive range of MSR numbers
  const char* name;
  std::array<CpuidBit, 6> any_of;  // the MSR exists when any one is set
};

// Every MSR whose existence a CPUID bit announces, ordered by number.
std::span<const MsrRequirement> msr_requirements();
// The row covering `msr`, or nullptr when no CPUID bit announces it.
const MsrRequirement* msr_requirement(uint32_t msr);

using CpuidQuery = std::function<CpuidRegs(uint32_t leaf, uint32_t subleaf)>;

// Whether `bit` is set. A leaf above the maximum basic (CPUID.0:EAX) or
// extended (CPUID.80000000H:EAX) leaf does not exist: its bits are clear,
// not those of the highest basic leaf the CPU returns instead.
bool cpuid_bit_set(const CpuidQuery& query, const CpuidBit& bit);

// The table evaluated once for one CPU.
class MsrAvailability {
 public:
  explicit MsrAvailability(const CpuidQuery& query);
  // False only for an MSR of the table that no CPUID bit announces.
  bool announced(uint32_t msr) const;

 private:
  std::vector<bool> announced_;  // one per msr_requirements() row
};

}  // namespace topolab
