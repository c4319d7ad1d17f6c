// The named bit fields of the CPUID leaves topolab models, for reading
// leaves back (topolab cpuid --diff). The meanings are the SDM's (and the
// APM's for AMD leaves), spelled as model/cpuid.cc's checked field helper
// spells the fields it writes; single-bit features carry their -cpu flag
// names (feature_flags()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/cpuid.h"

namespace topolab {

// The fields of one register of one leaf, widest first; leaf 0x1F reads as
// 0xB, and 0x8000001D as leaf 4.
std::vector<CpuidField> cpuid_fields_of(uint32_t leaf, char reg);

// EAX, EBX, ECX or EDX of `r`, by the letter CpuidField names them with.
uint32_t register_value(const CpuidRegs& r, char reg);

// The value of `field` in `reg`.
uint32_t field_value(uint32_t reg, const CpuidField& field);

}  // namespace topolab
